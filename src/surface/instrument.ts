import type { LeadershipError } from '../core/leadership-error';
import type { LeadershipEvent } from '../core/leadership-event';
import type { LeaderState } from './leader-state';
import { processNow } from '../core/monotonic-scheduler';
import { argumentError } from '../core/argument-check';

/** What an instrument records of one subscription: each value it emits, each call's answer or failure, then its end. */
export interface InstrumentRecording<T> {
  /** The subscription emitted `value`. */
  record(value: T): void;
  /**
   * A call to the database answered (an attempt or a renewal of a candidate, a read of a
   * watch), whether or not what it found changed (`record` follows if it did).
   */
  answered?(): void;
  /** A call failed with an error that can heal: the stream goes on (a candidate also emits it as an `error` event). */
  failed?(error: LeadershipError): void;
  /** The stream ends with this error (one that cannot heal); `end` follows. */
  error?(error: unknown): void;
  /** The subscription ended (unsubscribed, or the stream ended): stop reporting it. */
  end(): void;
}

/** A candidate as an instrument is told of it: its slot, its holder and its timing. */
export interface InstrumentedCandidate {
  /** Its election. */
  readonly slot: number;
  /** Who it is. */
  readonly holder: string;
  /** Its config's `renewEvery`, in ms. */
  readonly renewEvery: number;
  /** Its config's `expiresAfter`, in ms. */
  readonly expiresAfter: number;
  /** Its config's `retryEvery`, in ms. */
  readonly retryEvery: number;
  /**
   * Its clock, which its events' `expiresAt` are on: its scheduler's `now()`, by default
   * monotonic (a wall clock that steps does not move it).
   * @default the default scheduler's clock
   */
  readonly now?: () => number;
}

/** The default scheduler's clock (see `monotonicScheduler`), for a candidate that came without its own. */
export function candidateClock(candidate: InstrumentedCandidate): () => number {
  return candidate.now ?? processNow;
}

/** What an instrument of `observeLeadership` records: the events a candidate emits, and how long its calls took. */
export interface CandidateRecording extends InstrumentRecording<LeadershipEvent> {
  /**
   * A call of the candidate's answered: a renewal, from sending it to its answer, in seconds
   * on the candidate's clock, unrounded (a renewal of a SQLite file takes microseconds).
   */
  timed?(operation: 'renewal', seconds: number): void;
}

/**
 * Records what candidates emit, for the `instrument` option of `observeLeadership`: told of
 * each subscription's slot and holder when it starts, so that a follower that has emitted
 * nothing yet is reported too. `leadershipMetrics` of `observe-leadership/metrics` is one,
 * through OpenTelemetry; this entry never loads OpenTelemetry itself.
 */
export interface LeadershipInstrument {
  /**
   * Which stream it records: `observeLeadership`'s. The library's instruments say so, and
   * either function refuses the other's; your own may leave it out.
   */
  readonly for?: 'observeLeadership';
  /** A subscription made `candidate`: what to tell of it. */
  begin(candidate: InstrumentedCandidate): CandidateRecording;
}

/** A watch as an instrument of `observeLeader` is told of it. */
export interface InstrumentedWatch {
  /** The election it watches. */
  readonly slot: number;
  /** Its config's `pollEvery`, in ms: a healthy watch reads at least that often. */
  readonly pollEvery: number;
  /** Its clock: its scheduler's `now()`, by default monotonic. */
  readonly now: () => number;
}

/** What an instrument of `observeLeader` records: the states it emits, and each read's answer or failure. */
export type LeaderRecording = InstrumentRecording<LeaderState>;

/** The same for the `instrument` option of `observeLeader` (`leaderMetrics` and `leaderHealth` are two). */
export interface LeaderInstrument {
  /** Which stream it records: `observeLeader`'s (see {@link LeadershipInstrument.for}). */
  readonly for?: 'observeLeader';
  /** A subscription watches `watch.slot`: what to tell of it. */
  begin(watch: InstrumentedWatch): LeaderRecording;
}

const instrumentsOf = {
  observeLeadership: 'leadershipHealth() or leadershipMetrics()',
  observeLeader: 'leaderHealth() or leaderMetrics()',
} as const;

/**
 * Checks the `instrument` option of `stream`: an object with a `begin` method, or a list of
 * them, none made for the other stream (whose events it would misread).
 */
export function expectInstrument(value: unknown, stream: keyof typeof instrumentsOf): void {
  const each = Array.isArray(value) ? value : value === undefined ? [] : [value];
  if (each.length === 0 && value !== undefined)
    throw argumentError(TypeError, 'instrument', 'an instrument or a non-empty list of them', value);
  for (const instrument of each) {
    if (typeof (instrument as { begin?: unknown } | null)?.begin !== 'function') {
      throw argumentError(TypeError, 'instrument', `an instrument with a begin method (${instrumentsOf[stream]}, say)`, value);
    }
    const made = (instrument as { for?: unknown }).for;
    if (made !== undefined && made !== stream) {
      const other = typeof made === 'string' && made in instrumentsOf ? ` (${instrumentsOf[made as keyof typeof instrumentsOf]})` : '';
      throw new TypeError(
        `Expected \`instrument\` to be an instrument for ${stream} (${instrumentsOf[stream]}), got one for ${String(made)}${other}`,
      );
    }
  }
}

/** Every recording a subscription began, as one: each call goes to each that has the method. */
type AnyRecording<T> = InstrumentRecording<T> & Partial<Omit<CandidateRecording, keyof InstrumentRecording<LeadershipEvent>>>;

/** Begins a recording with every instrument given (one, or a list), as one. */
export function beginAll<C, T>(
  given: { begin(subject: C): AnyRecording<T> } | ReadonlyArray<{ begin(subject: C): AnyRecording<T> }> | undefined,
  subject: C,
): Required<AnyRecording<T>> | undefined {
  if (given === undefined) return undefined;
  const recordings = (Array.isArray(given) ? given : [given]).map((instrument) => instrument.begin(subject));
  return {
    record: (value) => recordings.forEach((recording) => recording.record(value)),
    error: (error) => recordings.forEach((recording) => recording.error?.(error)),
    end: () => recordings.forEach((recording) => recording.end()),
    answered: () => recordings.forEach((recording) => recording.answered?.()),
    failed: (error) => recordings.forEach((recording) => recording.failed?.(error)),
    timed: (operation, seconds) => recordings.forEach((recording) => recording.timed?.(operation, seconds)),
  };
}

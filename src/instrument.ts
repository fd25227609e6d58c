import type { LeadershipEvent } from './leadership-event';
import type { LeaderState } from './observe-leader';
import { performance } from 'node:perf_hooks';
import { argumentError } from './argument-check';

/** What an instrument records of one subscription: each value it emits, then its end. */
export interface InstrumentRecording<T> {
  /** The subscription emitted `value`. */
  record(value: T): void;
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
  return candidate.now ?? (() => performance.timeOrigin + performance.now());
}

/**
 * Records what candidates emit, for the `instrument` option of `observeLeadership`: told of
 * each subscription's slot and holder when it starts, so that a follower that has emitted
 * nothing yet is reported too. `leadershipMetrics` of `observe-leadership/metrics` is one,
 * through OpenTelemetry; this entry never loads OpenTelemetry itself.
 */
export interface LeadershipInstrument {
  /** A subscription made `candidate`: what to tell of it. */
  begin(candidate: InstrumentedCandidate): InstrumentRecording<LeadershipEvent>;
}

/** The same for the `instrument` option of `observeLeader` (`leaderMetrics` is one). */
export interface LeaderInstrument {
  /** A subscription watches `watch.slot`: what to tell of it. */
  begin(watch: { readonly slot: number }): InstrumentRecording<LeaderState>;
}

/** Checks an `instrument` option: an object with a `begin` method, or a list of them. */
export function expectInstrument(value: unknown): void {
  const each = Array.isArray(value) ? value : value === undefined ? [] : [value];
  if (each.length === 0 && value !== undefined) throw argumentError(TypeError, 'instrument', 'an instrument or a non-empty list of them', value);
  for (const instrument of each) {
    if (typeof (instrument as { begin?: unknown } | null)?.begin !== 'function') {
      throw argumentError(TypeError, 'instrument', 'an instrument with a begin method (leadershipMetrics() of observe-leadership/metrics, say)', value);
    }
  }
}

/** Begins a recording with every instrument given (one, or a list), as one. */
export function beginAll<C, T>(given: { begin(subject: C): InstrumentRecording<T> } | ReadonlyArray<{ begin(subject: C): InstrumentRecording<T> }> | undefined, subject: C): InstrumentRecording<T> | undefined {
  if (given === undefined) return undefined;
  const recordings = (Array.isArray(given) ? given : [given]).map((instrument) => instrument.begin(subject));
  return {
    record: (value) => recordings.forEach((recording) => recording.record(value)),
    error: (error) => recordings.forEach((recording) => recording.error?.(error)),
    end: () => recordings.forEach((recording) => recording.end()),
  };
}

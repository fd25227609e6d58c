import { expectConfig, expectInteger, MAX_DELAY } from '../core/argument-check';
import { errorText } from '../core/error-text';
import { candidateClock } from './instrument';
import type { InstrumentedCandidate, InstrumentedWatch, InstrumentRecording, LeaderInstrument, LeadershipInstrument } from './instrument';
import type { LeadershipEvent } from '../core/leadership-event';
import type { LeaderState } from './leader-state';

/** Options of {@link leadershipHealth}. */
export interface LeadershipHealthOptions {
  /**
   * Ms of database errors in a row after which a candidate counts as failing: errors
   * shorter than that (a restart of the server, a lock) are what campaigns ride out.
   * @default 30_000
   */
  failingAfter?: number;
}

/** One candidate's health, as {@link LeadershipHealth.check} reports it. */
export interface CandidateHealth {
  /** Its election. */
  readonly slot: number;
  /** Who it is. */
  readonly holder: string;
  /**
   * `leading`: it leads and its lease, renewed in time, still stands; `following`: it
   * campaigns and reaches the database; `failing`: its calls have failed for longer than
   * `failingAfter`; `stale`: it believes it leads past its lease's end (its process or
   * event loop stalled); `ended`: its stream ended with an error that cannot heal.
   */
  readonly status: 'leading' | 'following' | 'failing' | 'stale' | 'ended';
  /** `true` for `leading` and `following`. */
  readonly healthy: boolean;
  /** The error behind `failing` or `ended`, as `CODE: message`. */
  readonly reason?: string;
}

/** What {@link LeadershipHealth.check} answers: healthy when every candidate is. */
export interface HealthReport {
  /** Whether every candidate is healthy (`true` when there is none). */
  readonly healthy: boolean;
  /** Whether one of the candidates leads (for a readiness probe that routes to the leader). */
  readonly leading: boolean;
  /** Each candidate subscribed now, and each whose stream ended with an error. */
  readonly candidates: readonly CandidateHealth[];
}

/** A health check fed by `observeLeadership`'s `instrument` option; see {@link leadershipHealth}. */
export interface LeadershipHealth extends LeadershipInstrument {
  readonly for: 'observeLeadership';
  /**
   * The health of every candidate subscribed now (and of those whose stream ended in error),
   * at `now` on the candidates' clock (their scheduler's; by default each one's own, read
   * now: a wall clock that steps changes nothing).
   */
  check(now?: number): HealthReport;
}

/** A candidate as its check keeps it: what every check keeps, and the end of the lease it believes it holds. */
interface TrackedCandidate extends Tracked {
  readonly holder: string;
  expiresAt?: number;
}

/**
 * A health check for readiness and liveness probes: pass it as `instrument` to the
 * candidates it should watch, and call `check()` from your `/healthz` handler. A candidate
 * is healthy while it follows normally or leads with a lease that still stands; it is not
 * when its database calls have failed, with no answer between, for longer than
 * `failingAfter`, when it believes it leads past its lease (stalled), or when its stream
 * ended with an error. `check()` reads what the stream said; it never touches the database.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { leadershipHealth, observeLeadership } from 'observe-leadership';
 *
 * const health = leadershipHealth();
 * observeLeadership(db, { instrument: health }).subscribe();
 * createServer((request, response) => {
 *   const report = health.check();
 *   response.writeHead(report.healthy ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(report));
 * }).listen(8080);
 * ```
 */
export function leadershipHealth(options: LeadershipHealthOptions = {}): LeadershipHealth {
  const candidates = new HealthCheck<InstrumentedCandidate, TrackedCandidate, LeadershipEvent>(
    options,
    (subject) => ({ slot: subject.slot, holder: subject.holder, now: candidateClock(subject) }),
    (candidate, event) => {
      if (event.type !== 'error') candidate.expiresAt = event.type === 'lost' ? undefined : event.expiresAt;
    },
  );
  const check = (at?: number): HealthReport => {
    const reports = candidates.each(at, ({ slot, holder, expiresAt }, now, failure): CandidateHealth => {
      if (failure !== undefined) return { slot, holder, ...failure, healthy: false };
      if (expiresAt === undefined) return { slot, holder, status: 'following', healthy: true };
      if (now <= expiresAt) return { slot, holder, status: 'leading', healthy: true };
      return { slot, holder, status: 'stale', healthy: false, reason: `its lease ended ${now - expiresAt} ms ago` };
    });
    return { healthy: reports.every((c) => c.healthy), leading: reports.some((c) => c.status === 'leading'), candidates: reports };
  };
  return { for: 'observeLeadership', begin: (candidate) => candidates.begin(candidate), check };
}

/** Options of {@link leaderHealth}. */
export interface LeaderHealthOptions {
  /**
   * Ms of failed reads in a row after which a watch counts as failing: shorter streaks (a
   * restart of the server, a lock) are what watches ride out.
   * @default 30_000
   */
  failingAfter?: number;
}

/** One watch's health, as {@link LeaderHealth.check} reports it. */
export interface WatchHealth {
  /** The election it watches. */
  readonly slot: number;
  /**
   * `watching`: its reads succeed; `failing`: its reads have failed for longer than
   * `failingAfter`; `ended`: its stream ended with an error that cannot heal.
   */
  readonly status: 'watching' | 'failing' | 'ended';
  /** `true` for `watching`. */
  readonly healthy: boolean;
  /** The error behind `failing` or `ended`, as `CODE: message`. */
  readonly reason?: string;
  /** Who leads, as last read; `null` when nobody does, or before the first read. */
  readonly holder: string | null;
  /** The leader's term, as last read; `null` when nobody leads. */
  readonly term: number | null;
  /**
   * Since when (ms on the watch's clock: Unix ms by default, on time that cannot jump) it
   * has seen this leader and term, or nobody; `null` before its first read answered.
   */
  readonly since: number | null;
}

/** What {@link LeaderHealth.check} answers: healthy when every watch is. */
export interface LeaderHealthReport {
  /** Whether every watch is healthy (`true` when there is none). */
  readonly healthy: boolean;
  /** Whether every watched slot has a leader, as last read (`false` when there is no watch). */
  readonly led: boolean;
  /** Each watch subscribed now, and each whose stream ended with an error. */
  readonly watches: readonly WatchHealth[];
}

/** A health check fed by `observeLeader`'s `instrument` option; see {@link leaderHealth}. */
export interface LeaderHealth extends LeaderInstrument {
  readonly for: 'observeLeader';
  /** The health of every watch subscribed now (and of those that ended in error), at `now` on the watches' clock. */
  check(now?: number): LeaderHealthReport;
}

/** A watch as its check keeps it: what every check keeps, and who leads as it last read, since when. */
interface TrackedWatch extends Tracked {
  holder: string | null;
  term: number | null;
  since: number | null;
}

/**
 * A health check for a process that follows without campaigning (it routes work to the
 * leader, say): pass it as `instrument` to `observeLeader`, and call `check()` from your
 * `/healthz` handler. A watch is healthy while its reads succeed; it is not when they have
 * failed, with no answer between, for longer than `failingAfter`, or when its stream ended
 * with an error: the same rule as {@link leadershipHealth}'s. The report also says who
 * leads each watched slot and since when, as last read. `check()` reads what the streams
 * said; it never touches the database. Made for `observeLeader`: `observeLeadership`
 * refuses it (use {@link leadershipHealth} there).
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { leaderHealth, observeLeader } from 'observe-leadership';
 *
 * const health = leaderHealth();
 * observeLeader(db, { instrument: health }).subscribe();
 * createServer((request, response) => {
 *   const report = health.check();
 *   response.writeHead(report.healthy ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(report));
 * }).listen(8080);
 * ```
 */
export function leaderHealth(options: LeaderHealthOptions = {}): LeaderHealth {
  const watches = new HealthCheck<InstrumentedWatch, TrackedWatch, LeaderState>(
    options,
    ({ slot, now }) => ({ slot, now, holder: null, term: null, since: null }),
    (watch, state) => {
      if (state.holder !== watch.holder || state.term !== watch.term) watch.since = watch.now();
      watch.holder = state.holder;
      watch.term = state.term;
    },
    // The first read: nobody leads, until `record` says who.
    (watch) => void (watch.since ??= watch.now()),
  );
  const check = (at?: number): LeaderHealthReport => {
    const reports = watches.each(at, ({ slot, holder, term, since }, _, failure): WatchHealth => {
      const seen = { holder, term, since };
      return failure === undefined ? { slot, status: 'watching', healthy: true, ...seen } : { slot, ...failure, healthy: false, ...seen };
    });
    return {
      healthy: reports.every((w) => w.healthy),
      led: reports.length > 0 && reports.every((w) => w.holder !== null),
      watches: reports,
    };
  };
  return { for: 'observeLeader', begin: (watch) => watches.begin(watch), check };
}

/** What a check keeps of every subscription it was given, whatever it watches. */
interface Tracked {
  readonly slot: number;
  /** The subscription's clock, on which every time here is read. */
  readonly now: () => number;
  /** Since when its calls have failed with no answer between; unset once one answers. */
  failingSince?: number;
  /** The last of those failures, as `CODE: message`. */
  lastError?: string;
  /** The error its stream ended with, as `CODE: message`. */
  ended?: string;
}

/** Why a subscription is unhealthy, by the one rule both checks share (see `HealthCheck.failureOf`). */
interface Failure {
  readonly status: 'failing' | 'ended';
  readonly reason: string;
}

/**
 * What both checks are made of: the subscriptions given to it, kept as `T` from when they
 * begin until they end (or for good, once their stream ended with an error), and the one
 * rule that says they fail. What sets a candidate's check apart from a watch's is only what
 * `keep` and `record` keep of it, and how `check()` reports it.
 */
class HealthCheck<Subject, T extends Tracked, Value> {
  private readonly failingAfter: number;
  private readonly tracked = new Set<T>();

  constructor(
    options: { failingAfter?: number },
    private readonly keep: (subject: Subject) => T,
    private readonly recordValue: (tracked: T, value: Value) => void,
    private readonly onAnswer: (tracked: T) => void = () => undefined,
  ) {
    expectConfig(options, ['failingAfter']);
    const { failingAfter = 30_000 } = options;
    this.failingAfter = expectInteger('failingAfter', failingAfter, 1, MAX_DELAY);
  }

  begin(subject: Subject): InstrumentRecording<Value> & Required<Pick<InstrumentRecording<Value>, 'answered' | 'failed'>> {
    const tracked = this.keep(subject);
    this.tracked.add(tracked);
    return {
      record: (value) => this.recordValue(tracked, value),
      answered: () => {
        tracked.failingSince = undefined;
        this.onAnswer(tracked);
      },
      failed: (error) => {
        tracked.failingSince ??= tracked.now();
        tracked.lastError = errorText(error);
      },
      error: (error) => void (tracked.ended = errorText(error)),
      end: () => {
        if (tracked.ended === undefined) this.tracked.delete(tracked);
      },
    };
  }

  /** Each subscription reported at `at` (each on its own clock when not given), with its failure if it has one. */
  each<R>(at: number | undefined, report: (tracked: T, now: number, failure: Failure | undefined) => R): R[] {
    return [...this.tracked].map((tracked) => {
      const now = at ?? tracked.now();
      return report(tracked, now, this.failureOf(tracked, now));
    });
  }

  /**
   * Ended once its stream ended with an error; failing once its calls have failed, with no
   * answer between, for `failingAfter` or longer (shorter streaks, a server's restart or a
   * lock, are what streams ride out).
   */
  private failureOf({ ended, failingSince, lastError }: T, now: number): Failure | undefined {
    if (ended !== undefined) return { status: 'ended', reason: ended };
    if (failingSince !== undefined && lastError !== undefined && now - failingSince >= this.failingAfter) {
      return { status: 'failing', reason: lastError };
    }
    return undefined;
  }
}

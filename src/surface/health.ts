import { expectConfig, expectInteger, MAX_DELAY } from '../core/argument-check';
import { candidateClock } from './instrument';
import type { InstrumentRecording, LeaderInstrument, LeaderRecording, LeadershipInstrument } from './instrument';
import type { LeadershipEvent } from '../core/leadership-event';

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

interface Tracked {
  readonly slot: number;
  readonly holder: string;
  /** Longest ms between two calls of a healthy campaign: a quiet gap that long ends an error streak. */
  readonly quiet: number;
  /** The candidate's clock, on which every time here is read. */
  readonly now: () => number;
  expiresAt?: number;
  errorsSince?: number;
  lastError?: { at: number; reason: string };
  ended?: string;
}

/**
 * A health check for readiness and liveness probes: pass it as `instrument` to the
 * candidates it should watch, and call `check()` from your `/healthz` handler. A candidate
 * is healthy while it follows normally or leads with a lease that still stands; it is not
 * when its database calls have failed in a row for longer than `failingAfter`, when it
 * believes it leads past its lease (stalled), or when its stream ended with an error.
 * `check()` reads what the events said; it never touches the database.
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
  const failingAfter = failingAfterOf(options);
  const tracked = new Set<Tracked>();

  const begin: LeadershipHealth['begin'] = (subject): InstrumentRecording<LeadershipEvent> => {
    const { slot, holder, renewEvery, retryEvery } = subject;
    const candidate: Tracked = { slot, holder, quiet: 2 * Math.max(renewEvery, retryEvery), now: candidateClock(subject) };
    tracked.add(candidate);
    return {
      record: (event) => {
        const now = candidate.now();
        if (event.type === 'error') {
          // A streak goes on while errors come closer together than a healthy campaign's calls.
          const inStreak = candidate.lastError !== undefined && now - candidate.lastError.at <= candidate.quiet;
          if (!inStreak) candidate.errorsSince = now;
          candidate.lastError = { at: now, reason: reasonOf(event.error) };
          return;
        }
        candidate.errorsSince = undefined; // the database answered
        candidate.expiresAt = event.type === 'lost' ? undefined : event.expiresAt;
      },
      error: (error) => void (candidate.ended = reasonOf(error)),
      end: () => {
        if (candidate.ended === undefined) tracked.delete(candidate);
      },
    };
  };

  const check = (at?: number): HealthReport => {
    const candidates = [...tracked].map((candidate): CandidateHealth => {
      const { slot, holder, expiresAt, errorsSince, lastError, ended } = candidate;
      const now = at ?? candidate.now();
      const of = (status: CandidateHealth['status'], healthy: boolean, reason?: string): CandidateHealth =>
        reason === undefined ? { slot, holder, status, healthy } : { slot, holder, status, healthy, reason };
      if (ended !== undefined) return of('ended', false, ended);
      const streak = errorsSince !== undefined && lastError !== undefined && now - lastError.at <= candidate.quiet;
      if (streak && now - errorsSince >= failingAfter) return of('failing', false, lastError.reason);
      if (expiresAt !== undefined)
        return now <= expiresAt ? of('leading', true) : of('stale', false, `its lease ended ${now - expiresAt} ms ago`);
      return of('following', true);
    });
    return { healthy: candidates.every((c) => c.healthy), leading: candidates.some((c) => c.status === 'leading'), candidates };
  };

  return { for: 'observeLeadership', begin, check };
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

interface TrackedWatch {
  readonly slot: number;
  readonly now: () => number;
  holder: string | null;
  term: number | null;
  since: number | null;
  failingSince?: number;
  lastError?: string;
  ended?: string;
}

/**
 * A health check for a process that follows without campaigning (it routes work to the
 * leader, say): pass it as `instrument` to `observeLeader`, and call `check()` from your
 * `/healthz` handler. A watch is healthy while its reads succeed; it is not when they have
 * failed in a row for longer than `failingAfter`, or when its stream ended with an error.
 * The report also says who leads each watched slot and since when, as last read. `check()`
 * reads what the streams said; it never touches the database. Made for `observeLeader`:
 * `observeLeadership` refuses it (use {@link leadershipHealth} there).
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
  const failingAfter = failingAfterOf(options);
  const tracked = new Set<TrackedWatch>();

  const begin: LeaderHealth['begin'] = ({ slot, now }): LeaderRecording => {
    const watch: TrackedWatch = { slot, now, holder: null, term: null, since: null };
    tracked.add(watch);
    return {
      answered: () => {
        watch.failingSince = undefined;
        watch.since ??= watch.now(); // the first read: nobody leads, until `record` says who
      },
      record: (state) => {
        if (state.holder !== watch.holder || state.term !== watch.term) watch.since = watch.now();
        watch.holder = state.holder;
        watch.term = state.term;
      },
      failed: (error) => {
        watch.failingSince ??= watch.now();
        watch.lastError = reasonOf(error);
      },
      error: (error) => void (watch.ended = reasonOf(error)),
      end: () => {
        if (watch.ended === undefined) tracked.delete(watch);
      },
    };
  };

  const check = (at?: number): LeaderHealthReport => {
    const watches = [...tracked].map((watch): WatchHealth => {
      const { slot, holder, term, since, failingSince, lastError, ended } = watch;
      const seen = { holder, term, since };
      if (ended !== undefined) return { slot, status: 'ended', healthy: false, reason: ended, ...seen };
      const now = at ?? watch.now();
      if (failingSince !== undefined && now - failingSince >= failingAfter)
        return { slot, status: 'failing', healthy: false, reason: lastError as string, ...seen };
      return { slot, status: 'watching', healthy: true, ...seen };
    });
    return { healthy: watches.every((w) => w.healthy), led: watches.length > 0 && watches.every((w) => w.holder !== null), watches };
  };

  return { for: 'observeLeader', begin, check };
}

/** The `failingAfter` of a health check's options, checked. */
function failingAfterOf(options: { failingAfter?: number }): number {
  expectConfig(options, ['failingAfter']);
  const { failingAfter = 30_000 } = options;
  return expectInteger('failingAfter', failingAfter, 1, MAX_DELAY);
}

/** An error as a report gives it: `CODE: message`. */
function reasonOf(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  return `${code ?? 'ERROR'}: ${message ?? String(error)}`;
}

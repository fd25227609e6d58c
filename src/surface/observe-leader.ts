import { leaseStoreOf } from '../store/given-database';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';
import { Observable, SchedulerLike } from 'rxjs';
import { expectConfig, expectInteger, expectScheduler, MAX_DELAY } from '../core/argument-check';
import { beginAll, expectInstrument, LeaderInstrument } from './instrument';
import type { LeaderState } from './leader-state';
import { monotonicScheduler } from '../core/monotonic-scheduler';
import type { LeaseReader } from '../store/lease-store';
import { LeaderWatch } from './leader-watch';

/** Options of `observeLeader`. */
export interface ObserveLeaderConfig {
  /**
   * Which election.
   * @default 0
   */
  slot?: number;
  /**
   * How often to read the slot when nothing signals a change, in ms. Acquisitions and
   * releases by this library are seen within milliseconds anyway; polling is what shows
   * renewals, and changes made by the original worker's statements.
   * @default 1_000
   */
  pollEvery?: number;
  /**
   * Where time is read (`scheduler.now()`) and timers are set.
   * @default asyncScheduler's timers on a monotonic clock: a wall clock that steps never
   * makes a lease look ended, nor a dead leader's look alive
   */
  scheduler?: SchedulerLike;
  /**
   * Records what this stream sees: `leaderHealth()` answers a follower's health check,
   * `leaderMetrics()` of `observe-leadership/metrics` reports it through OpenTelemetry.
   * An instrument made for `observeLeadership` is refused.
   * @default none
   */
  instrument?: LeaderInstrument | readonly LeaderInstrument[];
}

const knownOptions = ['slot', 'pollEvery', 'scheduler', 'instrument'];

/**
 * Watches who holds a slot, without campaigning: emits a `LeaderState` at once, then each
 * time it changes (a new leader or term, a renewal, the lease running out, a release).
 * For followers that route work to the leader, dashboards and health checks. It only
 * reads, so it works on a read-only connection and before any candidate has run (nobody
 * leads then). `db` is a better-sqlite3 `Database`, or a store such as
 * `postgresLeaseStore(pool)`, whose server's clock then says whether a lease still holds. Transient errors are skipped (the next read tries again); errors that
 * cannot heal end the stream with a `LeadershipError`.
 *
 * @example
 * ```ts
 * import Database from 'better-sqlite3';
 * import { observeLeader } from 'observe-leadership';
 *
 * const db = new Database('jobs.db', { readonly: true });
 * observeLeader(db).subscribe(({ holder, term }) =>
 *   console.log(holder === null ? 'nobody leads' : `${holder} leads, term ${term}`),
 * );
 * ```
 */
export function observeLeader(db: SqliteDatabaseLike | LeaseReader, config: ObserveLeaderConfig = {}): Observable<LeaderState> {
  const store = leaseStoreOf('db', db, 'reader');
  expectConfig(config, knownOptions);
  const { slot = 0, pollEvery = 1_000, scheduler = monotonicScheduler, instrument } = config;
  expectInteger('slot', slot, 0, Number.MAX_SAFE_INTEGER);
  expectInteger('pollEvery', pollEvery, 1, MAX_DELAY);
  expectScheduler('scheduler', scheduler);
  expectInstrument(instrument, 'observeLeader');

  return new Observable<LeaderState>((subscriber) => {
    const recording = beginAll(instrument, { slot, pollEvery, now: () => scheduler.now() });
    const watch = new LeaderWatch({ store, slot, pollEvery, scheduler, recording }, subscriber);
    watch.start();
    return () => watch.stop();
  });
}

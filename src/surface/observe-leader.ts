import { storeOrDatabase } from '../store/given-database';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';
import { Observable, SchedulerLike, Subscription } from 'rxjs';
import { expectConfig, expectInteger, expectScheduler, MAX_DELAY } from '../core/argument-check';
import { LeadershipError } from '../core/leadership-error';
import { beginAll, expectInstrument, LeaderInstrument } from './instrument';
import type { LeaderState } from './leader-state';
import { LeaseObservation } from '../campaign/lease-observation';
import { monotonicScheduler, readClocks } from '../core/monotonic-scheduler';
import { LockRetry } from '../campaign/lock-retry';
import { LeaseReader, LeaseView } from '../store/lease-store';
import { OneInFlight } from '../campaign/one-in-flight';
import { sqliteLeaseStore } from '../store/sqlite/sqlite-lease-store';
import { stands } from '../store/lease-check';

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
  const given = storeOrDatabase('db', db, 'reader');
  expectConfig(config, knownOptions);
  const { slot = 0, pollEvery = 1_000, scheduler = monotonicScheduler, instrument } = config;
  expectInteger('slot', slot, 0, Number.MAX_SAFE_INTEGER);
  expectInteger('pollEvery', pollEvery, 1, MAX_DELAY);
  expectScheduler('scheduler', scheduler);
  expectInstrument(instrument, 'observeLeader');

  return new Observable<LeaderState>((subscriber) => {
    const store = 'store' in given ? given.store : sqliteLeaseStore(given.database);
    const recording = beginAll(instrument, { slot, pollEvery, now: () => scheduler.now() });
    let timer: Subscription | undefined;
    let last: LeaderState | undefined;
    const observation = new LeaseObservation();
    const lockRetry = new LockRetry();
    // A look asked for while one is in flight runs once that one lands, in place of its answer.
    const flights = new OneInFlight((error) => subscriber.error(error));
    const look = (): void => {
      timer?.unsubscribe();
      flights.whenSettled(() =>
        flights.run(
          () => store.look(slot, readClocks(scheduler)),
          (view) => landed(() => seen(view)),
          (error) => landed(() => failed(error)),
        ),
      );
    };
    /** An answer is handled unless the stream ended, or a newer look is due (the answer may predate the change that asked for it). */
    const landed = (handle: () => void) => {
      if (!subscriber.closed && !flights.hasQueued) handle();
    };
    const seen = (view: LeaseView | undefined): void => {
      lockRetry.clear();
      recording?.answered();
      const expiresIn = view === undefined ? -1 : observation.remaining(view, scheduler.now());
      const state = stateOf(slot, view, expiresIn);
      if (last === undefined || !sameState(state, last)) {
        last = state;
        recording?.record(state);
        subscriber.next(state);
      }
      // A live lease ends when its time is up unless renewed: look again just after, if sooner.
      const untilExpiry = state.expiresAt === null ? pollEvery : expiresIn + 1;
      if (!subscriber.closed) timer = scheduler.schedule(look, Math.max(1, Math.min(pollEvery, untilExpiry)));
    };
    const failed = (error: unknown): void => {
      if (!(error instanceof LeadershipError && error.transient)) {
        recording?.error(error);
        return subscriber.error(error);
      }
      recording?.failed(error);
      // A lock met (the store never waits for one): a few ms later, for up to `pollEvery`.
      const step = lockRetry.stepAfter(error, scheduler.now(), pollEvery);
      timer = scheduler.schedule(look, step ?? pollEvery);
    };
    // A change reported by the store comes from inside another operation: look right after it.
    const unwatch = store.capabilities?.changes?.watch(
      () => {
        timer?.unsubscribe();
        timer = scheduler.schedule(look, 0);
      },
      { elections: true, renewals: true },
    );
    look();
    return () => {
      timer?.unsubscribe();
      unwatch?.();
      recording?.end();
    };
  });
}

function stateOf(slot: number, view: LeaseView | undefined, expiresIn: number): LeaderState {
  return view !== undefined && stands(expiresIn)
    ? { slot, holder: view.lease.holder, term: view.lease.term, expiresAt: view.lease.expiresAt }
    : { slot, holder: null, term: null, expiresAt: null };
}

function sameState(a: LeaderState, b: LeaderState): boolean {
  return a.holder === b.holder && a.term === b.term && a.expiresAt === b.expiresAt;
}

import type { Database } from 'better-sqlite3';
import { asyncScheduler, Observable, SchedulerLike, Subscription } from 'rxjs';
import { expectConfig, expectDatabase, expectInteger, expectScheduler, MAX_DELAY } from './argument-check';
import { LeadershipError } from './leadership-error';
import { LeaseRecord } from './store/lease-store';
import { sqliteLeaseStore } from './store/sqlite/sqlite-lease-store';

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
   * Where time is read (`scheduler.now()`, Unix ms) and timers are set.
   * @default asyncScheduler
   */
  scheduler?: SchedulerLike;
}

/** Who holds a slot, as an observer sees it at one moment. */
export interface LeaderState {
  readonly slot: number;
  /** The leader: the holder of a lease that has not expired; `null` when nobody leads. */
  readonly holder: string | null;
  /** The leader's term; `null` when nobody leads. */
  readonly term: number | null;
  /** When the leader's lease ends unless it renews (Unix ms); `null` when nobody leads. */
  readonly expiresAt: number | null;
}

const knownOptions = ['slot', 'pollEvery', 'scheduler'];

/**
 * Watches who holds a slot, without campaigning: emits a `LeaderState` at once, then each
 * time it changes (a new leader or term, a renewal, the lease running out, a release).
 * For followers that route work to the leader, dashboards and health checks. It only
 * reads, so it works on a read-only connection and before any candidate has run (nobody
 * leads then). Transient errors are skipped (the next read tries again); errors that
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
export function observeLeader(db: Database, config: ObserveLeaderConfig = {}): Observable<LeaderState> {
  expectDatabase('db', db);
  expectConfig(config, knownOptions);
  const { slot = 0, pollEvery = 1_000, scheduler = asyncScheduler } = config;
  expectInteger('slot', slot, 0, Number.MAX_SAFE_INTEGER);
  expectInteger('pollEvery', pollEvery, 1, MAX_DELAY);
  expectScheduler('scheduler', scheduler);

  return new Observable<LeaderState>((subscriber) => {
    const store = sqliteLeaseStore(db);
    let timer: Subscription | undefined;
    let last: LeaderState | undefined;
    const look = (): void => {
      timer?.unsubscribe();
      const now = Math.floor(scheduler.now());
      let record: LeaseRecord | undefined;
      try {
        record = store.read(slot);
      } catch (error) {
        if (!(error instanceof LeadershipError && error.transient)) return subscriber.error(error);
        timer = scheduler.schedule(look, pollEvery);
        return;
      }
      const state = stateAt(slot, record, now);
      if (last === undefined || !sameState(state, last)) {
        last = state;
        subscriber.next(state);
      }
      // A live lease ends at `expiresAt` unless renewed: look again just after, if sooner.
      const untilExpiry = state.expiresAt === null ? pollEvery : state.expiresAt + 1 - now;
      if (!subscriber.closed) timer = scheduler.schedule(look, Math.max(1, Math.min(pollEvery, untilExpiry)));
    };
    // A change reported by the store comes from inside another operation: look right after it.
    const unwatch = store.watch(() => {
      timer?.unsubscribe();
      timer = scheduler.schedule(look, 0);
    });
    look();
    return () => {
      timer?.unsubscribe();
      unwatch();
    };
  });
}

function stateAt(slot: number, record: LeaseRecord | undefined, now: number): LeaderState {
  const live = record !== undefined && typeof record.expiresAt === 'number' && record.expiresAt >= now;
  return live
    ? { slot, holder: record.holder, term: record.term, expiresAt: record.expiresAt }
    : { slot, holder: null, term: null, expiresAt: null };
}

function sameState(a: LeaderState, b: LeaderState): boolean {
  return a.holder === b.holder && a.term === b.term && a.expiresAt === b.expiresAt;
}


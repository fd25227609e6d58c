import { leaseStoreOf } from '../store/given-database';
import { SchedulerLike } from 'rxjs';
import { monotonicScheduler, readClocks } from '../core/monotonic-scheduler';
import { argumentError } from '../core/argument-check';
import { expectLease } from './leadership-config';
import { Lease } from '../core/leadership-event';
import { Fencing, FencingStore } from '../store/lease-store';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';

/**
 * Runs `work` only if `lease` still holds, and commits its writes together with that proof.
 *
 * `work` runs inside one `BEGIN IMMEDIATE` transaction that first checks that the slot is
 * held by `lease.holder` for `lease.term` and has not expired (read once the transaction
 * holds the write lock, on the host's monotonic clock, so that a wall clock that steps
 * neither refuses a leader's writes nor lets a deposed one's through). A takeover needs the same
 * write lock, so it cannot fall between the check and the writes, however long this
 * process pauses: a deposed leader's writes never commit after a new term began. If the
 * lease does not hold, nothing is written and `LeadershipError` `LEASE_LOST` is thrown.
 *
 * `work` must be synchronous (better-sqlite3 transactions are) and short: every other
 * writer of the database waits for it. Its errors roll the transaction back and are thrown
 * as they are. Called inside another transaction, it runs in a savepoint of that one.
 *
 * With a PostgreSQL store (`postgresLeaseStore(pool)`), `work` gets a client of the pool,
 * runs in one transaction that first locks the lease row and checks it by the server's
 * clock, and may be asynchronous: `fenced` then returns a promise (see
 * `PostgresLeaseStore.fenced`).
 *
 * @param lease the tenure to check: an `elected` or `renewed` event will do.
 * @param scheduler where `now` is read to check the expiry (SQLite only): the candidate's
 * own, if it was given one (a test's virtual time).
 *
 * @example
 * ```ts
 * leadership$.pipe(
 *   whileLeader((lease, job) => jobs$.pipe(
 *     concatMap((next) => job(() => fenced(db, lease, () => markDispatched.run(next.id)))),
 *   )),
 * );
 *
 * // PostgreSQL
 * await fenced(store, lease, (client) => client.query('UPDATE jobs SET sent = true WHERE id = $1', [job.id]));
 * ```
 */
export function fenced<T>(db: SqliteDatabaseLike, lease: Lease, work: () => T, scheduler?: SchedulerLike): T;
export function fenced<Client, T>(store: FencingStore<Client>, lease: Lease, work: (client: Client) => Promise<T>): Promise<T>;
export function fenced<T>(
  db: SqliteDatabaseLike | FencingStore<unknown>,
  lease: Lease,
  work: (client?: unknown) => T,
  scheduler: SchedulerLike = monotonicScheduler,
): T | Promise<T> {
  const fencing = fencingOf(db);
  expectLease(lease);
  if (typeof work !== 'function') throw argumentError(TypeError, 'work', 'a function', work);
  return fencing.fenced(lease, work, () => readClocks(scheduler)) as T | Promise<T>;
}

/** The fencing of `db`'s store (a SQLite connection's is its store's); a store without it cannot fence. */
function fencingOf(db: unknown): Fencing<unknown> {
  const fencing = leaseStoreOf('db', db, 'store').capabilities?.fencing;
  if (fencing === undefined)
    throw new TypeError(
      'Expected `db` to be a SQLite database or a lease store that can fence, got a store without the fencing capability',
    );
  return fencing;
}

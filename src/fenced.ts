import type { Database } from 'better-sqlite3';
import { asyncScheduler, SchedulerLike } from 'rxjs';
import { argumentError, expectDatabase, expectInteger, expectObject, expectString } from './argument-check';
import { MAX_HOLDER_LENGTH } from './leadership-config';
import { Lease } from './leadership-event';
import { sqliteLeaseStore } from './store/sqlite/sqlite-lease-store';

/**
 * Runs `work` only if `lease` still holds, and commits its writes together with that proof.
 *
 * `work` runs inside one `BEGIN IMMEDIATE` transaction that first checks that the slot is
 * held by `lease.holder` for `lease.term` and has not expired (by `scheduler.now()`, read
 * once the transaction holds the write lock). A takeover needs the same
 * write lock, so it cannot fall between the check and the writes, however long this
 * process pauses: a deposed leader's writes never commit after a new term began. If the
 * lease does not hold, nothing is written and `LeadershipError` `LEASE_LOST` is thrown.
 *
 * `work` must be synchronous (better-sqlite3 transactions are) and short: every other
 * writer of the database waits for it. Its errors roll the transaction back and are thrown
 * as they are. Called inside another transaction, it runs in a savepoint of that one.
 *
 * @param lease the tenure to check: an `elected` or `renewed` event will do.
 * @param scheduler where `now` is read to check the expiry.
 *
 * @example
 * ```ts
 * leadership$.pipe(
 *   whileLeader((lease) => jobs$.pipe(
 *     tap((job) => fenced(db, lease, () => markDispatched.run(job.id))),
 *   )),
 * );
 * ```
 */
export function fenced<T>(db: Database, lease: Lease, work: () => T, scheduler: SchedulerLike = asyncScheduler): T {
  expectDatabase('db', db);
  expectObject('lease', lease);
  expectInteger('lease.slot', lease.slot, 0, Number.MAX_SAFE_INTEGER);
  expectString('lease.holder', lease.holder, MAX_HOLDER_LENGTH);
  expectInteger('lease.term', lease.term, 1, Number.MAX_SAFE_INTEGER);
  if (typeof work !== 'function') throw argumentError(TypeError, 'work', 'a function', work);
  return sqliteLeaseStore(db).fenced(lease, () => Math.floor(scheduler.now()), work);
}

import { LeadershipError } from '../core/leadership-error';
import { Lease } from '../core/leadership-event';
import { LeaseRecord } from './lease-store';

/**
 * Whether a lease that has `expiresIn` ms left stands: to its last millisecond included, as
 * the original worker judges (`expires_at < now` ends it). The one test, wherever a view of
 * a lease is judged; the stores' SQL says the same (`remaining(...) >= 0`).
 */
export function stands(expiresIn: number): boolean {
  return expiresIn >= 0;
}

/**
 * The check at the head of every fenced transaction, whatever the database: the slot's row
 * must hold `lease`'s holder and term and still be live. Throws `LEASE_LOST` if not.
 */
export function checkLease(lease: Lease, row: LeaseRecord | undefined, isLive: (row: LeaseRecord) => boolean): void {
  if (row !== undefined && row.holder === lease.holder && row.term === lease.term && isLive(row)) return;
  throw new LeadershipError(
    'LEASE_LOST',
    `Slot ${lease.slot} is no longer held by ${lease.holder} for term ${lease.term}` +
      (row ? ` (now ${row.holder}, term ${row.term}, expires at ${row.expiresAt})` : ' (no lease)'),
  );
}

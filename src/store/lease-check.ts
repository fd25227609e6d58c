import { LeadershipError } from '../core/leadership-error';
import { Lease } from '../core/leadership-event';
import { LeaseRecord } from './lease-store';

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

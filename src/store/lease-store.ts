import { Lease } from '../leadership-event';

/** A slot's row as stored: who holds it, for which term, until when (Unix ms). */
export interface LeaseRecord {
  readonly holder: string;
  readonly term: number;
  readonly expiresAt: number;
}

/**
 * Where a change came from: this connection (its candidates hear of it in turn, at once), or
 * anywhere, as a file watch reports it to every process at the same moment.
 */
export type ChangeOrigin = 'here' | 'anywhere';

/** What an acquire attempt found: whether it won, and the slot's lease after the attempt. */
export interface AcquireResult {
  readonly acquired: boolean;
  readonly lease: LeaseRecord;
}

/**
 * Where leases live: all the SQL of one kind of database, behind the few operations the
 * campaign needs. Time is an argument: a store never reads a clock or sets a timer.
 *
 * Every method throws only `LeadershipError`s, so that the campaign can tell transient
 * errors from terminal ones without knowing the database.
 */
export interface LeaseStore {
  /**
   * One atomic compare-and-set: takes `slot` for `holder` until `expiresAt` if and only if
   * the slot is free, expired (`expires_at < now`) or already held by `holder`. Winning
   * always starts a new tenure with a term greater than every term granted before.
   */
  acquire(slot: number, holder: string, now: number, expiresAt: number): AcquireResult;
  /**
   * Moves the end of `lease` to `expiresAt` if the row still holds that holder and term,
   * which proves that nobody else took the slot since the tenure began. Returns `false`
   * when it does not.
   */
  renew(lease: Lease, expiresAt: number): boolean;
  /** Frees the slot if, and only if, it still holds `lease`. Returns whether it did. */
  release(lease: Lease): boolean;
  /**
   * Calls `listener` when slots may have changed hands (a release, in this process or
   * another), so that followers can try at once instead of at their next timer. Best
   * effort: a change may go unreported, which is why campaigns keep their timers. Returns
   * the way to stop listening.
   */
  watch(listener: (origin: ChangeOrigin) => void): () => void;
  /** The slot's current row, expired or not, or `undefined` when there is none. */
  read(slot: number): LeaseRecord | undefined;
  /**
   * Runs `work` in one write transaction that first checks that `lease` is held and not
   * expired at `now()`, read once the transaction holds the write lock; throws
   * `LeadershipError` `LEASE_LOST`, writing nothing, if not.
   */
  fenced<T>(lease: Lease, now: () => number, work: () => T): T;
}

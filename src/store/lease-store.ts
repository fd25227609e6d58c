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

/** How an acquire attempt meets another connection's write lock. */
export interface AcquireOptions {
  /**
   * `true` (the default): wait for the lock as the connection is configured to. `false`: throw
   * `DATABASE_BUSY` at once, for attempts made when many candidates are likely trying at the
   * same moment: whoever holds the lock is probably taking the slot, and a crowd queueing
   * behind it only slows it down.
   */
  readonly waitForLock?: boolean;
}

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
  acquire(slot: number, holder: string, now: number, expiresAt: number, options?: AcquireOptions): AcquireResult;
  /**
   * Moves the end of `lease` to `expiresAt` if the row still holds that holder and term,
   * which proves that nobody else took the slot since the tenure began. Returns `false`
   * when it does not.
   */
  renew(lease: Lease, expiresAt: number): boolean;
  /** Frees the slot if, and only if, it still holds `lease`. Returns whether it did. */
  release(lease: Lease): boolean;
  /**
   * Keeps or takes one of the first `places` standby places of `slot` for `holder` until
   * `expiresAt`, and says whether `holder` holds one now. A place is a small lease of its
   * own: free, expired (`expires_at < now`) or already `holder`'s. Standby followers are
   * the ones that watch for releases, so that a release wakes a few processes, not every
   * follower. Winning the slot gives the place up. Never waits for the write lock: throws
   * `DATABASE_BUSY` at once instead.
   */
  standBy(slot: number, holder: string, now: number, expiresAt: number, places: number): boolean;
  /** Gives up `holder`'s standby place of `slot`, if it has one. */
  leaveStandby(slot: number, holder: string): void;
  /**
   * Calls `listener` when a slot may have changed hands (a release or an acquisition), in
   * this process or another, so that followers can try at once instead of at their next
   * timer, and observers look. Best effort: a change may go unreported (or be reported
   * twice), which is why campaigns keep their timers.
   * Returns the way to stop listening.
   */
  watch(listener: (origin: ChangeOrigin) => void): () => void;
  /** Whether changes are being reported right now (a watch can fail, or not be possible at all). */
  isWatching(): boolean;
  /**
   * The slot's current row, expired or not, or `undefined` when there is none. Never writes:
   * works on a read-only connection, and before the schema exists (then there is no row).
   */
  read(slot: number): LeaseRecord | undefined;
  /**
   * Runs `work` in one write transaction that first checks that `lease` is held and not
   * expired at `now()`, read once the transaction holds the write lock; throws
   * `LeadershipError` `LEASE_LOST`, writing nothing, if not.
   */
  fenced<T>(lease: Lease, now: () => number, work: () => T): T;
}

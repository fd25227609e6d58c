/**
 * What went wrong, as a stable string a program can switch on.
 *
 * - `LEASE_LOST`: a {@link fenced} call found that the lease is no longer held by
 *   that holder and term, or has expired; nothing was written.
 * - `DATABASE_BUSY`: another connection held a lock longer than `busy_timeout`
 *   (`SQLITE_BUSY`, `SQLITE_LOCKED`); on PostgreSQL, a lock or statement timeout, a
 *   deadlock. Transient.
 * - `DATABASE_ERROR`: any other database error, such as an I/O error or a full disk, and on
 *   PostgreSQL a lost connection or a query that timed out. Transient: the campaign carries
 *   on, and a leader that cannot renew steps down at the end of its lease.
 * - `DATABASE_CLOSED`: the connection was closed (the pool was ended). Terminal.
 * - `DATABASE_READONLY`: the connection or the file cannot be written (on PostgreSQL: a
 *   read-only server, or a role without the privilege). Terminal.
 * - `ACCESS_DENIED`: the PostgreSQL server refused the role, its password or the database.
 *   Terminal.
 * - `DATABASE_CORRUPT`: the file is not a database, or is damaged. Terminal.
 * - `DATABASE_MOVED`: the database file was deleted or replaced since the connection opened
 *   it, so other processes that open the path use another database. Terminal.
 * - `SCHEMA_MISMATCH`: a `worker_leadership` (or one of its companions: `worker_leadership_term`,
 *   `_deadline`, `_standby`, `_advertised`) table exists with another shape; on PostgreSQL, the
 *   named lease table or its term sequence. Terminal.
 * - `EXCLUSIVE_LOCKING`: the SQLite connection is in `locking_mode = EXCLUSIVE`, which would
 *   lock every other process out of the file for good. Terminal.
 * - `UNSAFE_JOURNAL`: the SQLite connection's `journal_mode` is `MEMORY` or `OFF`, with which a
 *   process killed while it commits can leave the file damaged. Terminal.
 * - `HOLDER_IN_USE`: another live subscription of this process already campaigns
 *   with the same database, slot and holder. Terminal.
 * - `NO_LEADER`: {@link handOff} found nobody leading the slot: there is nothing to hand off.
 * - `HANDOFF_UNANSWERED`: {@link handOff}'s request was not acted on in time: the leader
 *   cannot hear requests (the original worker, an older version, notifications that do
 *   not reach it), or it is stalled.
 * - `HANDOFF_NOT_STANDING`: {@link handOff}'s named successor did not answer as a standing
 *   candidate of the slot (a misspelt holder, a process gone, or one that cannot hear messages):
 *   the leader was not asked, and nothing changed.
 * - `HANDOFF_NOT_TAKEN`: the leader handed over, but the named successor did not take the
 *   slot in its window (it died since it answered): another candidate leads now, or will
 *   once the window ends.
 */
export type LeadershipErrorCode =
  | 'LEASE_LOST'
  | 'DATABASE_BUSY'
  | 'DATABASE_ERROR'
  | 'DATABASE_CLOSED'
  | 'DATABASE_READONLY'
  | 'ACCESS_DENIED'
  | 'DATABASE_CORRUPT'
  | 'DATABASE_MOVED'
  | 'SCHEMA_MISMATCH'
  | 'EXCLUSIVE_LOCKING'
  | 'UNSAFE_JOURNAL'
  | 'HOLDER_IN_USE'
  | 'NO_LEADER'
  | 'HANDOFF_UNANSWERED'
  | 'HANDOFF_NOT_STANDING'
  | 'HANDOFF_NOT_TAKEN';

const transientCodes: ReadonlySet<LeadershipErrorCode> = new Set(['DATABASE_BUSY', 'DATABASE_ERROR']);

/**
 * The one error class of this library. `code` says what happened; `cause` keeps the
 * underlying error (a better-sqlite3 `SqliteError`, for instance) when there is one.
 *
 * Transient errors reach subscribers as `error` events and the campaign carries on;
 * the others end the stream with an error notification.
 */
export class LeadershipError extends Error {
  /** Always `'LeadershipError'`. */
  override readonly name = 'LeadershipError';

  constructor(
    /** What went wrong, as a string that stays the same across versions (see {@link LeadershipErrorCode}). */
    readonly code: LeadershipErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** `true` when the condition can heal by itself, so that campaigning goes on. */
  get transient(): boolean {
    return transientCodes.has(this.code);
  }

  /**
   * Whether a job may skip the work that threw `error` and carry on: the lease no longer
   * holds (`LEASE_LOST`: nothing was written, and the `lost` event that ends the tenure
   * follows), or the database is briefly unavailable (a transient code: a lock held past
   * the busy timeout, an I/O error), so that the next tick may succeed. `false` for
   * everything else, the errors of your own work included: those should end the job, as
   * the ones that cannot heal end the campaign.
   *
   * @example
   * ```ts
   * try {
   *   fenced(db, lease, () => dispatch.run());
   * } catch (error) {
   *   if (!LeadershipError.isSkippable(error)) throw error;
   * }
   * ```
   */
  static isSkippable(error: unknown): error is LeadershipError {
    return error instanceof LeadershipError && (error.code === 'LEASE_LOST' || error.transient);
  }
}

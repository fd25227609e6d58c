import { LeadershipError } from './leadership-error';

/** One tenure of one candidate: what {@link fenced} checks before the work runs. */
export interface Lease {
  /** The election. */
  readonly slot: number;
  /** The candidate. */
  readonly holder: string;
  /** The fencing token: strictly greater for every new tenure of the slot. */
  readonly term: number;
}

/** This candidate took the slot: a new tenure begins. */
export interface ElectedEvent extends Lease {
  /** Which event: `'elected'`. */
  readonly type: 'elected';
  /**
   * Unix ms, on this candidate's clock (`scheduler.now()`): the end of its belief that it
   * leads, `expiresAfter` after the write was sent. With SQLite, also what the row stores;
   * with PostgreSQL, never later than what the server stored by its own clock.
   */
  readonly expiresAt: number;
  /** What this candidate advertises to followers (the `advertise` option), written with the tenure; absent for nothing. */
  readonly advertised?: string;
}

/** The leader extended its lease; same tenure, same term. */
export interface RenewedEvent extends Lease {
  /** Which event: `'renewed'`. */
  readonly type: 'renewed';
  /** Unix ms, on this candidate's clock: the new end of the lease (see `ElectedEvent`). */
  readonly expiresAt: number;
  /** What the leader advertises, written with this renewal: a change of `advertise` shows here first. */
  readonly advertised?: string;
}

/**
 * Why a tenure ended: `superseded` when the row is no longer this tenure's (another
 * candidate took it, or it was deleted); `expired` when the lease ran out before a
 * renewal could be written; `stepped-down` when the `stepDown` notifier asked it to (the
 * lease is released right after, and the candidate sits out); `handed-off` when it was
 * asked to hand its tenure over (`handOff`): the slot goes to the named successor, or is
 * released, and the candidate sits out; `preempted` when, with the `preempt` option, a
 * candidate of a higher `priority` stood by: the lease is released for it, and the candidate
 * sits out. Other strings may come in later versions.
 */
export type LostReason = 'superseded' | 'expired' | 'stepped-down' | 'handed-off' | 'preempted' | (string & {});

/** The tenure ended. The candidate goes on campaigning. */
export interface LostEvent extends Lease {
  /** Which event: `'lost'`. */
  readonly type: 'lost';
  /** Why the tenure ended. */
  readonly reason: LostReason;
}

/** A transient database error; the campaign carries on. */
export interface LeadershipErrorEvent {
  /** Which event: `'error'`. */
  readonly type: 'error';
  /** The candidate's election. */
  readonly slot: number;
  /** The candidate. */
  readonly holder: string;
  /** What failed; `error.transient` is `true`. */
  readonly error: LeadershipError;
}

/** Everything {@link observeLeadership} tells its subscribers. */
export type LeadershipEvent = ElectedEvent | RenewedEvent | LostEvent | LeadershipErrorEvent;

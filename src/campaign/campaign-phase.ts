import type { Lease } from '../core/leadership-event';
import type { TenureWatch } from '../store/lease-store';
import { LeaseObservation } from './lease-observation';

/**
 * The phase a campaign is in. Each phase holds only what is true in it, so that a follower's
 * knowledge goes with it when it wins, and nothing of a leader's survives its tenure.
 */
export type Phase = Following | Leading | Stopped;

/**
 * Trying to acquire. A follower that holds a standby place (`standby: 'held'`) stands by:
 * it listens for releases and, where the store can prove it, watches the leader's tenure.
 */
export interface Following {
  readonly name: 'following';
  /**
   * What it last learnt of the standby places: it holds one, every one is held by others
   * (who watch for it), or it does not know (not asked yet, or the asking failed).
   */
  standby: 'held' | 'full' | 'unknown';
  /** While it listens for changes: how to stop. */
  stopListening: (() => void) | undefined;
  /** While it stands by, and its store can prove a tenure over: its watch on the leader's tenure. */
  leaderWatch: { readonly lease: Lease; readonly watch: TenureWatch } | undefined;
  /** A tenure whose end the store proved: attempts may take the slot from it until it changes hands. */
  ended: Lease | undefined;
  /** Whether an attempt is already due at once, so that bursts of changes make one. */
  attemptDue: boolean;
  /** Whether a change was reported while its own call was in flight. */
  changedInFlight: boolean;
  /** What it knows of how long the lease it last saw has left. */
  readonly observation: LeaseObservation;
}

/** Holding tenure `term`, which it believes in until `expiresAt` on its own clock: the lease it last wrote. */
export interface Leading {
  readonly name: 'leading';
  readonly term: number;
  readonly expiresAt: number;
}

/** Stopped: only leaving the phase it stopped in is left to do (a release, a standby place given up). */
interface Stopped {
  readonly name: 'stopped';
  readonly left: Following | Leading;
}

/** A follower that knows nothing yet. */
export function following(): Following {
  return {
    name: 'following',
    standby: 'unknown',
    stopListening: undefined,
    leaderWatch: undefined,
    ended: undefined,
    attemptDue: false,
    changedInFlight: false,
    observation: new LeaseObservation(),
  };
}

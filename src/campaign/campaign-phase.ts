import type { Lease } from '../core/leadership-event';
import { LeaseObservation } from '../pacing/lease-observation';
import { Deferral } from './aids/priority';
import { ProofOfEnd } from './aids/tenure-proof';
import { Standing } from './aids/standby';

/**
 * The phase a campaign is in. Each phase holds only what is true in it, so that a follower's
 * knowledge goes with it when it wins, and nothing of a leader's survives its tenure. The
 * transitions between phases are all in campaign.ts; what happens within one, in
 * follower-steps.ts and leader-steps.ts.
 */
export type Phase = Following | Leading | Stopped;

/**
 * What a follower is doing about its next attempt. A change it hears of (a release, an
 * election, the proven end of the leader's tenure) acts by it, in one place
 * (`FollowerSteps.onChange`): while `waiting`, an attempt is made at once; while `due`,
 * nothing more (a burst of changes makes one attempt); while `acquiring`, it is noted
 * (`changedMeanwhile`), since the answer on its way may predate it, and another attempt
 * follows that answer; while `sitting-out`, nothing.
 */
type FollowerActivity =
  /** Waiting for its timer: the next poll, or the first ms after the lease it saw can end. */
  | { readonly name: 'waiting' }
  /** An attempt is due at once: a change was heard. */
  | { readonly name: 'due' }
  /** An attempt is in flight (a store that answers later: PostgreSQL). */
  | { readonly name: 'acquiring'; changedMeanwhile: boolean }
  /**
   * It stepped down: no attempt until `until` (on the campaign's clock), or until it sees
   * another candidate lead (after a handoff, in a term greater than the window it wrote,
   * `after`: the window is nobody's tenure); it only looks, and changes do nothing meanwhile.
   */
  | { readonly name: 'sitting-out'; readonly until: number; after?: number };

/**
 * Trying to acquire. A follower that holds a standby place (`standby: 'held'`) stands by:
 * it listens for releases and, where the store can prove it, watches the leader's tenure;
 * the others rely on the standbys and only poll.
 */
export interface Following {
  readonly name: 'following';
  /** What it does about its next attempt (see `FollowerActivity`). */
  activity: FollowerActivity;
  /** Its standby place, and how it listens for changes (see `StandbyAid`). */
  readonly standing: Standing;
  /** What it knows of the leader's tenure by proof (see `TenureProofAid`). */
  readonly proof: ProofOfEnd;
  /** What it knows of how long the lease it last saw has left. */
  readonly observation: LeaseObservation;
  /** What it knows for putting attempts off for a candidate of a higher priority. */
  readonly deferral: Deferral;
  /** The tenure it gave up, while its release or handover is still being tried (see `Campaign.stepAside`). */
  ending: Lease | undefined;
}

/**
 * Holding tenure `term`, which it believes in until `expiresAt` on its own clock: the lease it
 * last wrote. With `quietUntil`, it took an expired lease and waits out its lock-delay: it
 * holds and renews the lease, but believes nothing and says nothing (`elected` comes with
 * the first renewal from `quietUntil` on).
 */
export interface Leading {
  readonly name: 'leading';
  readonly term: number;
  readonly expiresAt: number;
  readonly quietUntil?: number;
  /** When the tenure began, on the campaign's clock: how long it has led (see `LeadershipConfig.preempt`). */
  readonly since: number;
  /** What the lease it last wrote advertises (see `LeadershipConfig.advertise`). */
  readonly advertised?: string;
}

/** Stopped: only leaving the phase it stopped in is left to do (a release, a standby place given up). */
interface Stopped {
  readonly name: 'stopped';
  readonly left: Following | Leading;
}

/** A follower that knows nothing yet (its first attempt, or its first look while it sits out, is made or set on its timer right after). */
export function following(activity: FollowerActivity = { name: 'waiting' }): Following {
  return {
    name: 'following',
    activity,
    standing: new Standing(),
    proof: new ProofOfEnd(),
    observation: new LeaseObservation(),
    deferral: new Deferral(),
    ending: undefined,
  };
}

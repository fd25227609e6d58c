import type { SchedulerLike } from 'rxjs';
import type { Lease, LeadershipEvent } from '../core/leadership-event';
import type { ClockReading, LeaseRecord, LeaseStore } from '../store/lease-store';
import type { Following, Leading, Phase } from './campaign-phase';
import type { LockRetry } from '../pacing/lock-retry';
import type { OneInFlight } from '../pacing/one-in-flight';
import type { PriorityAid } from './aids/priority';
import type { TenureProofAid } from './aids/tenure-proof';
import type { StandbyAid } from './aids/standby';

/** The durations that drive a campaign, in milliseconds (see `LeadershipConfig`). */
export interface CampaignTiming {
  readonly renewEvery: number;
  readonly expiresAfter: number;
  readonly retryEvery: number;
  /** How long a candidate that stepped down sits out, at most. @default `expiresAfter` */
  readonly sitOut?: number;
  /** How long a candidate that took an expired lease waits before `elected`. @default 0 */
  readonly lockDelay?: number;
  /** Its preference to lead (see `LeadershipConfig.priority`): above 0, it is declared, and others let it go first. @default 0 */
  readonly priority?: number;
  /** Whether, as the leader, it gives way to a candidate of a higher priority (see `LeadershipConfig.preempt`). @default false */
  readonly preempt?: boolean;
}

/** Where a campaign reports: events, and the one terminal error. */
export interface CampaignObserver {
  next(event: LeadershipEvent): void;
  error(error: unknown): void;
  /** A store call answered (an attempt, a renewal), before what it says is acted on. */
  answered?(): void;
  /** How long a store call took, in ms on the scheduler's clock, unrounded: from sending it to its answer. */
  timed?(operation: 'renewal', ms: number): void;
}

/**
 * What the steps of a phase (`FollowerSteps`, `LeaderSteps`) use of their campaign: its
 * store and identity, its one timer and one operation in flight, its clock, what it emits,
 * and the transitions between phases, which only the campaign makes.
 */
export interface CampaignContext {
  readonly store: LeaseStore;
  readonly slot: number;
  readonly holder: string;
  readonly timing: CampaignTiming;
  readonly scheduler: SchedulerLike;
  /** The one store operation in flight, and what waits for it. */
  readonly inFlight: OneInFlight;
  /** When to try again while the lock an operation needs is taken. */
  readonly lockRetry: LockRetry;
  /** The phase now: steps act only while it is still the one they were given. */
  readonly phase: Phase;
  /** Sets the campaign's one timer, replacing any other; `action` waits for an operation in flight unless `waits` is false. */
  wake(action: () => void, delay: number, waits?: boolean): void;
  /** Stops the timer and drops what waited for the operation in flight: an attempt replaces whatever was due. */
  clearTimer(): void;
  /** Emits; whether the campaign still runs (a subscriber may stop it from `next`). */
  emit(event: LeadershipEvent): boolean;
  /** A store's error: an `error` event if transient (then `carryOn`), else the end of the stream. */
  onStoreError(error: unknown, carryOn: () => void): void;
  /** Where the campaign reports: the steps tell it of answers and their timings. */
  readonly observer: CampaignObserver;
  /** The follower won (from `replaced`, if it took another holder's tenure): its watches end, and the tenure begins. */
  lead(follower: Following, leading: Leading, replaced: LeaseRecord | undefined): void;
  /** The tenure goes on, to the lease just written. */
  renewed(leading: Leading): void;
  /** A candidate of a higher priority stands by (`preempt`): the tenure ends (`lost`, `preempted`), the lease is released, and this one sits out. */
  preempted(leading: Leading): void;
  /** The tenure ended (`lost`): a follower again. */
  lose(leading: Leading, reason: 'superseded' | 'expired'): void;
  /** The clocks, read now, for the store. */
  reading(): ClockReading;
  /** Now, in whole ms on the scheduler's clock. */
  now(): number;
  lease(term: number, holder?: string): Lease;
  /** Its part in priorities: its own declaration, and when its follower puts an attempt off. */
  readonly priority: PriorityAid;
  /** Its part in proofs of a tenure's end: a standby's watch on its leader, a leader's word that its belief ended. */
  readonly tenureProof: TenureProofAid;
  /** Its part in standby places and word of changes, as a follower. */
  readonly standby: StandbyAid;
  /** What this candidate advertises now, written with each tenure and renewal; nothing when `undefined`. */
  readonly advertised: string | undefined;
}

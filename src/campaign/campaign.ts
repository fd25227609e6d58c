/*
 * The campaign: its phases (campaign-phase.ts) and every transition between them, here; what
 * happens within a phase in follower-steps.ts and leader-steps.ts; its one operation in
 * flight in one-in-flight.ts, its timing helpers in lock-retry.ts and lease-observation.ts.
 */
import { SchedulerLike, Subscription } from 'rxjs';
import { LeadershipError } from '../core/leadership-error';
import { ElectedEvent, Lease, LeadershipEvent, LostReason, RenewedEvent } from '../core/leadership-event';
import { readClocks } from '../core/monotonic-scheduler';
import { Eventually } from '../core/eventually';
import { ChangeOrigin, ClockReading, HandoffWord, LeaseRecord, LeaseStore } from '../store/lease-store';
import type { CampaignContext, CampaignTiming } from './campaign-context';
import { following, Following, Leading, Phase } from './campaign-phase';
import { FollowerSteps } from './follower-steps';
import { LeaderSteps } from './leader-steps';
import { LockRetry } from '../pacing/lock-retry';
import { OneInFlight } from '../pacing/one-in-flight';
import { PriorityAid } from './aids/priority';
import { TenureProofAid } from './aids/tenure-proof';
import { StandbyAid } from './aids/standby';
import { HandoffAid } from './aids/handoff';

export type { CampaignTiming };

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
 * One candidate's campaign for one slot: a state machine driven by one timer at a time,
 * in one phase at a time (see `Phase`): following (`FollowerSteps`), leading
 * (`LeaderSteps`), or stopped; what a follower knows is dropped as a whole when it wins or
 * stops, and nothing of a leader's survives its tenure.
 *
 * A store never waits for a lock with the host's event loop stopped: it reports the lock
 * taken (`LockTaken`) at once, and the operation is tried again on this campaign's timer
 * a few ms later (`LockRetry`), a renewal until its lease ends. A lock that stays taken for
 * `retryEvery` is reported as an `error` event (`DATABASE_BUSY`), once per `retryEvery`;
 * a follower then tries again every `retryEvery`, as after any transient error.
 *
 * A store without a capability (see `StoreCapabilities`) is driven without it: with no
 * standby places every follower stands by, with no word of changes followers poll, with no
 * proof of a tenure's end they wait for its lease.
 *
 * All time comes from `scheduler.now()`. The store may answer at once (SQLite) or with a
 * promise; one operation is in flight at a time, and whatever is due meanwhile (an attempt,
 * the release at the end) waits for it to settle.
 */
export class Campaign implements CampaignContext {
  phase: Phase = following();
  private timer: Subscription | undefined;
  /** Tenures handed over, whose proof of end waits for their successor's window (see `stepAside`). */
  private readonly endTenureLater = new Map<Subscription, Lease>();
  /** Whether the withdrawal after `stop` was made, and who waits for it. */
  private withdrawn = false;
  private readonly whenWithdrawn: Array<() => void> = [];
  /** The one store operation in flight, and what waits for it. */
  readonly flights = new OneInFlight((error) => {
    // Unexpected: it ends the stream (whose teardown releases), never as an unhandled rejection.
    if (this.phase.name !== 'stopped') this.observer.error(error);
  });
  readonly lockRetry = new LockRetry();
  readonly priority: PriorityAid;
  readonly tenureProof: TenureProofAid;
  readonly standby: StandbyAid;
  private readonly handoff: HandoffAid;
  private readonly follower = new FollowerSteps(this);
  private readonly leader = new LeaderSteps(this);

  constructor(
    readonly store: LeaseStore,
    readonly slot: number,
    readonly holder: string,
    readonly timing: CampaignTiming,
    private readonly observer: CampaignObserver,
    readonly scheduler: SchedulerLike,
  ) {
    const { priorities, tenureProof, standby, changes, handoffs } = store.capabilities ?? {};
    this.priority = new PriorityAid(priorities, this);
    this.tenureProof = new TenureProofAid(tenureProof);
    this.standby = new StandbyAid(standby, changes, this);
    this.handoff = new HandoffAid(handoffs, this);
  }

  /** What this candidate advertises now (see `advertise`). */
  advertised: string | undefined;

  /**
   * What this candidate advertises from now on: written with its next tenure, and by a
   * leader at once, with a renewal (the same tenure and term).
   */
  advertise(value: string): void {
    if (value === this.advertised) return;
    this.advertised = value;
    const leading = this.phase;
    if (leading.name === 'leading') this.leader.advertiseNow(leading);
  }

  /** The `elected` or `renewed` event of `leading`'s tenure. */
  tenureEvent(type: 'elected' | 'renewed', leading: Leading): ElectedEvent | RenewedEvent {
    const { advertised } = leading;
    return { type, ...this.lease(leading.term), expiresAt: leading.expiresAt, ...(advertised !== undefined && { advertised }) };
  }

  /** Tries to acquire at once, then goes on by itself until stopped. */
  start(): void {
    this.handoff.hear(this.onHandoffWord);
    this.follower.attempt();
  }

  /**
   * Stops the timer, then releases the lease if this candidate leads, at once or as soon as
   * the operation in flight settles (an acquisition in flight may yet win); then `settled`
   * (an acquisition answered after it would have taken the slot from whoever campaigns next
   * as this holder). Never throws.
   */
  stop(settled?: () => void): void {
    if (settled !== undefined) {
      if (this.withdrawn) settled();
      else this.whenWithdrawn.push(settled);
    }
    const { phase } = this;
    if (phase.name === 'stopped') return;
    this.phase = { name: 'stopped', left: phase };
    this.clearTimer();
    this.handoff.stop();
    for (const [proof, lease] of this.endTenureLater) {
      proof.unsubscribe();
      this.tenureProof.endTenure(lease);
    }
    this.endTenureLater.clear();
    this.flights.whenSettled(() => {
      try {
        this.withdraw();
      } finally {
        this.withdrawn = true;
        for (const settled of this.whenWithdrawn.splice(0)) settled();
      }
    });
  }

  /**
   * Whether this candidate believes, at this very moment, that it holds tenure `term`. A
   * lease that ran out ends the belief here and now, `lost` included, even if the timer that
   * would have ended it has not fired yet: a process resumed from a pause runs the timers
   * that fell due in the order they were set, and a job's may come before the campaign's.
   */
  believes(term: number): boolean {
    const leading = this.phase;
    if (leading.name !== 'leading' || leading.term !== term || leading.quietUntil !== undefined) return false;
    if (this.now() < leading.expiresAt) return true;
    this.timer?.unsubscribe();
    this.lose(leading, 'expired');
    return false;
  }

  /**
   * The `stepDown` notifier asked: a leader's tenure ends (`lost`, `stepped-down`), its lease
   * is released, and it sits out (see `FollowerSteps.sitOut`). Anything else ignores it.
   */
  stepDown(): void {
    const leading = this.phase;
    if (leading.name !== 'leading') return;
    this.stepAside(leading, 'stepped-down', (lease) => this.store.release(lease));
  }

  giveWay(leading: Leading): void {
    if (this.phase !== leading) return;
    this.stepAside(leading, 'preempted', (lease) => this.store.release(lease));
  }

  /**
   * A leader asked (in its tenure `lease`) to hand over to `to`: as a step-down (`lost`,
   * `handed-off`), but the slot goes to `to` for a window of `retryEvery`, in which `to`
   * (told at once) takes it and nobody else may; after it, anybody may.
   * Without `to`, or with a store that cannot, the lease is released for anybody. A request
   * for another tenure, to itself, or before it was elected, changes nothing.
   */
  private handOff(lease: Lease, to: string | undefined): void {
    const leading = this.phase;
    if (leading.name !== 'leading' || leading.term !== lease.term || lease.holder !== this.holder || to === this.holder) return;
    this.stepAside(leading, 'handed-off', (own) => this.handoff.handOver(own, to, (lease) => this.store.release(lease)));
  }

  /**
   * Ends the tenure on purpose: the belief first (`lost` with `reason`), everywhere it was told,
   * then the lease (`end`), whether or not the subscriber stopped on `lost`; then it sits out.
   * A tenure still waiting out its lock-delay was never announced: it stays.
   */
  private stepAside(leading: Leading, reason: LostReason, end: (lease: Lease) => Eventually<boolean | number | undefined>): void {
    if (leading.quietUntil !== undefined) return;
    this.timer?.unsubscribe(); // its renewal, or its expiry
    const lease = this.lease(leading.term);
    const activity = { name: 'sitting-out', until: this.now() + (this.timing.sitOut ?? this.timing.expiresAfter) } as const;
    const sittingOut = following({ ...activity });
    this.phase = sittingOut;
    this.lockRetry.clear();
    this.emit({ type: 'lost', ...lease, reason });
    sittingOut.ending = lease;
    this.throughLock(
      () => end(lease),
      (ended) => {
        sittingOut.ending = undefined;
        if (typeof ended === 'number') {
          // A window written for a successor (its term) is nobody's tenure: only a greater term ends the sit-out.
          if (sittingOut.activity.name === 'sitting-out') sittingOut.activity.after = ended;
          // The old tenure's proof of end waits for the window (see `Handoffs.handOver`): no
          // standby rushes for the write lock that the successor needs.
          // Stopped meanwhile, it ends at once (see `stop`): no timer outlives the campaign.
          const proof = this.scheduler.schedule(() => {
            this.endTenureLater.delete(proof);
            this.tenureProof.endTenure(lease);
          }, this.timing.retryEvery);
          this.endTenureLater.set(proof, lease);
        } else {
          // Released, or given up: the tenure is over, and followers may prove it at once.
          this.tenureProof.endTenure(lease);
        }
        this.follower.sitOut(sittingOut);
      },
    );
  }

  /**
   * Word about a handoff: a request to this leader, or the slot handed to this follower. Word
   * from another process (a file watch, a notification) is acted on at once: every ms here is
   * a ms of the handoff. Word from this connection is heard inside the operation that told it
   * (a request made in this process, a handover to a candidate of it): acted on after it.
   */
  private readonly onHandoffWord = (word: HandoffWord, origin?: ChangeOrigin): void => {
    if (origin === 'anywhere') return this.actOnHandoffWord(word);
    this.scheduler.schedule(() => this.actOnHandoffWord(word));
  };

  private actOnHandoffWord(word: HandoffWord): void {
    const { phase } = this;
    if (word.kind === 'asked' && word.lease.slot === this.slot) this.handOff(word.lease, word.to);
    else if (word.kind === 'handed' && word.slot === this.slot && word.to === this.holder && phase.name === 'following') {
      this.follower.onHanded(phase);
    } else if (word.kind === 'roll-call' && word.slot === this.slot && phase.name === 'following') {
      this.handoff.answer(word);
    }
  }

  /**
   * The acquisition won: the follower's watches end (winning gave its standby place up), and
   * the tenure begins; from another holder's expired lease (`replaced`) with a lock-delay, it
   * begins quiet (see `Leading.quietUntil`), so that what that holder sent out before it
   * stopped (a side effect `fenced` cannot cover) lands before this one acts.
   */
  lead(follower: Following, won: Leading, replaced: LeaseRecord | undefined): void {
    const { lockDelay = 0 } = this.timing;
    // From the ms after this one: `now()` counts whole ms, and a lock-delay must never be cut short.
    const leading: Leading =
      replaced !== undefined && lockDelay > 0 ? { ...won, quietUntil: Math.ceil(this.scheduler.now()) + lockDelay } : won;
    this.follower.endFollowing(follower);
    this.priority.withdraw();
    // Stopped meanwhile: the release at the end needs the term.
    if (this.phase !== follower) return void (this.phase = { name: 'stopped', left: leading });
    if (this.now() >= leading.expiresAt) {
      // The answer came after the lease it granted could have run out: never believed. The
      // slot is still this holder's in the store, so the next attempt takes it at once.
      this.phase = following();
      this.tenureProof.endTenure(this.lease(leading.term));
      return this.wake(this.follower.attempt, 0);
    }
    this.phase = leading;
    if (leading.quietUntil !== undefined || this.emit(this.tenureEvent('elected', leading))) {
      this.leader.renewInTime(leading);
    }
  }

  renewed(leading: Leading): void {
    this.phase = leading;
  }

  lose(leading: Leading, reason: LostReason): void {
    const lease = this.lease(leading.term);
    this.phase = following();
    this.lockRetry.clear(); // a follower's attempts start an episode of their own
    // A tenure never announced (it was waiting out its lock-delay) ends as quietly.
    const goesOn = leading.quietUntil !== undefined || this.emit({ type: 'lost', ...lease, reason });
    // Only now, with the belief gone everywhere it was told, may the store say so.
    this.tenureProof.endTenure(lease);
    if (goesOn) this.wake(this.follower.attempt, 0);
  }

  /** Leaves the phase the campaign stopped in: releases the tenure, or gives up the standby place. */
  private readonly withdraw = (): void => {
    const { phase } = this;
    if (phase.name !== 'stopped') return;
    const { left } = phase;
    this.lockRetry.clear();
    this.priority.withdraw();
    if (left.name === 'leading') return this.release(this.lease(left.term));
    const standing = left.standing.standsBy;
    this.follower.endFollowing(left);
    // Stopped while a handover or release was still being tried: the tenure is released now.
    if (left.ending !== undefined) this.release(left.ending);
    // A place left held would keep a follower from standing by (and from watching the next
    // leader) until it expires: tried again while the lock is taken, as a release is.
    if (standing && this.standby.hasPlaces) this.throughLock(() => this.standby.leave(), nothing);
  };

  /**
   * Frees the slot (at the end, or on stepping down), trying again while the lock is taken,
   * for up to `retryEvery`, then `then`: a slot left held waits for its lease to expire (on a
   * host whose followers can tell that this tenure is over, they take it anyway). Other
   * errors are told to nobody (stores that answer later keep them for whoever awaits them);
   * the lease expires by itself.
   */
  private release(lease: Lease, then: () => void = nothing): void {
    this.throughLock(() => this.store.release(lease), then);
  }

  /**
   * Makes a store call that ends something (a release, a handover, a standby place given
   * up) as `release` says: tried again while the lock is taken, for up to `retryEvery`, on
   * the campaign's timer; `then` gets what it answered, or nothing if it did not get through.
   */
  private throughLock<T>(call: () => Eventually<T>, then: (answer?: T) => void): void {
    this.flights.run(call, then, (error) => {
      const step = this.lockRetry.stepAfter(error, this.now(), this.timing.retryEvery);
      if (step === undefined) return then();
      this.timer = this.scheduler.schedule(() => this.flights.whenSettled(() => this.throughLock(call, then)), step);
    });
  }

  onStoreError(error: unknown, carryOn: () => void): void {
    if (error instanceof LeadershipError && error.transient) {
      if (this.emit({ type: 'error', slot: this.slot, holder: this.holder, error })) carryOn();
    } else {
      // The observer's teardown stops this campaign, releasing the lease if it leads.
      this.observer.error(error);
    }
  }

  emit(event: LeadershipEvent): boolean {
    this.observer.next(event);
    return this.phase.name !== 'stopped';
  }

  answered(): void {
    this.observer.answered?.();
  }

  timedRenewal(ms: number): void {
    this.observer.timed?.('renewal', ms);
  }

  /**
   * Sets the one timer of this campaign, replacing any other. An action that would touch
   * the store while an operation is in flight waits for it (`waits`); the expiry never waits.
   */
  wake(action: () => void, delay: number, waits = true): void {
    this.timer?.unsubscribe();
    if (this.phase.name === 'stopped') return; // what waits for the operation in flight is the withdrawal
    this.flights.cancelQueued();
    this.timer = this.scheduler.schedule(waits ? () => this.flights.whenSettled(action) : action, delay);
  }

  clearTimer(): void {
    this.timer?.unsubscribe();
    this.flights.cancelQueued();
  }

  reading(): ClockReading {
    return readClocks(this.scheduler);
  }

  lease(term: number, holder = this.holder): Lease {
    return { slot: this.slot, holder, term };
  }

  now(): number {
    return Math.floor(this.scheduler.now());
  }
}

function nothing(): void {}

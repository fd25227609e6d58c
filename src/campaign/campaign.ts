import { SchedulerLike, Subscription } from 'rxjs';
import { LeadershipError } from '../core/leadership-error';
import { Lease, LeadershipEvent, LostReason } from '../core/leadership-event';
import { readClocks } from '../core/monotonic-scheduler';
import { Eventually } from '../core/eventually';
import { ChangeOrigin, ClockReading, HandoffMessage, LeaseRecord, LeaseStore } from '../store/lease-store';
import type { CampaignContext, CampaignObserver, CampaignTiming } from './campaign-context';
import { following, Following, Leading, Phase } from './campaign-phase';
import { FollowerSteps } from './follower-steps';
import { LeaderSteps } from './leader-steps';
import { LockRetry } from '../pacing/lock-retry';
import { OneInFlight } from '../pacing/one-in-flight';
import { PriorityAid } from './aids/priority';
import { TenureProofAid } from './aids/tenure-proof';
import { StandbyAid } from './aids/standby';
import { HandoffAid } from './aids/handoff';

export type { CampaignObserver, CampaignTiming };

/**
 * One candidate's campaign for one slot: one phase at a time (campaign-phase.ts), changed only
 * here; what happens within a phase in follower-steps.ts and leader-steps.ts; what each
 * optional capability of the store adds, in aids/. One timer, one store operation in flight;
 * all time from `scheduler.now()`. A store never waits for a lock: it reports it taken
 * (`LockTaken`), and the operation is tried again on the timer (`LockRetry`).
 */
export class Campaign implements CampaignContext {
  phase: Phase = following();
  private timer: Subscription | undefined;
  /** Whether the phase it stopped in was left (see `leaveStopped`), and who waits for it. */
  private left = false;
  private readonly whenLeft: Array<() => void> = [];
  /** The one store operation in flight, and what waits for it. */
  readonly inFlight = new OneInFlight((error) => {
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
    readonly observer: CampaignObserver,
    readonly scheduler: SchedulerLike,
  ) {
    const { priorities, tenureProof, standby, changes, handoffs } = store.capabilities ?? {};
    this.priority = new PriorityAid(priorities, this);
    this.tenureProof = new TenureProofAid(tenureProof);
    this.standby = new StandbyAid(standby, changes, this);
    this.handoff = new HandoffAid(handoffs, this);
  }

  /** What this candidate advertises now, written with its next tenure and renewal. */
  advertised: string | undefined;

  /** A leader writes a new value at once, with a renewal (the same tenure and term). */
  advertise(value: string): void {
    if (value === this.advertised) return;
    this.advertised = value;
    const leading = this.phase;
    if (leading.name === 'leading') this.leader.advertiseNow(leading);
  }

  /** Tries to acquire at once, then goes on by itself until stopped. */
  start(): void {
    this.handoff.hear(this.onHandoffMessage);
    this.follower.attempt();
  }

  /** Stops the timer, then leaves the phase once the operation in flight settles (an acquisition may yet win); then `settled`. Never throws. */
  stop(settled?: () => void): void {
    if (settled !== undefined) {
      if (this.left) settled();
      else this.whenLeft.push(settled);
    }
    const { phase } = this;
    if (phase.name === 'stopped') return;
    this.phase = { name: 'stopped', left: phase };
    this.clearTimer();
    this.handoff.stop();
    this.tenureProof.endAllNow();
    this.inFlight.whenSettled(() => {
      try {
        this.leaveStopped();
      } finally {
        this.left = true;
        for (const settled of this.whenLeft.splice(0)) settled();
      }
    });
  }

  /**
   * Whether it believes, at this very moment, that it holds tenure `term`. A lease that ran out
   * ends the belief here, before its timer fires: a process resumed from a pause may run a job's timer first.
   */
  believes(term: number): boolean {
    const leading = this.phase;
    if (leading.name !== 'leading' || leading.term !== term || leading.quietUntil !== undefined) return false;
    if (this.now() < leading.expiresAt) return true;
    this.timer?.unsubscribe();
    this.lose(leading, 'expired');
    return false;
  }

  /** The `stepDown` notifier asked: a leader releases and sits out; anybody else ignores it. */
  stepDown(): void {
    const leading = this.phase;
    if (leading.name !== 'leading') return;
    this.stepAside(leading, 'stepped-down', (lease) => this.store.release(lease));
  }

  preempted(leading: Leading): void {
    if (this.phase !== leading) return;
    this.stepAside(leading, 'preempted', (lease) => this.store.release(lease));
  }

  /** A leader asked to hand tenure `lease` over: as a step-down (see `HandoffAid.handOver`). A request for another tenure, or to itself, changes nothing. */
  private handOff(lease: Lease, to: string | undefined): void {
    const leading = this.phase;
    if (leading.name !== 'leading' || leading.term !== lease.term || lease.holder !== this.holder || to === this.holder) return;
    this.stepAside(leading, 'handed-off', (own) => this.handoff.handOver(own, to, (lease) => this.store.release(lease)));
  }

  /**
   * Ends the tenure on purpose: the belief first (`lost`), then the lease (`end`), even if the
   * subscriber stopped on `lost`; then it sits out. A tenure still in its lock-delay stays.
   */
  private stepAside(leading: Leading, reason: LostReason, end: (lease: Lease) => Eventually<boolean | number | undefined>): void {
    if (leading.quietUntil !== undefined) return;
    this.timer?.unsubscribe(); // its renewal, or its expiry
    const lease = this.lease(leading.term);
    const sittingOut = following({ name: 'sitting-out', until: this.now() + (this.timing.sitOut ?? this.timing.expiresAfter) });
    this.phase = sittingOut;
    this.lockRetry.clear();
    this.emit({ type: 'lost', ...lease, reason });
    sittingOut.ending = lease;
    this.retryWhileLocked(
      () => end(lease),
      (ended) => {
        sittingOut.ending = undefined;
        if (typeof ended === 'number') {
          // The window (its term) is nobody's tenure: only a greater term ends the sit-out.
          if (sittingOut.activity.name === 'sitting-out') sittingOut.activity.after = ended;
          // Proven over once the window ends (at the sit-out's first look, see `wake`), so that no
          // standby rushes for the lock the successor needs; at once if stopped (see `stop`).
          this.tenureProof.endTenureAt(lease, this.now() + this.timing.retryEvery);
        } else {
          this.tenureProof.endTenure(lease);
        }
        this.follower.sitOut(sittingOut);
      },
    );
  }

  /** A message about a handoff: from another process, acted on at once; from this connection, after the operation that told it. */
  private readonly onHandoffMessage = (message: HandoffMessage, origin?: ChangeOrigin): void => {
    if (origin === 'anywhere') return this.actOnHandoffMessage(message);
    this.scheduler.schedule(() => this.actOnHandoffMessage(message));
  };

  private actOnHandoffMessage(message: HandoffMessage): void {
    const { phase } = this;
    if (message.kind === 'asked' && message.lease.slot === this.slot) this.handOff(message.lease, message.to);
    else if (message.kind === 'handed' && message.slot === this.slot && message.to === this.holder && phase.name === 'following') {
      this.follower.onHanded(phase);
    } else if (message.kind === 'roll-call' && message.slot === this.slot && phase.name === 'following') {
      this.handoff.answer(message);
    }
  }

  /**
   * The acquisition won: the tenure begins; from another holder's expired lease (`replaced`)
   * with a lock-delay, quietly (see `Leading.quietUntil`), so that what that holder sent out
   * before it stopped (a side effect `fenced` cannot cover) lands before this one acts.
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
      // Answered after its lease could have run out: never believed.
      this.phase = following();
      this.tenureProof.endTenure(this.lease(leading.term));
      return this.othersFirst();
    }
    this.phase = leading;
    if (leading.quietUntil !== undefined || this.emit(this.leader.tenureEvent('elected', leading))) {
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
    // A tenure never announced (in its lock-delay) ends as quietly.
    const goesOn = leading.quietUntil !== undefined || this.emit({ type: 'lost', ...lease, reason });
    // Only now, with the belief gone, may the store say so.
    this.tenureProof.endTenure(lease);
    if (!goesOn) return;
    if (reason === 'expired') this.othersFirst();
    else this.wake(this.follower.attempt, 0);
  }

  /** After a lease of its own ran out unrenewed (a pause, maybe inside a write that kept everyone out): the others go first. */
  private othersFirst(): void {
    this.wake(this.follower.attempt, this.timing.retryEvery);
  }

  /** Leaves the phase the campaign stopped in: releases the tenure, or gives up the standby place. */
  private readonly leaveStopped = (): void => {
    const { phase } = this;
    if (phase.name !== 'stopped') return;
    const { left } = phase;
    this.lockRetry.clear();
    this.priority.withdraw();
    if (left.name === 'leading') return this.retryWhileLocked(() => this.store.release(this.lease(left.term)), nothing);
    const standing = left.standing.standsBy;
    this.follower.endFollowing(left);
    // Stopped while a handover or release was still being tried: the tenure is released now.
    const { ending } = left;
    if (ending !== undefined) this.retryWhileLocked(() => this.store.release(ending), nothing);
    // A place left held would keep another follower from standing by until it expires.
    if (standing && this.standby.hasPlaces) this.retryWhileLocked(() => this.standby.leave(), nothing);
  };

  /**
   * A store call that ends something (a release, a handover, a standby place), tried again on
   * the timer while the lock is taken, for up to `retryEvery`; `then` gets its answer, or
   * nothing. Other errors are told to nobody: what it ends also ends when its lease expires.
   */
  private retryWhileLocked<T>(call: () => Eventually<T>, then: (answer?: T) => void): void {
    this.inFlight.run(call, then, (error) => {
      const step = this.lockRetry.stepAfter(error, this.now(), this.timing.retryEvery);
      if (step === undefined) return then();
      this.timer = this.scheduler.schedule(() => this.inFlight.whenSettled(() => this.retryWhileLocked(call, then)), step);
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

  /** Sets the one timer, replacing any other; `action` waits for an operation in flight, unless `waits` is false (the expiry). */
  wake(action: () => void, delay: number, waits = true): void {
    this.timer?.unsubscribe();
    if (this.phase.name === 'stopped') return; // what waits for the operation in flight is the withdrawal
    this.inFlight.cancelQueued();
    this.timer = this.scheduler.schedule(() => {
      this.tenureProof.endDue(this.now()); // a handover's window that ended: its tenure is proven over
      return waits ? this.inFlight.whenSettled(action) : action();
    }, delay);
  }

  clearTimer(): void {
    this.timer?.unsubscribe();
    this.inFlight.cancelQueued();
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

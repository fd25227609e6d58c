import { LeadershipError } from '../core/leadership-error';
import { stands } from '../store/lease-check';
import { AcquireResult, ChangeOrigin, LeaseChange, LeaseRecord, LockTaken } from '../store/lease-store';
import type { CampaignContext } from './campaign-context';
import type { Following, Leading } from './campaign-phase';

/** Ms that a follower of a crowd that found the lock taken waits before it tries again (see `tryToAcquire`). */
const crowdPatience = 10;

/**
 * What a follower does: it tries to acquire, then again after `retryEvery`, or just after the
 * lease it saw expires if sooner. The first few followers stand by: they also try at once on
 * a release, and on a proof that the leader's process is gone (SQLite), which lets them take
 * exactly that tenure before its lease ends; the others rely on them and poll only as often as
 * the leader renews. Where the store's clock can jump (PostgreSQL's), a follower times the
 * lease itself (`LeaseObservation`). What a change does depends on the follower's activity,
 * in `onChange` alone.
 */
export class FollowerSteps {
  constructor(private readonly campaign: CampaignContext) {}

  readonly attempt = (): void => this.tryToAcquire(true);

  /** An attempt that many followers make at once: one that finds the lock taken steps aside, and reads again a few ms later. */
  readonly attemptInCrowd = (): void => this.tryToAcquire(false);

  /**
   * The slot may have changed hands: a change seen through the store, or the leader's tenure
   * proven over (`proof`). A change from `anywhere` reaches every follower at the same moment:
   * the first to find the slot free takes it, the others step aside.
   */
  onChange(follower: Following, origin: ChangeOrigin | 'proof', change?: LeaseChange): void {
    const { activity } = follower;
    if (this.campaign.phase !== follower || activity.name === 'sitting-out') return;
    // Anything but a renewal may have freed the slot.
    const freeing = change !== 'renewal';
    if (freeing) follower.deferral.mayBeFree = true;
    // The answer on its way may predate the change: another attempt follows it.
    if (activity.name === 'acquiring') return void (activity.changedMeanwhile = true);
    // An attempt put off for a candidate of a higher priority comes at its time, proof or not;
    // a release heard meanwhile gives that candidate its `retryEvery` from now.
    if (follower.deferral.attempt === 'put-off' && activity.name === 'due') {
      if (freeing) this.campaign.wake(this.attempt, this.campaign.timing.retryEvery);
      return;
    }
    // Every standby has a proof at the same moment, as with a release: in a crowd, at once.
    if (origin === 'proof') return this.attemptInCrowd();
    if (activity.name === 'due') return;
    // A renewal leaves the slot taken: reading it restarts this follower's count, nothing more.
    // Changes that went unheard are as likely one as the other: read first, as for a renewal.
    if (origin === 'anywhere' && change !== 'renewal' && change !== 'unheard') return this.attemptInCrowd();
    follower.activity = { name: 'due' };
    this.campaign.wake(this.attempt, 0);
  }

  /** The slot was handed to this candidate (see `HandoffMessage`): it tries at once, sitting out or not; nobody else may take it in its window. */
  onHanded(follower: Following): void {
    const { activity } = follower;
    if (this.campaign.phase !== follower) return;
    if (activity.name === 'acquiring') return void (activity.changedMeanwhile = true);
    // At once, not on a timer: the message was heard on one already (see `Campaign.onHandoffMessage`).
    // Named, it goes first whatever the priorities.
    follower.activity = { name: 'due' };
    follower.deferral.attempt = 'named';
    follower.deferral.mayBeFree = true;
    this.campaign.clearTimer();
    this.campaign.inFlight.whenSettled(this.attempt);
  }

  /** After stepping down: no attempt until the sit-out ends or another candidate is seen to lead; it looks every `retryEvery` meanwhile. */
  sitOut(follower: Following): void {
    const { campaign } = this;
    const { activity } = follower;
    if (campaign.phase !== follower || activity.name !== 'sitting-out') return;
    const left = activity.until - campaign.now();
    if (left <= 0) return this.followAgain(follower);
    campaign.wake(() => this.lookWhileSittingOut(follower), Math.min(campaign.timing.retryEvery, left));
  }

  private lookWhileSittingOut(follower: Following): void {
    const { campaign } = this;
    if (campaign.phase !== follower) return;
    campaign.inFlight.run(
      () => campaign.store.look(campaign.slot, campaign.reading()),
      (view) => {
        const { activity } = follower;
        const after = activity.name === 'sitting-out' ? activity.after : undefined;
        const another =
          view !== undefined &&
          view.lease.holder !== campaign.holder &&
          stands(view.expiresIn) &&
          (after === undefined || view.lease.term > after);
        if (another && campaign.phase === follower) this.followAgain(follower);
        else this.sitOut(follower);
      },
      () => this.sitOut(follower),
    );
  }

  private followAgain(follower: Following): void {
    follower.activity = { name: 'waiting' };
    this.attempt();
  }

  /** Ends what a follower watches: changes, and the leader's tenure. */
  endFollowing(follower: Following): void {
    this.listen(follower, false);
    this.campaign.tenureProof.unwatch(follower.proof);
  }

  private tryToAcquire(waitForLock: boolean): void {
    const { campaign } = this;
    const follower = campaign.phase;
    if (follower.name !== 'following') return;
    // This attempt replaces whatever was due: a poll must not follow it once it is answered.
    campaign.clearTimer();
    // Others let it go first from its declaration on: it hears a release from then on too,
    // not only once its standby place is answered (a release in between left the slot to
    // the others, which waited retryEvery for it, while it polled).
    if (campaign.priority.preferred) this.listen(follower, true);
    campaign.priority.declare();
    if (this.putOff(follower, waitForLock)) return;
    follower.activity = { name: 'acquiring', changedMeanwhile: false };
    const sentAt = campaign.now();
    const { expiresAfter } = campaign.timing;
    const { provenEnded } = follower.proof;
    const outwaited = follower.observation.outwaited(sentAt);
    const { advertised } = campaign;
    campaign.inFlight.run(
      () =>
        campaign.store.acquire(campaign.slot, campaign.holder, campaign.reading(), expiresAfter, {
          waitForLock,
          provenEnded,
          outwaited,
          advertised,
        }),
      (result) => this.onAcquireResult(follower, result, sentAt, advertised),
      (error) => this.onAcquireError(follower, error, waitForLock),
    );
  }

  /** Puts the attempt off for a candidate of a higher priority, if it should be (see `PriorityAid.putOffFor`). */
  private putOff(follower: Following, waitForLock: boolean): boolean {
    const { campaign } = this;
    const hears = campaign.standby.hears(follower.standing);
    const delay = campaign.priority.putOffFor(follower.deferral, waitForLock, hears);
    if (delay === undefined) return false;
    follower.activity = { name: 'due' };
    campaign.wake(waitForLock ? this.attempt : this.attemptInCrowd, delay);
    return true;
  }

  private onAcquireResult(follower: Following, result: AcquireResult, sentAt: number, advertised: string | undefined): void {
    const { campaign } = this;
    const { activity } = follower;
    follower.activity = { name: 'waiting' };
    campaign.lockRetry.clear();
    campaign.observer.answered?.();
    if (result.acquired) {
      const expiresAt = sentAt + campaign.timing.expiresAfter;
      const leading: Leading = {
        name: 'leading',
        term: result.lease.term,
        expiresAt,
        since: sentAt,
        ...(advertised !== undefined && { advertised }),
      };
      return campaign.lead(follower, leading, follower.proof.expiredOf(result.replaced));
    }
    follower.proof.found(result.lease);
    if (campaign.phase !== follower) return;
    const expiresIn = follower.observation.remaining(result, campaign.now());
    // Found held: freed since only if a change came while the answer was on its way.
    follower.deferral.mayBeFree = activity.name === 'acquiring' && activity.changedMeanwhile;
    follower.deferral.heldUntil = campaign.now() + expiresIn;
    const claimAgainIn = this.standBy(follower) ?? Infinity;
    this.watchLeader(follower, result.lease, expiresIn);
    if (activity.name === 'acquiring' && activity.changedMeanwhile) return campaign.wake(this.attemptInCrowd, 0);
    // Its count of this lease ended while the answer was on its way (a timer may fire a ms
    // early: Node.js counts from the loop's last turn): it tries again at once with the lease
    // it `outwaited`, not a whole `retryEvery` on. Once per lease seen.
    const countEndedMeanwhile =
      follower.observation.outwaited(sentAt) === undefined && follower.observation.outwaited(campaign.now()) !== undefined;
    if (countEndedMeanwhile && follower.standing.place !== 'full') return campaign.wake(this.attempt, 0);
    campaign.wake(this.attempt, Math.min(this.untilNextAttempt(follower, expiresIn), claimAgainIn));
  }

  private onAcquireError(follower: Following, error: unknown, waitForLock: boolean): void {
    const { campaign } = this;
    follower.activity = { name: 'waiting' };
    if (campaign.phase !== follower) return;
    // Whoever holds the lock is most likely taking the slot: a read a few ms later tells. A
    // lock held for `retryEvery` is reported, and polled for as usual.
    const now = campaign.now();
    const lockedFor = campaign.lockRetry.lockedFor(now);
    const step = campaign.lockRetry.stepAfter(error, now, campaign.timing.retryEvery);
    // In a crowd, the one with the lock commits within a ms or two and announces it, which
    // wakes this follower anyway: trying sooner would only get in its way (a rollback
    // journal's commit needs every reader gone).
    if (step !== undefined) return campaign.wake(this.attempt, (waitForLock ? 0 : crowdPatience) + step);
    campaign.onStoreError(error instanceof LockTaken ? lockedOut(error, lockedFor) : error, () =>
      campaign.wake(this.attempt, campaign.timing.retryEvery),
    );
  }

  /**
   * When a follower that found the slot held tries again: every `retryEvery`, or, when the
   * standbys (or itself as one) hear releases, as often as the leader renews: the timer is
   * then only the net for a release nobody reported (the original worker's, say). Either way
   * it aims at the first ms after the lease it saw can expire; one that relies on the
   * standbys gives them `retryEvery` first, so that a crowd does not try at the same ms.
   */
  private untilNextAttempt({ standing }: Following, expiresIn: number): number {
    const { retryEvery, renewEvery } = this.campaign.timing;
    const pollEvery = this.campaign.standby.relies(standing) ? Math.max(retryEvery, renewEvery) : retryEvery;
    const untilFree = expiresIn + 1 + (standing.place === 'full' ? retryEvery : 0);
    return untilFree >= 1 && untilFree < pollEvery ? untilFree : pollEvery;
  }

  /** Keeps or takes a standby place, and listens for releases while it holds one (see `StandbyAid.claim`); beside the operation in flight, not as one. */
  private standBy(follower: Following): number | undefined {
    const { campaign } = this;
    // A candidate others let go first must hear of a release at once, place or not.
    return campaign.standby.claim(
      follower.standing,
      () => campaign.phase === follower,
      (held) => this.listen(follower, held || campaign.priority.preferred),
    );
  }

  /** A standby watches the tenure it found, where the store can prove its end before its expiry (SQLite: the leader's process is gone). */
  private watchLeader(follower: Following, lease: LeaseRecord, expiresIn: number): void {
    const { campaign } = this;
    const watching = follower.standing.place === 'held' || campaign.priority.preferred;
    const wanted = watching && stands(expiresIn) && lease.holder !== campaign.holder;
    campaign.tenureProof.watch(follower.proof, wanted ? campaign.lease(lease.term, lease.holder) : undefined, () =>
      this.onChange(follower, 'proof'),
    );
  }

  private listen(follower: Following, on: boolean): void {
    const onChange = (origin: ChangeOrigin, change: LeaseChange) => this.onChange(follower, origin, change);
    // A release between the read that found the slot held and now went unheard.
    if (this.campaign.standby.listen(follower.standing, on, onChange)) follower.deferral.mayBeFree = true;
  }
}

/** The report of a lock that another connection kept for `lockedFor` ms while this campaign tried again. */
export function lockedOut(error: LockTaken, lockedFor: number): LeadershipError {
  return new LeadershipError(
    'DATABASE_BUSY',
    `Another connection held the lock at every try for ${lockedFor} ms; trying again (${error.message})`,
    { cause: error },
  );
}

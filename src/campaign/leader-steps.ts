import type { ElectedEvent, RenewedEvent } from '../core/leadership-event';
import { LockTaken } from '../store/lease-store';
import type { CampaignContext } from './campaign-context';
import type { Leading } from './campaign-phase';
import { lockedOut } from './follower-steps';

/**
 * What a leader does: it renews every `renewEvery`; a renewal that fails with a transient
 * error is retried after `retryEvery`, and one that meets a lock a few ms later, again and
 * again; if the lease it last wrote runs out first, the tenure ends (`lost`, `expired`) at
 * that lease's end: the leader never believes it leads past it. A lease's end, as the leader
 * believes it, is `expiresAfter` from the moment the write was sent, so a reply that comes
 * late (a slow network, a busy server) only shortens the belief.
 */
export class LeaderSteps {
  constructor(private readonly campaign: CampaignContext) {}

  /**
   * After a lease was written: renews every `renewEvery`, or halfway through what is left of
   * the lease if an answer came so late that less than that is left (a store across the
   * network, an acquisition that waited behind a lock). Where answers come at once, a fresh
   * lease always has more than `renewEvery` left.
   */
  renewInTime(leading: Leading): void {
    const now = this.campaign.now();
    const untilExpiry = leading.expiresAt - now;
    const { renewEvery } = this.campaign.timing;
    const interval = untilExpiry > renewEvery ? renewEvery : Math.floor(untilExpiry / 2);
    // A quiet tenure renews at the end of its lock-delay too: that renewal announces it.
    this.scheduleRenewal(leading, leading.quietUntil === undefined ? interval : Math.max(0, Math.min(interval, leading.quietUntil - now)));
  }

  private readonly renew = (): void => {
    const { campaign } = this;
    const leading = campaign.phase;
    if (leading.name !== 'leading') return;
    const { term } = leading;
    const sentExactly = campaign.scheduler.now(); // for how long it took; the belief counts in whole ms
    const sentAt = Math.floor(sentExactly);
    const { expiresAfter } = campaign.timing;
    const { advertised } = campaign;
    campaign.inFlight.run(
      // Even after a pause past the lease, this succeeds only if nobody took the slot
      // meanwhile (the store checks holder and term), so the tenure may go on.
      () => campaign.store.renew(campaign.lease(term), campaign.reading(), expiresAfter, { advertised }),
      (renewed) => {
        campaign.observer.timed?.('renewal', campaign.scheduler.now() - sentExactly);
        campaign.observer.answered?.();
        campaign.lockRetry.clear();
        if (campaign.phase !== leading) return; // ended meanwhile
        if (!renewed) return campaign.lose(leading, 'superseded');
        // An answer that came after the lease it wrote ran out (the process paused inside the
        // call, say) is never believed: the belief ended meanwhile, and others may lead now.
        if (campaign.now() >= sentAt + expiresAfter) return campaign.lose(leading, 'expired');
        const { quietUntil } = leading;
        const announced = quietUntil !== undefined && campaign.now() >= quietUntil;
        const stillQuiet = quietUntil !== undefined && !announced;
        const renewedTo: Leading = {
          name: 'leading',
          term,
          expiresAt: sentAt + expiresAfter,
          since: leading.since,
          ...(stillQuiet && { quietUntil }),
          ...(advertised !== undefined && { advertised }),
        };
        campaign.renewed(renewedTo);
        if (!stillQuiet && !campaign.emit(this.tenureEvent(announced ? 'elected' : 'renewed', renewedTo))) return;
        if (!stillQuiet && campaign.priority.outranked(renewedTo.since)) return campaign.preempted(renewedTo);
        // Changed while this renewal was on its way: written by the next one, at once.
        if (!stillQuiet && campaign.advertised !== advertised) this.scheduleRenewal(renewedTo, 0);
        else this.renewInTime(renewedTo);
      },
      (error) => {
        if (campaign.phase !== leading) return;
        if (error instanceof LockTaken) return this.renewWhenFree(leading, error);
        campaign.onStoreError(error, () => this.scheduleRenewal(leading, campaign.timing.retryEvery));
      },
    );
    // An answer still to come: the lease in force runs out meanwhile, if it comes to that.
    if (campaign.inFlight.busy && campaign.phase === leading) this.scheduleExpiry(leading);
  };

  /**
   * The renewal found the lock taken: tried again a few ms later, and again, until the lease
   * in force ends (then `lost`, `expired`, on time: nothing waited). Every `retryEvery` of it
   * is reported as an `error` event.
   */
  private renewWhenFree(leading: Leading, error: LockTaken): void {
    const { campaign } = this;
    const now = campaign.now();
    const step = campaign.lockRetry.next(now);
    const lockedFor = campaign.lockRetry.lockedFor(now);
    if (lockedFor >= campaign.timing.retryEvery) {
      campaign.lockRetry.restart(now);
      if (!campaign.emit({ type: 'error', slot: campaign.slot, holder: campaign.holder, error: lockedOut(error, lockedFor) })) return;
    }
    this.scheduleRenewal(leading, step);
  }

  /** The `elected` or `renewed` event of `leading`'s tenure. */
  tenureEvent(type: 'elected' | 'renewed', leading: Leading): ElectedEvent | RenewedEvent {
    const { advertised } = leading;
    const lease = this.campaign.lease(leading.term);
    return { type, ...lease, expiresAt: leading.expiresAt, ...(advertised !== undefined && { advertised }) };
  }

  /**
   * What the leader advertises changed: a renewal at once writes it (etcd's Proclaim: the
   * same tenure, the same term), unless one is in flight, whose answer schedules the next.
   */
  advertiseNow(leading: Leading): void {
    if (leading.quietUntil !== undefined || this.campaign.inFlight.busy) return;
    this.scheduleRenewal(leading, 0);
  }

  /** Renews after `interval`, unless the lease ends first: then the tenure ends at its expiry. */
  private scheduleRenewal(leading: Leading, interval: number): void {
    const untilExpiry = leading.expiresAt - this.campaign.now();
    if (interval < untilExpiry) this.campaign.wake(this.renew, interval);
    else this.scheduleExpiry(leading);
  }

  /** Ends the tenure at its lease's end: a timer that never waits for an operation in flight. */
  private scheduleExpiry(leading: Leading): void {
    const untilExpiry = leading.expiresAt - this.campaign.now();
    if (untilExpiry > 0) this.campaign.wake(this.expire, untilExpiry, false);
    else this.expire();
  }

  /**
   * Node.js starts a timer's count at the event loop's cached time, which lags behind the
   * clock after synchronous work: the timer may fire a few ms before the lease's end. The
   * tenure then waits out what is left, so that the leader has all of the lease it wrote.
   */
  private readonly expire = (): void => {
    const leading = this.campaign.phase;
    if (leading.name !== 'leading') return;
    if (leading.expiresAt > this.campaign.now()) this.scheduleExpiry(leading);
    else this.campaign.lose(leading, 'expired');
  };
}

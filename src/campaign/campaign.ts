/*
 * Longer than the others (about 500 lines): the campaign is one state machine, and every
 * transition of it is here so that one can check them against each other. Its phases are in
 * campaign-phase.ts, its executor in one-in-flight.ts, its timing helpers in lock-retry.ts
 * and lease-observation.ts.
 */
import { SchedulerLike, Subscription } from 'rxjs';
import { LeadershipError } from '../core/leadership-error';
import { Lease, LeadershipEvent, LostReason } from '../core/leadership-event';
import { readClocks } from '../core/monotonic-scheduler';
import { isPromiseLike } from '../core/eventually';
import {
  AcquireResult,
  ChangeOrigin,
  ClockReading,
  sameTenure,
  LeaseChange,
  LeaseRecord,
  LeaseStore,
  LockTaken,
  StoreCapabilities,
} from '../store/lease-store';
import { stands } from '../store/lease-check';
import { following, Following, Leading, Phase } from './campaign-phase';
import { LockRetry } from './lock-retry';
import { OneInFlight } from './one-in-flight';

/**
 * How many followers of a slot stand by: they watch for releases and take the slot within
 * a few ms of one, while the others rely on them and only poll. A release that woke every
 * follower would cost more CPU than the handoff takes once there are dozens of them.
 */
const standbyPlaces = 3;

/** Ms that a follower of a crowd that found the lock taken waits before it tries again (see `tryToAcquire`). */
const crowdPatience = 10;

/** The durations that drive a campaign, in milliseconds (see `LeadershipConfig`). */
export interface CampaignTiming {
  readonly renewEvery: number;
  readonly expiresAfter: number;
  readonly retryEvery: number;
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
 * One candidate's campaign for one slot: a state machine driven by one timer at a time.
 *
 * A follower tries to acquire, then tries again after `retryEvery`, or just after the live
 * lease it saw expires if that comes sooner. The first few followers stand by: they also
 * try at once when the store reports a release, and they and the followers relying on
 * them need poll only as often as the leader renews. Where the store can prove that a
 * tenure ended (SQLite: the leader's process is gone), standbys watch the leader's tenure
 * and, on that proof alone, take the slot from exactly that holder and term at once. A leader renews every `renewEvery`;
 * a renewal that fails with a transient error is retried after `retryEvery`, and if the
 * lease it last wrote runs out first, the tenure ends (`lost`, `expired`) at that lease's
 * end: the leader never believes it leads past it.
 *
 * Where the store cannot time leases on a clock that cannot jump (PostgreSQL: the server's
 * wall clock), a follower times the lease it sees itself (`LeaseObservation`): it takes the
 * slot only from a lease it watched unchanged for the lease's whole length, and standbys
 * hear of renewals, so that they start each count within ms of the write.
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
 * The campaign is in one phase at a time (see `Phase`): following, leading, or stopped;
 * what a follower knows is dropped as a whole when it wins or stops. All time comes from `scheduler.now()`. A lease's end, as the candidate believes it, is
 * `expiresAfter` from the moment the write was sent, so a reply that comes late (a slow
 * network, a busy server) only shortens the belief. The store may answer at once (SQLite)
 * or with a promise; one operation is in flight at a time, and whatever is due meanwhile
 * (an attempt, the release at the end) waits for it to settle.
 */
export class Campaign {
  private phase: Phase = following();
  private timer: Subscription | undefined;
  /** The one store operation in flight, and what waits for it. */
  private readonly flights = new OneInFlight((error) => {
    // Unexpected: it ends the stream (whose teardown releases), never as an unhandled rejection.
    if (this.phase.name !== 'stopped') this.observer.error(error);
  });
  /** When to try again while the lock the operation needs is taken. */
  private readonly lockRetry = new LockRetry();
  /** What the store can do beyond its five operations. */
  private readonly powers: StoreCapabilities;

  constructor(
    private readonly store: LeaseStore,
    private readonly slot: number,
    private readonly holder: string,
    private readonly timing: CampaignTiming,
    private readonly observer: CampaignObserver,
    private readonly scheduler: SchedulerLike,
  ) {
    this.powers = store.capabilities ?? {};
  }

  /** Tries to acquire at once, then goes on by itself until stopped. */
  start(): void {
    this.attempt();
  }

  /**
   * Stops the timer, then releases the lease if this candidate leads, at once or as soon as
   * the operation in flight settles (an acquisition in flight may yet win). Never throws.
   */
  stop(): void {
    const { phase } = this;
    if (phase.name === 'stopped') return;
    this.phase = { name: 'stopped', left: phase };
    this.timer?.unsubscribe();
    this.flights.cancelQueued();
    this.flights.whenSettled(this.withdraw);
  }

  /** Leaves the phase the campaign stopped in: releases the tenure, or gives up the standby place. */
  private readonly withdraw = (): void => {
    const { phase } = this;
    if (phase.name !== 'stopped') return;
    const { left } = phase;
    this.lockRetry.clear();
    if (left.name === 'leading') return this.release(this.lease(left.term));
    const standing = left.stopListening !== undefined || left.standby === 'held';
    this.endFollowing(left);
    const places = this.powers.standby;
    // Best effort: an unused place only delays the next standby until it expires.
    if (standing && places) this.flights.run(() => places.leaveStandby(this.slot, this.holder), nothing, nothing);
  };

  /**
   * Frees the slot at the end, trying again while the lock is taken, for up to `retryEvery`:
   * a slot left held waits for its lease to expire (on a host whose followers can tell that
   * this tenure is over, they take it anyway). Other errors are told to nobody (stores that
   * answer later keep them for whoever awaits them); the lease expires by itself.
   */
  private release(lease: Lease): void {
    this.flights.run(
      () => this.store.release(lease),
      nothing,
      (error) => {
        const step = this.lockRetry.stepAfter(error, this.now(), this.timing.retryEvery);
        if (step !== undefined) this.timer = this.scheduler.schedule(() => this.flights.whenSettled(() => this.release(lease)), step);
      },
    );
  }

  /**
   * The slots may have changed hands: a follower tries at once rather than at its next
   * timer. A change in this process comes from a release on the same connection; a change
   * seen through the file reaches every follower of every process at the same moment, and
   * all of them read: the first to find the slot free takes it, the others step aside.
   */
  private onChange(follower: Following, origin: ChangeOrigin, change: LeaseChange): void {
    if (this.phase !== follower || follower.attemptDue) return;
    // The answer on its way may predate the change: it will be followed by another attempt.
    if (this.flights.busy) return void (follower.changedInFlight = true);
    // A renewal leaves the slot taken: reading it restarts this follower's count, nothing more.
    // Changes that went unheard are as likely one as the other: read first, as for a renewal.
    if (origin === 'anywhere' && change !== 'renewal' && change !== 'unheard') return this.attemptInCrowd();
    follower.attemptDue = true;
    this.wake(this.attempt, 0);
  }

  private readonly attempt = (): void => this.tryToAcquire(true);

  /**
   * An attempt that every follower may be making at the same moment: if another connection
   * holds the write lock, it is most likely taking the slot, so this one steps aside at once
   * instead of queueing, and reads again a few ms later.
   */
  private readonly attemptInCrowd = (): void => this.tryToAcquire(false);

  private tryToAcquire(waitForLock: boolean): void {
    const follower = this.phase;
    if (follower.name !== 'following') return;
    follower.attemptDue = false;
    // This attempt replaces whatever was due: a poll must not follow it once it is answered.
    this.timer?.unsubscribe();
    this.flights.cancelQueued();
    follower.changedInFlight = false;
    const sentAt = this.now();
    const { expiresAfter } = this.timing;
    const { ended } = follower;
    const over = follower.observation.over(sentAt);
    this.flights.run(
      () => this.store.acquire(this.slot, this.holder, this.reading(), expiresAfter, { waitForLock, ended, over }),
      (result) => this.onAcquireResult(follower, result, sentAt),
      (error) => {
        if (this.phase !== follower) return;
        // Whoever holds the lock is most likely taking the slot: reading again a few ms later
        // tells. A lock held for `retryEvery` is reported, and polled for as usual.
        const now = this.now();
        const lockedFor = this.lockRetry.lockedFor(now);
        const step = this.lockRetry.stepAfter(error, now, this.timing.retryEvery);
        // In a crowd, the one that got the lock is taking the slot: it commits within a ms or
        // two and announces it, which wakes this follower anyway. Trying again sooner would
        // only get in its way (a rollback journal's commit needs every reader gone).
        if (step !== undefined) return this.wake(this.attempt, (waitForLock ? 0 : crowdPatience) + step);
        this.onStoreError(error instanceof LockTaken ? lockedOut(error, lockedFor) : error, () =>
          this.wake(this.attempt, this.timing.retryEvery),
        );
      },
    );
  }

  private onAcquireResult(follower: Following, result: AcquireResult, sentAt: number): void {
    this.lockRetry.clear();
    this.observer.answered?.();
    if (result.acquired)
      return this.onWon(follower, { name: 'leading', term: result.lease.term, expiresAt: sentAt + this.timing.expiresAfter });
    // A proven end counts only while the slot stays with that tenure.
    if (follower.ended !== undefined && !sameTenure(result.lease, follower.ended)) follower.ended = undefined;
    if (this.phase !== follower) return;
    const expiresIn = follower.observation.remaining(result, this.now());
    this.standBy(follower);
    this.watchLeader(follower, result.lease, expiresIn);
    if (follower.changedInFlight) return this.wake(this.attemptInCrowd, 0);
    this.wake(this.attempt, this.untilNextAttempt(follower, expiresIn));
  }

  /** The acquisition won: the follower's watches end (winning gave its standby place up), and the tenure begins. */
  private onWon(follower: Following, leading: Leading): void {
    this.endFollowing(follower);
    // Stopped meanwhile: the release at the end needs the term.
    if (this.phase !== follower) return void (this.phase = { name: 'stopped', left: leading });
    if (this.now() >= leading.expiresAt) {
      // The answer came after the lease it granted could have run out: never believed. The
      // slot is still this holder's in the store, so the next attempt takes it at once.
      this.phase = following();
      this.powers.tenureProof?.endTenure(this.lease(leading.term));
      return this.wake(this.attempt, 0);
    }
    this.phase = leading;
    if (this.emit({ type: 'elected', ...this.lease(leading.term), expiresAt: leading.expiresAt })) this.renewInTime(leading);
  }

  /** Ends what a follower watches: changes, and the leader's tenure. */
  private endFollowing(follower: Following): void {
    this.listen(follower, false);
    this.unwatchLeader(follower);
  }

  /**
   * When a follower that found the slot held tries again. It polls every `retryEvery`,
   * unless others watch for releases on its behalf: the standbys, or itself as one when its
   * watch works. Then its timer is only the safety net for a release that goes unreported
   * (one by the original worker's statements, say, or while every standby just died), and
   * polling as often as the leader renews keeps what that costs well below what a crash
   * costs (a lease). Whatever the polling, it aims at the first millisecond after the lease
   * it saw can expire (`expires_at < now`), when a crashed leader's slot can be taken; a
   * follower that relies on the standbys lets them try first, for `retryEvery`, so that a
   * crowd of followers does not all try at the same millisecond.
   */
  private untilNextAttempt({ standby }: Following, expiresIn: number): number {
    const { retryEvery, renewEvery } = this.timing;
    const relying = standby === 'full' || (standby === 'held' && this.powers.changes?.isWatching() === true);
    const pollEvery = relying ? Math.max(retryEvery, renewEvery) : retryEvery;
    const untilFree = expiresIn + 1 + (standby === 'full' ? retryEvery : 0);
    return untilFree >= 1 && untilFree < pollEvery ? untilFree : pollEvery;
  }

  /**
   * Keeps or takes a standby place, which lasts a lease and is renewed at each attempt, and
   * listens for releases while it has one; with a store that has no places, every follower
   * stands by. Best effort: on an error, things stay as they were until the next attempt,
   * which reports the error if it persists. It runs beside the campaign's one operation in
   * flight, not as one: nothing waits for it.
   */
  private standBy(follower: Following): void {
    const settle = (held: boolean) => {
      if (this.phase !== follower) return;
      follower.standby = held ? 'held' : 'full';
      this.listen(follower, held);
    };
    const places = this.powers.standby;
    if (places === undefined) return settle(true);
    try {
      const held = places.standBy(this.slot, this.holder, this.reading(), this.timing.expiresAfter, standbyPlaces);
      if (isPromiseLike(held)) held.then(settle, () => undefined);
      else settle(held);
    } catch {
      // As it was.
    }
  }

  /**
   * A standby watches the tenure it found in the slot, where the store can tell it of that
   * tenure's end before its expiry (SQLite: a leader on this host whose process is gone).
   * The other followers rely on the standbys.
   */
  private watchLeader(follower: Following, lease: LeaseRecord, expiresIn: number): void {
    const proof = this.powers.tenureProof;
    const wanted = proof !== undefined && follower.standby === 'held' && stands(expiresIn) && lease.holder !== this.holder;
    const current = follower.leaderWatch;
    if (wanted && current !== undefined && sameTenure(lease, current.lease) && current.watch.watching) return;
    this.unwatchLeader(follower);
    if (!wanted) return;
    const tenure = this.lease(lease.term, lease.holder);
    const watch = proof.watchTenure(tenure, () => this.onTenureEnded(follower, tenure));
    follower.leaderWatch = { lease: tenure, watch };
  }

  private unwatchLeader(follower: Following): void {
    follower.leaderWatch?.watch.close();
    follower.leaderWatch = undefined;
  }

  /**
   * The store proved that the leader's tenure ended before its lease did (its process is
   * gone): this follower tries at once to take the slot from exactly that holder and term.
   */
  private onTenureEnded(follower: Following, tenure: Lease): void {
    if (follower.leaderWatch?.lease !== tenure) return; // no longer watched
    follower.leaderWatch = undefined;
    if (this.phase !== follower) return;
    follower.ended = tenure;
    if (this.flights.busy) return void (follower.changedInFlight = true);
    // Every standby has the proof at the same moment, as with a release.
    this.attemptInCrowd();
  }

  private listen(follower: Following, on: boolean): void {
    const changes = this.powers.changes;
    if (on && follower.stopListening === undefined && changes !== undefined) {
      follower.stopListening = changes.watch((origin, change) => this.onChange(follower, origin, change), { renewals: true });
    } else if (!on && follower.stopListening !== undefined) {
      follower.stopListening();
      follower.stopListening = undefined;
    }
  }

  private readonly renew = (): void => {
    const leading = this.phase;
    if (leading.name !== 'leading') return;
    const { term } = leading;
    const sentExactly = this.scheduler.now(); // for how long it took; the belief counts in whole ms
    const sentAt = Math.floor(sentExactly);
    const { expiresAfter } = this.timing;
    this.flights.run(
      // Even after a pause past the lease, this succeeds only if nobody took the slot
      // meanwhile (the store checks holder and term), so the tenure may go on.
      () => this.store.renew(this.lease(term), this.reading(), expiresAfter),
      (renewed) => {
        this.observer.timed?.('renewal', this.scheduler.now() - sentExactly);
        this.observer.answered?.();
        this.lockRetry.clear();
        if (this.phase !== leading) return; // ended meanwhile
        if (!renewed) return this.lose(leading, 'superseded');
        // An answer that came after the lease it wrote ran out (the process paused inside the
        // call, say) is never believed: the belief ended meanwhile, and others may lead now.
        if (this.now() >= sentAt + expiresAfter) return this.lose(leading, 'expired');
        const renewedTo: Leading = { name: 'leading', term, expiresAt: sentAt + expiresAfter };
        this.phase = renewedTo;
        if (this.emit({ type: 'renewed', ...this.lease(term), expiresAt: renewedTo.expiresAt })) this.renewInTime(renewedTo);
      },
      (error) => {
        if (this.phase !== leading) return;
        if (error instanceof LockTaken) return this.renewWhenFree(leading, error);
        this.onStoreError(error, () => this.scheduleRenewal(leading, this.timing.retryEvery));
      },
    );
    // An answer still to come: the lease in force runs out meanwhile, if it comes to that.
    if (this.flights.busy && this.phase === leading) this.scheduleExpiry(leading);
  };

  /**
   * The renewal found the lock taken: tried again a few ms later, and again, until the lease
   * in force ends (then `lost`, `expired`, on time: nothing waited). Every `retryEvery` of it
   * is reported as an `error` event.
   */
  private renewWhenFree(leading: Leading, error: LockTaken): void {
    const now = this.now();
    const step = this.lockRetry.next(now);
    const lockedFor = this.lockRetry.lockedFor(now);
    if (lockedFor >= this.timing.retryEvery) {
      this.lockRetry.restart(now);
      if (!this.emit({ type: 'error', slot: this.slot, holder: this.holder, error: lockedOut(error, lockedFor) })) return;
    }
    this.scheduleRenewal(leading, step);
  }

  /**
   * After a lease was written: renews every `renewEvery`, or halfway through what is left of
   * the lease if an answer came so late that less than that is left (a store across the
   * network, an acquisition that waited behind a lock). Where answers come at once, a fresh
   * lease always has more than `renewEvery` left.
   */
  private renewInTime(leading: Leading): void {
    const untilExpiry = leading.expiresAt - this.now();
    const { renewEvery } = this.timing;
    this.scheduleRenewal(leading, untilExpiry > renewEvery ? renewEvery : Math.floor(untilExpiry / 2));
  }

  /** Renews after `interval`, unless the lease ends first: then the tenure ends at its expiry. */
  private scheduleRenewal(leading: Leading, interval: number): void {
    const untilExpiry = leading.expiresAt - this.now();
    if (interval < untilExpiry) this.wake(this.renew, interval);
    else this.scheduleExpiry(leading);
  }

  private scheduleExpiry(leading: Leading): void {
    const untilExpiry = leading.expiresAt - this.now();
    if (untilExpiry > 0) this.wake(this.expire, untilExpiry);
    else this.expire();
  }

  private readonly expire = (): void => {
    const leading = this.phase;
    if (leading.name === 'leading') this.lose(leading, 'expired');
  };

  private lose(leading: Leading, reason: LostReason): void {
    const lease = this.lease(leading.term);
    this.phase = following();
    this.lockRetry.clear(); // a follower's attempts start an episode of their own
    const goesOn = this.emit({ type: 'lost', ...lease, reason });
    // Only now, with the belief gone everywhere it was told, may the store say so.
    this.powers.tenureProof?.endTenure(lease);
    if (goesOn) this.wake(this.attempt, 0);
  }

  private onStoreError(error: unknown, carryOn: () => void): void {
    if (error instanceof LeadershipError && error.transient) {
      if (this.emit({ type: 'error', slot: this.slot, holder: this.holder, error })) carryOn();
    } else {
      // The observer's teardown stops this campaign, releasing the lease if it leads.
      this.observer.error(error);
    }
  }

  /** Emits, then says whether the campaign still runs: a subscriber may stop it from `next`. */
  private emit(event: LeadershipEvent): boolean {
    this.observer.next(event);
    return this.phase.name !== 'stopped';
  }

  /**
   * Sets the one timer of this campaign, replacing any other. An action that would touch
   * the store while an operation is in flight waits for it; the expiry never waits.
   */
  private wake(action: () => void, delay: number): void {
    this.timer?.unsubscribe();
    if (this.phase.name === 'stopped') return;
    this.flights.cancelQueued();
    const run = action === this.expire ? action : () => this.flights.whenSettled(action);
    this.timer = this.scheduler.schedule(run, delay);
  }

  /**
   * Whether this candidate believes, at this very moment, that it holds tenure `term`. A
   * lease that ran out ends the belief here and now, `lost` included, even if the timer that
   * would have ended it has not fired yet: a process resumed from a pause runs the timers
   * that fell due in the order they were set, and a job's may come before the campaign's.
   */
  believes(term: number): boolean {
    const leading = this.phase;
    if (leading.name !== 'leading' || leading.term !== term) return false;
    if (this.now() < leading.expiresAt) return true;
    this.timer?.unsubscribe();
    this.lose(leading, 'expired');
    return false;
  }

  /** The clocks, read now, for the store. */
  private reading(): ClockReading {
    return readClocks(this.scheduler);
  }

  private lease(term: number, holder = this.holder): Lease {
    return { slot: this.slot, holder, term };
  }

  private now(): number {
    return Math.floor(this.scheduler.now());
  }
}

function nothing(): void {}

/** The report of a lock that another connection kept for `lockedFor` ms while this campaign tried again. */
function lockedOut(error: LockTaken, lockedFor: number): LeadershipError {
  return new LeadershipError(
    'DATABASE_BUSY',
    `Another connection held the lock at every try for ${lockedFor} ms; trying again (${error.message})`,
    { cause: error },
  );
}

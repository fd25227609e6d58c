import { Eventually, isPromiseLike } from '../../core/eventually';
import type { ChangeOrigin, ChangeSignals, ClockReading, LeaseChange, StandbyPlaces } from '../../store/lease-store';
import { LockRetry } from '../../pacing/lock-retry';

/**
 * How many followers of a slot stand by: they watch for releases and take the slot within
 * a few ms of one, while the others rely on them and only poll. A release that woke every
 * follower would cost more CPU than the handoff takes once there are dozens of them.
 */
const standbyPlaces = 3;

/** What one follower knows of its standby place, and how it listens for changes. */
export class Standing {
  /**
   * What it last learnt of the standby places: it holds one, every one is held by others
   * (who watch for it), or it does not know (not asked yet, or the asking failed).
   */
  place: 'held' | 'full' | 'unknown' = 'unknown';
  /** While it listens for changes: how to stop. */
  stopListening: (() => void) | undefined;

  /** Whether it stands by: it holds a standby place, or listens as one (a place it may hold, to give up at the end). */
  get standsBy(): boolean {
    return this.place === 'held' || this.stopListening !== undefined;
  }
}

/** What the aid asks of the campaign it serves. */
export interface StandbyCandidate {
  readonly slot: number;
  readonly holder: string;
  readonly timing: { readonly expiresAfter: number; readonly retryEvery: number };
  now(): number;
  reading(): ClockReading;
}

/**
 * Standby places and word of changes, as one campaign's follower uses them: the first few
 * followers of a slot hold a place and listen for releases; the others rely on them. With
 * no places, every follower stands by; with no word of changes, followers poll. It keeps its
 * own state and sets no timer.
 */
export class StandbyAid {
  /** Steps for a standby place whose claim found the lock taken: an episode of its own, as attempts get through meanwhile. */
  private readonly placeRetry = new LockRetry();

  constructor(
    private readonly places: StandbyPlaces | undefined,
    private readonly changes: ChangeSignals | undefined,
    private readonly campaign: StandbyCandidate,
  ) {}

  /** Whether the store has standby places, to give up at the end. */
  get hasPlaces(): boolean {
    return this.places !== undefined;
  }

  /** Gives up this candidate's place, if it holds one. */
  leave(): Eventually<void> {
    return this.places?.leaveStandby(this.campaign.slot, this.campaign.holder);
  }

  /** Whether `standing` hears of changes now: it listens, and the store's watch works. */
  hears(standing: Standing): boolean {
    return standing.stopListening !== undefined && this.changes?.isWatching() === true;
  }

  /** Whether `standing` may poll as seldom as the leader renews: others (the standbys), or itself as one that hears, watch for releases. */
  relies(standing: Standing): boolean {
    return standing.place === 'full' || (standing.place === 'held' && this.changes?.isWatching() === true);
  }

  /**
   * Keeps or takes a standby place for `standing`, which lasts a lease and is renewed at each
   * attempt; `settled` gets whether it holds one, at once or later, unless the follower is
   * gone by then (`current` says whether it still follows). Best effort: on an error,
   * things stay as they were. A follower that has not learnt of the places yet and found the
   * lock taken (followers that start together claim at the same moment) has no place and
   * watches nothing, so waiting for its next poll would leave it blind for `retryEvery`: it
   * answers the ms until the next attempt should claim again, for up to `retryEvery` of steps.
   */
  claim(standing: Standing, current: () => boolean, settled: (held: boolean) => void): number | undefined {
    const { places, campaign } = this;
    const settle = (held: boolean) => {
      if (!current()) return;
      standing.place = held ? 'held' : 'full';
      settled(held);
    };
    if (places === undefined) return void settle(true);
    try {
      const held = places.standBy(campaign.slot, campaign.holder, campaign.reading(), campaign.timing.expiresAfter, standbyPlaces);
      if (isPromiseLike(held)) held.then(settle, () => undefined);
      else settle(held);
      this.placeRetry.clear();
    } catch (error) {
      // As it was.
      if (standing.place === 'unknown') return this.placeRetry.stepAfter(error, campaign.now(), campaign.timing.retryEvery);
    }
    return undefined;
  }

  /**
   * Starts or stops listening for changes; whether it started (a release between the read
   * that found the slot held and now went unheard).
   */
  listen(standing: Standing, on: boolean, onChange: (origin: ChangeOrigin, change: LeaseChange) => void): boolean {
    const { changes } = this;
    if (on && standing.stopListening === undefined && changes !== undefined) {
      standing.stopListening = changes.watch(onChange, { renewals: true });
      return true;
    }
    if (!on && standing.stopListening !== undefined) {
      standing.stopListening();
      standing.stopListening = undefined;
    }
    return false;
  }
}

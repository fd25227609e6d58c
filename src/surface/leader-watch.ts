import { Subscriber, SchedulerLike, Subscription } from 'rxjs';
import { LeaseObservation } from '../pacing/lease-observation';
import { LockRetry } from '../pacing/lock-retry';
import { OneInFlight } from '../pacing/one-in-flight';
import { LeadershipError } from '../core/leadership-error';
import { readClocks } from '../core/monotonic-scheduler';
import { stands } from '../store/lease-check';
import { LeaseReader, LeaseView } from '../store/lease-store';
import type { InstrumentRecording } from './instrument';
import type { LeaderState } from './leader-state';

/** Where a watch reads, how often, on which clock, and what it tells. */
export interface WatchSetting {
  readonly store: LeaseReader;
  readonly slot: number;
  readonly pollEvery: number;
  readonly scheduler: SchedulerLike;
  readonly recording: InstrumentRecording<LeaderState> | undefined;
}

/**
 * One subscription of `observeLeader`: it looks at the slot, then again at its next poll,
 * when the store reports a change, or just after the live lease it saw can end, and emits
 * the slot's state each time it changes. One look is in flight at a time; a look asked for
 * meanwhile runs once that one lands, in place of its answer, and a change reported
 * meanwhile makes the next look come at once: either way the answer may predate the change.
 * Transient errors are skipped (a lock met is tried again within ms); others end the stream.
 */
export class LeaderWatch {
  private timer: Subscription | undefined;
  private last: LeaderState | undefined;
  private readonly observation = new LeaseObservation();
  private readonly lockRetry = new LockRetry();
  private readonly inFlight = new OneInFlight((error) => this.subscriber.error(error));
  private unwatch: (() => void) | undefined;
  /** Set when the store reports a change while a look is in flight: its answer may predate the change, so another look follows it at once. */
  private changedMeanwhile = false;

  constructor(
    private readonly setting: WatchSetting,
    private readonly subscriber: Subscriber<LeaderState>,
  ) {}

  start(): void {
    // A change reported by the store comes from inside another operation: look right after it.
    this.unwatch = this.setting.store.capabilities?.changes?.watch(() => this.changed(), { elections: true, renewals: true });
    this.look();
  }

  stop(): void {
    this.timer?.unsubscribe();
    this.unwatch?.();
    this.setting.recording?.end();
  }

  private readonly look = (): void => {
    this.timer?.unsubscribe();
    const { store, slot, scheduler } = this.setting;
    this.inFlight.whenSettled(() => {
      this.changedMeanwhile = false;
      this.inFlight.run(
        () => store.look(slot, readClocks(scheduler)),
        (view) => this.landed(() => this.seen(view)),
        (error) => this.landed(() => this.failed(error)),
      );
    });
  };

  private changed(): void {
    // A timer set now would be replaced by the next one that the answer on its way sets.
    if (this.inFlight.busy) this.changedMeanwhile = true;
    else this.lookIn(0);
  }

  /** The next look in `ms`, or at once if a change was reported since the last one went out. */
  private lookIn(ms: number): void {
    this.timer?.unsubscribe();
    this.timer = this.setting.scheduler.schedule(this.look, this.changedMeanwhile ? 0 : ms);
  }

  /** An answer is handled unless the stream ended, or a newer look is due. */
  private landed(handle: () => void): void {
    if (!this.subscriber.closed && !this.inFlight.hasQueued) handle();
  }

  private seen(view: LeaseView | undefined): void {
    const { slot, pollEvery, scheduler, recording } = this.setting;
    this.lockRetry.clear();
    recording?.answered?.();
    const expiresIn = view === undefined ? -1 : this.observation.remaining(view, scheduler.now());
    const state = stateOf(slot, view, expiresIn);
    if (this.last === undefined || !sameState(state, this.last)) {
      this.last = state;
      recording?.record(state);
      this.subscriber.next(state);
    }
    // A live lease ends when its time is up unless renewed: look again just after, if sooner.
    const untilExpiry = state.expiresAt === null ? pollEvery : expiresIn + 1;
    if (!this.subscriber.closed) this.lookIn(Math.max(1, Math.min(pollEvery, untilExpiry)));
  }

  private failed(error: unknown): void {
    const { pollEvery, scheduler, recording } = this.setting;
    if (!(error instanceof LeadershipError && error.transient)) {
      recording?.error?.(error);
      return this.subscriber.error(error);
    }
    recording?.failed?.(error);
    // A lock met (the store never waits for one): a few ms later, for up to `pollEvery`.
    this.lookIn(this.lockRetry.stepAfter(error, scheduler.now(), pollEvery) ?? pollEvery);
  }
}

function stateOf(slot: number, view: LeaseView | undefined, expiresIn: number): LeaderState {
  return view !== undefined && stands(expiresIn)
    ? { slot, holder: view.lease.holder, term: view.lease.term, expiresAt: view.lease.expiresAt, advertised: view.lease.advertised ?? null }
    : { slot, holder: null, term: null, expiresAt: null, advertised: null };
}

function sameState(a: LeaderState, b: LeaderState): boolean {
  return a.holder === b.holder && a.term === b.term && a.expiresAt === b.expiresAt && a.advertised === b.advertised;
}

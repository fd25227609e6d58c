import { leaseStoreOf } from '../store/given-database';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';
import { Observable, Subscriber, Subscription } from 'rxjs';
import { ulid } from 'ulid';
import { Campaign, CampaignObserver } from '../campaign/campaign';
import { monotonicScheduler } from '../core/monotonic-scheduler';
import { BelieverEnrolment, enrollBeliever, enrollCandidate, Enrolment } from './candidate-registry';
import { expectAdvertised, LeadershipConfig, resolveLeadershipConfig } from './leadership-config';
import { beginAll, CandidateRecording } from './instrument';
import { Lease, LeadershipEvent } from '../core/leadership-event';
import { LeaseStore } from '../store/lease-store';

/**
 * Campaigns for leadership of a slot in a shared SQLite database (a better-sqlite3
 * `Database`) or in the store of another database (`postgresLeaseStore(pool)` from
 * `observe-leadership/postgres`), and tells everything that happens as events.
 *
 * The Observable is cold: each subscription is one candidate with its own holder, and
 * nothing touches the database before it subscribes. It tries to acquire at once, then
 * keeps campaigning on timers: `elected` when it takes the slot, `renewed` at each
 * renewal, `lost` when its tenure ends (it then campaigns again: the stream never
 * completes by itself), `error` for transient database errors. Errors that cannot heal
 * (closed or read-only database, a table of another shape) end the stream with a
 * `LeadershipError`. Unsubscribing stops the timers and releases the lease at once, so that
 * another candidate can take the slot without waiting for it to expire (with PostgreSQL the
 * release starts at once; `store.settled()` waits for its end).
 *
 * Bad config throws here, synchronously, with the field, what was expected and what it got.
 *
 * @example
 * ```ts
 * import Database from 'better-sqlite3';
 * import { observeLeadership } from 'observe-leadership';
 *
 * const db = new Database('jobs.db', { timeout: 1_000 });
 * db.pragma('journal_mode = WAL');
 *
 * const subscription = observeLeadership(db, { renewEvery: 5_000, expiresAfter: 15_000 })
 *   .subscribe((event) => console.log(event.type, 'term' in event ? event.term : ''));
 * process.once('SIGTERM', () => subscription.unsubscribe()); // releases the lease
 * ```
 */
export function observeLeadership(db: SqliteDatabaseLike | LeaseStore, config?: LeadershipConfig): Observable<LeadershipEvent> {
  const store = leaseStoreOf('db', db, 'store');
  const {
    slot,
    holder: fixedHolder,
    scheduler = monotonicScheduler,
    instrument,
    stepDown,
    advertise,
    ...timing
  } = resolveLeadershipConfig(config);

  return new Observable<LeadershipEvent>((subscriber) => {
    const holder = fixedHolder ?? ulid();
    let enrolment: Enrolment;
    try {
      enrolment = enrollCandidate(store, slot, holder);
    } catch (error) {
      subscriber.error(error);
      return;
    }
    const recording = beginAll(instrument, { slot, holder, ...timing, now: () => scheduler.now() });
    let believer: BelieverEnrolment | undefined;
    const told = recording ? recorded(subscriber, recording) : subscriber;
    const campaign = new Campaign(
      store,
      slot,
      holder,
      timing,
      marking(told, (lease) => believer?.told(lease)),
      scheduler,
    );
    believer = enrollBeliever(store, slot, holder, campaign);
    // As takeUntil's notifier: its error ends the stream, its completion nothing.
    const steppingDown = stepDown?.subscribe({ next: () => campaign.stepDown(), error: (error: unknown) => subscriber.error(error) });
    const advertising = advertiseThrough(campaign, advertise, (error) => subscriber.error(error));
    // Added before the first attempt: a subscriber that stops at `elected` (take(1)) stops
    // the campaign from inside that attempt, and the lease must still be released.
    subscriber.add(() => {
      steppingDown?.unsubscribe();
      advertising?.unsubscribe();
      enrolment.stopping();
      campaign.stop(() => enrolment.left());
      believer?.leave();
      recording?.end();
    });
    // A notifier that failed at once ended the stream already: nothing to start.
    enrolment.whenFree(() => {
      if (!subscriber.closed) campaign.start();
    });
  });
}

/**
 * Tells `campaign` what to advertise: the option's one value, or each value of its
 * Observable, checked as the option is (a bad one ends the stream, through `fail`).
 * Subscribed before the first attempt: a value it has at once goes with the first tenure.
 */
function advertiseThrough(
  campaign: Campaign,
  advertise: string | Observable<string> | undefined,
  fail: (error: unknown) => void,
): Subscription | undefined {
  if (typeof advertise === 'string') return void campaign.advertise(advertise);
  return advertise?.subscribe({
    next: (value) => {
      try {
        campaign.advertise(expectAdvertised(value));
      } catch (error) {
        fail(error);
      }
    },
    error: fail,
  });
}

/** What a campaign tells `told`, each lease first marked as its election's (`mark`), for `holdsLease` to ask that election about it. */
function marking(told: CampaignObserver, mark: (lease: Lease) => void): CampaignObserver {
  return {
    next: (event) => {
      if ('term' in event) mark(event);
      told.next(event);
    },
    error: (error) => told.error(error),
    answered: () => told.answered?.(),
    timed: (operation, ms) => told.timed?.(operation, ms),
  };
}

/** What a campaign tells `subscriber`, told to the instruments' `recording` first while the subscriber listens. */
function recorded(subscriber: Subscriber<LeadershipEvent>, recording: Required<CandidateRecording>): CampaignObserver {
  return {
    next: (event: LeadershipEvent) => {
      if (!subscriber.closed) {
        if (event.type === 'error') recording.failed(event.error);
        recording.record(event);
      }
      subscriber.next(event);
    },
    error: (error: unknown) => {
      if (!subscriber.closed) recording.error?.(error);
      subscriber.error(error);
    },
    answered: () => {
      if (!subscriber.closed) recording.answered();
    },
    timed: (operation: 'renewal', ms: number) => {
      if (!subscriber.closed) recording.timed(operation, ms / 1000);
    },
  };
}

import { isObservable, Observable, SchedulerLike } from 'rxjs';
import { expectInstrument, LeadershipInstrument } from './instrument';
import { argumentError, expectConfig, expectInteger, expectObject, expectScheduler, expectString, MAX_DELAY } from '../core/argument-check';
import type { Lease } from '../core/leadership-event';

/** Options of {@link observeLeadership}. Every duration is in milliseconds. */
export interface LeadershipConfig {
  /**
   * How often the leader renews its lease.
   * @default 30_000 (as the original worker)
   */
  renewEvery?: number;
  /**
   * How long a lease lasts after it is written. Must be greater than `renewEvery`; the
   * difference is how long a leader survives renewals that fail (a busy database) before
   * it steps down.
   * @default 60_000 (as the original worker)
   */
  expiresAfter?: number;
  /**
   * How often a follower tries again when nobody can watch for releases, and how soon a
   * leader retries a renewal that failed. A follower that sees a live lease also aims its
   * next attempt just after that lease's expiry, so a crashed leader whose death nobody
   * could prove (see docs/how-it-works.md) is replaced at expiry
   * whatever this value; while a few followers stand by for releases, followers poll only
   * every `renewEvery`. One attempt reads two tiny tables: microseconds of work.
   * @default 1_000
   */
  retryEvery?: number;
  /**
   * Which election: independent elections share one table, one row per slot.
   * @default 0
   */
  slot?: number;
  /**
   * Who this candidate is, stored in the lease row. It must be unique among live
   * candidates of a slot: two candidates with one holder would both lead. Two live
   * subscriptions of one process with the same database, slot and holder are refused
   * (`HOLDER_IN_USE`); one that follows an unsubscribed one starts once that one's last
   * operation was answered. Across processes, that is up to you.
   * @default a fresh ULID for each subscription
   */
  holder?: string;
  /**
   * Where all time is read (`scheduler.now()`) and all timers are set. The default reads a
   * monotonic clock (Unix ms at the process's start, then monotonic), so that a wall clock
   * stepped by NTP, a resumed VM or `date -s` neither stretches nor cuts a belief, and on
   * SQLite, the host's monotonic clock judges the leases. A scheduler of your own (a
   * `TestScheduler` in tests) is a clock of its own: other candidates judge its leases by
   * the wall clock, as the original worker does.
   * @default asyncScheduler's timers on a monotonic clock
   */
  scheduler?: SchedulerLike;
  /**
   * Records every candidate this stream makes, and what it emits (one instrument, or a
   * list): `leadershipHealth()` answers health checks, `leadershipMetrics()` of
   * `observe-leadership/metrics` reports through OpenTelemetry.
   * @default none
   */
  instrument?: LeadershipInstrument | readonly LeadershipInstrument[];
  /**
   * Asks the candidate to step down and stay a candidate, as `takeUntil`'s notifier asks a
   * stream to end: each value it emits while the candidate leads ends the tenure (`lost`,
   * reason `'stepped-down'`), releases the lease at once, and has the candidate sit out
   * for `sitOut` ms: it makes no attempt meanwhile, so that it does not win straight back,
   * and follows as before as soon as it sees another candidate lead. Values emitted while
   * it does not lead are ignored. An error of the notifier ends the stream with it. For a
   * leader whose own dependencies are unhealthy (etcd's `Resign`, Curator's
   * `interruptLeadership`); to stop campaigning, end the subscription instead.
   * @default none
   */
  stepDown?: Observable<unknown>;
  /**
   * How long a candidate that stepped down sits out, at most: it campaigns again once this
   * much has passed without another candidate taking the slot (a lone candidate takes it
   * back then). The default, a lease's length, gives every live follower time to see the
   * slot free and take it, whatever its polling.
   * @default `expiresAfter`
   */
  sitOut?: number;
  /**
   * How long a candidate that took an expired lease (neither released nor proven over: its
   * holder may have been paused, or cut off, rather than dead) waits before `elected`,
   * holding and renewing the lease meanwhile, as Chubby's and Consul's lock-delay: what the
   * old leader sent out just before it stopped (an HTTP call, a message: what `fenced` cannot
   * cover) lands before the new one acts. It adds this much to such a failover, and nothing
   * to a handoff or a takeover on proof of death.
   * @default 0
   */
  lockDelay?: number;
  /**
   * What followers need to reach this candidate when it leads (a URL, say: etcd's
   * `Proclaim`, Consul's lock value), at most 1,024 characters: stored with each tenure it
   * wins, carried by its `elected` and `renewed` events, shown by `observeLeader` and the
   * command line. An Observable changes it over time: a leader writes each new value at once
   * with a renewal, in the same tenure and term; before its first value, nothing is
   * advertised. A value that is not such a string ends the stream with the `RangeError` or
   * `TypeError` a bad option throws. Anybody who can read the database can read it: never a
   * secret.
   * @default nothing
   */
  advertise?: string | Observable<string>;
  /**
   * How much this candidate prefers to lead: a whole number from 0 to 1,000,000. When the
   * slot is free (released, handed to anybody, or its leader gone), candidates of a lower
   * priority let a standing candidate of a higher one take it first: they make their attempt
   * `retryEvery` later, which is what a failover costs them more when that candidate is not
   * there after all; while it is, it takes the slot within ms, as a standby does. A candidate
   * above 0 declares its priority (a row of `worker_leadership_candidate` on SQLite, a
   * notification on PostgreSQL) and always listens for releases. For the host next to the
   * database, or the newest version during a rolling deploy.
   * @default 0 (all equal)
   */
  priority?: number;
  /**
   * Whether a leader gives way to a candidate of a higher `priority` once that one stands by:
   * it ends its tenure (`lost`, `preempted`), releases the lease for that candidate, and sits
   * out. Only for a strictly higher priority, and only once the leader has led for
   * `expiresAfter`: two candidates never flap, and the slot changes hands this way at most
   * once a lease. It costs a handoff (a few ms without a leader) each time it acts.
   * @default false
   */
  preempt?: boolean;
}

/** The configuration with every default applied and every value checked. */
export interface ResolvedLeadershipConfig {
  readonly renewEvery: number;
  readonly expiresAfter: number;
  readonly retryEvery: number;
  readonly slot: number;
  /** `undefined` when each subscription draws its own. */
  readonly holder: string | undefined;
  /** `undefined` when the store's kind decides. */
  readonly scheduler: SchedulerLike | undefined;
  readonly instrument: LeadershipInstrument | readonly LeadershipInstrument[] | undefined;
  readonly stepDown: Observable<unknown> | undefined;
  readonly sitOut: number;
  readonly lockDelay: number;
  readonly advertise: string | Observable<string> | undefined;
  readonly priority: number;
  readonly preempt: boolean;
}

export const MAX_HOLDER_LENGTH = 256;

/** Checks a lease given to `fenced` or `holdsLease`: an object with the slot, holder and term an event carries. */
export function expectLease(lease: Lease): void {
  expectObject('lease', lease);
  expectInteger('lease.slot', lease.slot, 0, Number.MAX_SAFE_INTEGER);
  expectString('lease.holder', lease.holder, MAX_HOLDER_LENGTH);
  expectInteger('lease.term', lease.term, 1, Number.MAX_SAFE_INTEGER);
}
/** The highest priority: whole numbers are compared exactly by every store. */
const MAX_PRIORITY = 1_000_000;
/** The longest value a candidate may advertise, in characters: room for any URL a follower needs. */
const MAX_ADVERTISED_LENGTH = 1_024;

/** Checks one value to advertise (see `LeadershipConfig.advertise`), as the option is checked. */
export function expectAdvertised(value: unknown): string {
  return expectString('advertise', value, MAX_ADVERTISED_LENGTH);
}
const knownOptions = [
  'renewEvery',
  'expiresAfter',
  'retryEvery',
  'slot',
  'holder',
  'scheduler',
  'instrument',
  'stepDown',
  'sitOut',
  'lockDelay',
  'advertise',
  'priority',
  'preempt',
];

/** Checks `config` once, up front, and throws a `TypeError` or `RangeError` naming the field. */
export function resolveLeadershipConfig(config: LeadershipConfig = {}): ResolvedLeadershipConfig {
  expectConfig(config, knownOptions);
  const { renewEvery = 30_000, expiresAfter = 60_000, retryEvery = 1_000, slot = 0, holder, scheduler, instrument, stepDown } = config;
  const { sitOut = expiresAfter, lockDelay = 0, advertise, priority = 0, preempt = false } = config;

  expectInteger('renewEvery', renewEvery, 1, MAX_DELAY);
  expectInteger('expiresAfter', expiresAfter, 2, MAX_DELAY);
  expectInteger('retryEvery', retryEvery, 1, MAX_DELAY);
  if (renewEvery >= expiresAfter) {
    // Either may be a default the user never wrote: say which, or the message blames a value nobody set.
    const limit = `less than \`expiresAfter\` (${expiresAfter}${config.expiresAfter === undefined ? ', its default' : ''})`;
    throw argumentError(RangeError, 'renewEvery', limit, renewEvery, config.renewEvery === undefined ? 'its default' : undefined);
  }
  expectInteger('slot', slot, 0, Number.MAX_SAFE_INTEGER);
  if (holder !== undefined) expectString('holder', holder, MAX_HOLDER_LENGTH);
  if (scheduler !== undefined) expectScheduler('scheduler', scheduler);
  expectInstrument(instrument, 'observeLeadership');
  if (stepDown !== undefined && !isObservable(stepDown)) throw argumentError(TypeError, 'stepDown', 'an Observable', stepDown);
  expectInteger('sitOut', sitOut, 0, MAX_DELAY);
  expectInteger('lockDelay', lockDelay, 0, MAX_DELAY);
  if (advertise !== undefined && !isObservable(advertise)) {
    if (typeof advertise !== 'string') throw argumentError(TypeError, 'advertise', 'a string or an Observable of strings', advertise);
    expectAdvertised(advertise);
  }
  expectInteger('priority', priority, 0, MAX_PRIORITY);
  if (typeof preempt !== 'boolean') throw argumentError(TypeError, 'preempt', 'a boolean', preempt);
  return {
    renewEvery,
    expiresAfter,
    retryEvery,
    slot,
    holder,
    scheduler,
    instrument,
    stepDown,
    sitOut,
    lockDelay,
    advertise,
    priority,
    preempt,
  };
}

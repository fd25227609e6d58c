import type { Attributes, Meter, ObservableResult } from '@opentelemetry/api';
import { expectConfig, expectObject } from '../core/argument-check';
import { performance } from 'node:perf_hooks';
import type { CandidateRecording, InstrumentRecording, LeaderInstrument, LeadershipInstrument } from './instrument';
import type { LeaderState } from './leader-state';

/** Options of {@link leadershipMetrics} and {@link leaderMetrics}. */
export interface LeadershipMetricsOptions {
  /**
   * Where the instruments are made: the application's SDK decides where they go.
   * @default metrics.getMeter('observe-leadership') of `@opentelemetry/api`, loaded then
   */
  meter?: Meter;
  /** Attributes added to every measurement (which service, which queue). @default none */
  attributes?: Attributes;
}

/** The reasons a tenure ends that every loss counter starts at 0 with (see `LostReason`). */
const lossReasons = ['superseded', 'expired', 'stepped-down', 'handed-off', 'preempted'] as const;

/** The codes of `error` events, which every error counter starts at 0 with. */
const transientCodes = ['DATABASE_BUSY', 'DATABASE_ERROR'] as const;

/** Renewals take tens of µs on a SQLite file in WAL, ms in a rollback journal or across a network, seconds on a struggling one. */
const renewalBuckets = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
];

/** One slot as an instrument reports it: its labels, the subscriptions that report on it now, and what it keeps across them. */
interface Slot<Member, Kept> {
  readonly labels: Attributes;
  readonly members: Set<Member>;
  readonly kept: Kept;
}

/**
 * What both instruments are made of: OpenTelemetry instruments whose every series is one
 * slot's, and the slots they saw. A slot is never forgotten: the SDK would export a series
 * it stopped being given with its last value, forever, so every gauge is given a value for
 * every slot at every collection, and every counter starts at 0 when its slot is first seen.
 * What sets the two apart is only what they declare with it (candidates, or observers).
 */
class SlotMetrics<Member, Kept> {
  private readonly meter: Meter;
  private readonly attributes: Attributes;
  private readonly slots = new Map<number, Slot<Member, Kept>>();
  private readonly firstSeen: Array<(labels: Attributes) => void> = [];

  constructor(
    options: LeadershipMetricsOptions,
    /** What a slot keeps across its subscriptions, made when it is first seen. */
    private readonly keep: () => Kept,
  ) {
    expectConfig(options, ['meter', 'attributes']);
    if (options.meter !== undefined) expectObject('meter', options.meter, 'an OpenTelemetry Meter');
    if (options.attributes !== undefined) expectObject('attributes', options.attributes, 'OpenTelemetry attributes');
    this.meter = options.meter ?? defaultMeter();
    this.attributes = options.attributes ?? {};
  }

  /** A gauge whose value for each slot, at each collection, is `value` of it. */
  gauge(name: string, description: string, unit: string, value: (slot: Slot<Member, Kept>) => number): void {
    this.meter.createObservableGauge(name, { description, unit }).addCallback((result) => this.observeEach(result, value));
  }

  /** A counter whose total for each slot, at each collection, is `total` of it (which never falls). */
  observedCounter(name: string, description: string, unit: string, total: (slot: Slot<Member, Kept>) => number): void {
    this.meter.createObservableCounter(name, { description, unit }).addCallback((result) => this.observeEach(result, total));
  }

  /** A counter, at 0 for each slot (and each of `variants`' attributes) from when the slot is first seen. */
  counter(name: string, description: string, unit: string, variants: Attributes[] = [{}]): (by: number, labels: Attributes) => void {
    const counter = this.meter.createCounter(name, { description, unit });
    this.firstSeen.push((labels) => variants.forEach((variant) => counter.add(0, { ...labels, ...variant })));
    return (by, labels) => counter.add(by, labels);
  }

  histogram(name: string, description: string, unit: string, buckets: number[]): (value: number, labels: Attributes) => void {
    const histogram = this.meter.createHistogram(name, { description, unit, advice: { explicitBucketBoundaries: buckets } });
    return (value, labels) => histogram.record(value, labels);
  }

  /** Adds `member` to `slot`'s subscriptions: the slot, and how to take the member off again. */
  join(slot: number, member: Member): { slot: Slot<Member, Kept>; leave: () => void } {
    let known = this.slots.get(slot);
    if (known === undefined) {
      known = { labels: { ...this.attributes, 'leadership.slot': slot }, members: new Set(), kept: this.keep() };
      this.slots.set(slot, known);
      for (const start of this.firstSeen) start(known.labels);
    }
    const { members } = known;
    members.add(member);
    return { slot: known, leave: () => void members.delete(member) };
  }

  private observeEach(result: ObservableResult, value: (slot: Slot<Member, Kept>) => number): void {
    for (const slot of this.slots.values()) result.observe(value(slot), slot.labels);
  }
}

/** OpenTelemetry's global meter, loaded only by those who give no meter: the main entry never loads it. */
function defaultMeter(): Meter {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const api = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  return api.metrics.getMeter('observe-leadership');
}

/**
 * An instrument for `observeLeadership`'s `instrument` option that reports, through
 * OpenTelemetry, the candidates of this process per slot: whether one of them leads and
 * how many campaign, and the term of the one that leads (gauges), the tenures they began
 * and lost (counters, losses by reason), transient errors (a counter, by code), and how
 * long each renewal took (a histogram, in seconds, timed to the microsecond).
 *
 * Every series is per slot, not per holder, and exists from the first subscription to the
 * slot on, with its zero, for as long as the process lives: a process whose candidates all
 * stepped down still says 0, a restarted worker's counters start again from 0 under the same
 * labels (so `increase()` counts its elections, as a reset), and a new holder at each
 * subscription adds no series: the process (Prometheus' `instance`) is who leads, and
 * `observe-leadership status` names the holder. One instrument serves every candidate of the process.
 *
 * @example
 * ```ts
 * import { metrics } from '@opentelemetry/api';
 * import { observeLeadership } from 'observe-leadership';
 * import { leadershipMetrics } from 'observe-leadership/metrics';
 *
 * const instrument = leadershipMetrics({ meter: metrics.getMeter('jobs') });
 * observeLeadership(db, { instrument }).subscribe();
 * ```
 */
export function leadershipMetrics(options: LeadershipMetricsOptions = {}): LeadershipInstrument {
  /** Each candidate of the slot subscribed now, with its term while it leads. */
  const metrics = new SlotMetrics<{ term?: number }, undefined>(options, () => undefined);
  /** The term of the tenure a candidate of the slot holds, 0 while none leads. */
  const termOf = ({ members }: { members: ReadonlySet<{ term?: number }> }) => Math.max(0, ...[...members].map((c) => c.term ?? 0));
  metrics.gauge('leadership.leader', 'Whether a candidate of this process leads the slot (1) or not (0)', '{leader}', (slot) =>
    termOf(slot) > 0 ? 1 : 0,
  );
  metrics.gauge('leadership.candidates', 'Candidates of this process campaigning for the slot', '{candidate}', (slot) => slot.members.size);
  metrics.gauge('leadership.term', 'The term of the tenure a candidate of this process holds (0 while none leads)', '{term}', termOf);
  const elected = metrics.counter('leadership.elections', 'Tenures the candidates of this process began', '{election}');
  const lost = metrics.counter(
    'leadership.losses',
    'Tenures the candidates of this process lost, by reason',
    '{loss}',
    lossReasons.map((reason) => ({ 'leadership.loss.reason': reason })),
  );
  const failed = metrics.counter(
    'leadership.errors',
    'Transient database errors, by code',
    '{error}',
    transientCodes.map((code) => ({ 'error.type': code })),
  );
  const renewed = metrics.histogram('leadership.renewal.duration', 'From sending a renewal to its answer', 's', renewalBuckets);

  return {
    for: 'observeLeadership',
    begin: ({ slot: number }): CandidateRecording => {
      const candidate: { term?: number } = {};
      const { slot, leave } = metrics.join(number, candidate);
      const { labels } = slot;
      return {
        record: (event) => {
          if (event.type === 'elected') {
            candidate.term = event.term;
            elected(1, labels);
          } else if (event.type === 'lost') {
            candidate.term = undefined;
            lost(1, { ...labels, 'leadership.loss.reason': event.reason });
          } else if (event.type === 'error') {
            failed(1, { ...labels, 'error.type': event.error.code });
          }
        },
        timed: (_, seconds) => renewed(seconds, labels),
        end: leave,
      };
    },
  };
}

/**
 * What an observed slot keeps across its watches: the latest state any of them read, the
 * highest term seen (an election is a term above it, counted once however many watches see
 * it), and its time without a leader, which only grows.
 */
interface ObservedSlot {
  state?: LeaderState;
  highestTerm: number;
  /** Whether the next state read is the first since the slot was last watched: the tenure it finds may be old. */
  fresh: boolean;
  leaderlessMs: number;
  /** Since when (`performance.now()`, which a stepped wall clock does not move) the slot is watched and has no leader. */
  leaderlessSince?: number;
}

/** The slot's time without a leader, in seconds, up to `now`. */
function leaderlessSeconds(slot: ObservedSlot, now: number): number {
  return (slot.leaderlessMs + (slot.leaderlessSince === undefined ? 0 : now - slot.leaderlessSince)) / 1000;
}

/** Closes the slot's leaderless stretch at `now` and opens another if `leaderless`. */
function countLeaderless(slot: ObservedSlot, now: number, leaderless: boolean): void {
  if (slot.leaderlessSince !== undefined) slot.leaderlessMs += now - slot.leaderlessSince;
  slot.leaderlessSince = leaderless ? now : undefined;
}

/**
 * An instrument for `observeLeader`'s `instrument` option that reports, through
 * OpenTelemetry, what the watches of each slot see, as one: whether the slot has a leader
 * and its term, as the latest read of any watch says (gauges; 0 for both once no watch of
 * the slot is left), the elections seen (a counter from 0: a term above every one seen
 * before, after the slot's first read; counted once however many watches see it), and the
 * time the slot went without a leader while watched (a counter, in seconds, that never falls,
 * whichever watches come and go).
 */
export function leaderMetrics(options: LeadershipMetricsOptions = {}): LeaderInstrument {
  const metrics = new SlotMetrics<object, ObservedSlot>(options, () => ({ highestTerm: 0, fresh: true, leaderlessMs: 0 }));
  const watched = (slot: Slot<object, ObservedSlot>) => (slot.members.size > 0 ? slot.kept.state : undefined);
  metrics.gauge('leadership.observed.leader', 'Whether the slot has a leader (1) or not (0), as watched', '{leader}', (slot) =>
    watched(slot)?.holder == null ? 0 : 1,
  );
  metrics.gauge(
    'leadership.observed.term',
    "The leader's term, as watched (0 while nobody leads)",
    '{term}',
    (slot) => watched(slot)?.term ?? 0,
  );
  metrics.observedCounter('leadership.observed.leaderless.time', 'Time the slot went without a leader while watched', 's', (slot) =>
    leaderlessSeconds(slot.kept, performance.now()),
  );
  const elections = metrics.counter('leadership.observed.elections', 'New tenures seen while watched', '{election}');

  return {
    for: 'observeLeader',
    begin: ({ slot: number }): InstrumentRecording<LeaderState> => {
      const watch = {};
      const { slot, leave } = metrics.join(number, watch);
      const { kept } = slot;
      if (slot.members.size === 1) kept.fresh = true; // watched again after a while unwatched
      return {
        record: (state) => {
          if (state.term !== null && state.term > kept.highestTerm) {
            if (!kept.fresh) elections(1, slot.labels);
            kept.highestTerm = state.term;
          }
          kept.fresh = false;
          kept.state = state;
          countLeaderless(kept, performance.now(), state.holder === null);
        },
        end: () => {
          leave();
          if (slot.members.size === 0) countLeaderless(kept, performance.now(), false); // unwatched time is not counted
        },
      };
    },
  };
}

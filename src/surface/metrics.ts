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

/** The instruments' names; docs/metrics-and-health.md gives their types, units and attributes. */
const metricNames = {
  leader: 'leadership.leader',
  candidates: 'leadership.candidates',
  term: 'leadership.term',
  elections: 'leadership.elections',
  losses: 'leadership.losses',
  errors: 'leadership.errors',
  renewalDuration: 'leadership.renewal.duration',
  observedLeader: 'leadership.observed.leader',
  observedTerm: 'leadership.observed.term',
  observedElections: 'leadership.observed.elections',
  leaderless: 'leadership.observed.leaderless.time',
} as const;

/** The reasons a tenure ends that every loss counter starts at 0 with (see `LostReason`). */
const lossReasons = ['superseded', 'expired'] as const;

/** The codes of `error` events, which every error counter starts at 0 with. */
const transientCodes = ['DATABASE_BUSY', 'DATABASE_ERROR'] as const;

/**
 * The slots an instrument saw, each with its labels and the subscriptions that report on it
 * now. A slot is never forgotten: the SDK would export a series it stopped being given with
 * its last value, forever, so every gauge is given a value for every slot at every
 * collection. `first` runs once per slot, to start its counters at 0.
 */
class SlotSeries<M> {
  private readonly slots = new Map<number, { readonly labels: Attributes; readonly members: Set<M> }>();

  constructor(
    private readonly attributes: Attributes,
    private readonly first: (labels: Attributes) => void,
  ) {}

  /** Adds `member` to `slot`'s subscriptions: the slot's labels, and how to take it off again. */
  join(slot: number, member: M): { labels: Attributes; leave: () => void } {
    let known = this.slots.get(slot);
    if (known === undefined) {
      known = { labels: { ...this.attributes, 'leadership.slot': slot }, members: new Set() };
      this.slots.set(slot, known);
      this.first(known.labels);
    }
    const { labels, members } = known;
    members.add(member);
    return { labels, leave: () => void members.delete(member) };
  }

  /** Each slot ever seen, with its subscriptions now (none, once they all ended). */
  forEach(each: (labels: Attributes, members: ReadonlySet<M>) => void): void {
    for (const { labels, members } of this.slots.values()) each(labels, members);
  }
}

function meterOf(options: LeadershipMetricsOptions): { meter: Meter; attributes: Attributes } {
  expectConfig(options, ['meter', 'attributes']);
  if (options.meter !== undefined) expectObject('meter', options.meter, 'an OpenTelemetry Meter');
  if (options.attributes !== undefined) expectObject('attributes', options.attributes, 'OpenTelemetry attributes');
  return { meter: options.meter ?? defaultMeter(), attributes: options.attributes ?? {} };
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
  const { meter, attributes } = meterOf(options);
  const leader = meter.createObservableGauge(metricNames.leader, {
    description: 'Whether a candidate of this process leads the slot (1) or not (0)',
    unit: '{leader}',
  });
  const campaigning = meter.createObservableGauge(metricNames.candidates, {
    description: 'Candidates of this process campaigning for the slot',
    unit: '{candidate}',
  });
  const term = meter.createObservableGauge(metricNames.term, {
    description: 'The term of the tenure a candidate of this process holds (0 while none leads)',
    unit: '{term}',
  });
  const elections = meter.createCounter(metricNames.elections, {
    description: 'Tenures the candidates of this process began',
    unit: '{election}',
  });
  const losses = meter.createCounter(metricNames.losses, {
    description: 'Tenures the candidates of this process lost, by reason',
    unit: '{loss}',
  });
  const errors = meter.createCounter(metricNames.errors, { description: 'Transient database errors, by code', unit: '{error}' });
  const renewals = meter.createHistogram(metricNames.renewalDuration, {
    description: 'From sending a renewal to its answer',
    unit: 's',
    // From a SQLite file in WAL (tens of µs) and in a rollback journal (ms) to PostgreSQL
    // across a network (ms) and a struggling one (seconds).
    advice: {
      explicitBucketBoundaries: [
        0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
      ],
    },
  });
  /** Every slot a candidate of this process ever campaigned for, with the candidates campaigning now and their terms while they lead. */
  const slots = new SlotSeries<{ term?: number }>(attributes, (labels) => {
    // Each series with its zero from the start: a rate needs a first sample to grow from.
    elections.add(0, labels);
    for (const reason of lossReasons) losses.add(0, { ...labels, 'leadership.loss.reason': reason });
    for (const code of transientCodes) errors.add(0, { ...labels, 'error.type': code });
  });
  /** The term of the tenure a candidate of the slot holds, 0 while none leads. */
  const termOf = (candidates: ReadonlySet<{ term?: number }>) => Math.max(0, ...[...candidates].map((c) => c.term ?? 0));
  leader.addCallback((result: ObservableResult) =>
    slots.forEach((labels, candidates) => result.observe(termOf(candidates) > 0 ? 1 : 0, labels)),
  );
  campaigning.addCallback((result: ObservableResult) => slots.forEach((labels, candidates) => result.observe(candidates.size, labels)));
  term.addCallback((result: ObservableResult) => slots.forEach((labels, candidates) => result.observe(termOf(candidates), labels)));

  return {
    for: 'observeLeadership',
    begin: ({ slot }): CandidateRecording => {
      const candidate: { term?: number } = {};
      const { labels, leave } = slots.join(slot, candidate);
      return {
        record: (event) => {
          switch (event.type) {
            case 'elected':
              candidate.term = event.term;
              elections.add(1, labels);
              break;
            case 'lost':
              candidate.term = undefined;
              losses.add(1, { ...labels, 'leadership.loss.reason': event.reason });
              break;
            case 'error':
              errors.add(1, { ...labels, 'error.type': event.error.code });
              break;
          }
        },
        timed: (_, seconds) => renewals.record(seconds, labels),
        end: leave,
      };
    },
  };
}

/**
 * An instrument for `observeLeader`'s `instrument` option that reports, through
 * OpenTelemetry, what each watch sees: whether the slot has a leader and its term (gauges,
 * per slot; 0 for both once no watch of the slot is left), the elections it saw (a counter
 * from 0, per slot: a change of leader or term after its first read), and the time the slot
 * went without a leader while watched (a counter, in seconds, that grows while it has none).
 */
export function leaderMetrics(options: LeadershipMetricsOptions = {}): LeaderInstrument {
  const { meter, attributes } = meterOf(options);
  const present = meter.createObservableGauge(metricNames.observedLeader, {
    description: 'Whether the slot has a leader (1) or not (0), as watched',
    unit: '{leader}',
  });
  const term = meter.createObservableGauge(metricNames.observedTerm, {
    description: "The leader's term, as watched (0 while nobody leads)",
    unit: '{term}',
  });
  const leaderless = meter.createObservableCounter(metricNames.leaderless, {
    description: 'Time the slot went without a leader while watched',
    unit: 's',
  });
  const elections = meter.createCounter(metricNames.observedElections, {
    description: 'New tenures seen while watched',
    unit: '{election}',
  });
  interface Watch {
    state?: LeaderState;
    leaderlessMs: number;
    leaderlessSince?: number;
  }
  /** Every slot ever watched here, with its watches now. */
  const slots = new SlotSeries<Watch>(attributes, (labels) => elections.add(0, labels));
  /** The latest state of any watch of the slot (nobody leads once none watches: the SDK would repeat the last value forever). */
  const latest = (watches: ReadonlySet<Watch>): LeaderState | undefined =>
    [...watches].map((w) => w.state).find((state) => state !== undefined);
  present.addCallback((result: ObservableResult) =>
    slots.forEach((labels, watches) => result.observe(latest(watches)?.holder == null ? 0 : 1, labels)),
  );
  term.addCallback((result: ObservableResult) => slots.forEach((labels, watches) => result.observe(latest(watches)?.term ?? 0, labels)));
  // Time without a leader is counted on a clock that a stepped wall clock does not move.
  leaderless.addCallback((result: ObservableResult) => {
    const now = performance.now();
    slots.forEach((labels, watches) => {
      const [watch] = watches;
      if (watch !== undefined)
        result.observe((watch.leaderlessMs + (watch.leaderlessSince === undefined ? 0 : now - watch.leaderlessSince)) / 1000, labels);
    });
  });

  return {
    for: 'observeLeader',
    begin: ({ slot }): InstrumentRecording<LeaderState> => {
      const watch: Watch = { leaderlessMs: 0 };
      const { labels, leave } = slots.join(slot, watch);
      return {
        record: (state) => {
          // A tenure that began while watched: the one found at the first read may be old.
          const previous = watch.state;
          if (previous !== undefined && state.holder !== null && (state.holder !== previous.holder || state.term !== previous.term))
            elections.add(1, labels);
          const now = performance.now();
          if (watch.leaderlessSince !== undefined) watch.leaderlessMs += now - watch.leaderlessSince;
          watch.leaderlessSince = state.holder === null ? now : undefined;
          watch.state = state;
        },
        end: leave,
      };
    },
  };
}

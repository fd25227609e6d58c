import type { Attributes, Meter, ObservableResult } from '@opentelemetry/api';
import { expectConfig, expectObject } from './argument-check';
import { performance } from 'node:perf_hooks';
import { candidateClock } from './instrument';
import type { InstrumentRecording, LeaderInstrument, LeadershipInstrument } from './instrument';
import type { LeadershipEvent } from './leadership-event';
import type { LeaderState } from './observe-leader';

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
  term: 'leadership.term',
  elections: 'leadership.elections',
  losses: 'leadership.losses',
  errors: 'leadership.errors',
  renewalDuration: 'leadership.renewal.duration',
  observedLeader: 'leadership.observed.leader',
  observedTerm: 'leadership.observed.term',
  leaderless: 'leadership.observed.leaderless.time',
} as const;

function meterOf(options: LeadershipMetricsOptions): { meter: Meter; attributes: Attributes } {
  expectConfig(options, ['meter', 'attributes']);
  if (options.meter !== undefined) expectObject('meter', options.meter, 'an OpenTelemetry Meter');
  if (options.attributes !== undefined) expectObject('attributes', options.attributes, 'OpenTelemetry attributes');
  // Loaded only by those who give no meter: the main entry never loads it.
  const meter = options.meter ?? (require('@opentelemetry/api') as typeof import('@opentelemetry/api')).metrics.getMeter('observe-leadership');
  return { meter, attributes: options.attributes ?? {} };
}

/**
 * An instrument for `observeLeadership`'s `instrument` option that reports, through
 * OpenTelemetry, every candidate it is given: whether it leads and its term (gauges, per
 * slot and holder, from its subscription on, so a follower reports 0), the tenures it won
 * and lost (counters, losses by reason), its transient errors (a counter, by code), and how
 * long each renewal took (a histogram, in seconds). A candidate's gauges stop when its
 * subscription ends. One instrument can serve every candidate of the process.
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
  const leader = meter.createObservableGauge(metricNames.leader, { description: 'Whether this candidate leads the slot (1) or not (0)', unit: '{leader}' });
  const term = meter.createObservableGauge(metricNames.term, { description: "The term of this candidate's tenure, while it leads", unit: '{term}' });
  const elections = meter.createCounter(metricNames.elections, { description: 'Tenures this candidate began', unit: '{election}' });
  const losses = meter.createCounter(metricNames.losses, { description: 'Tenures this candidate lost, by reason', unit: '{loss}' });
  const errors = meter.createCounter(metricNames.errors, { description: 'Transient database errors, by code', unit: '{error}' });
  const renewals = meter.createHistogram(metricNames.renewalDuration, {
    description: 'From sending a renewal to its answer',
    unit: 's',
    // From a local SQLite file (under a ms) to a slow network (seconds).
    advice: { explicitBucketBoundaries: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] },
  });
  /** Every candidate subscribed now: its attributes, and its term while it leads. */
  const candidates = new Set<{ labels: Attributes; term?: number }>();
  leader.addCallback((result: ObservableResult) => {
    for (const { labels, term: current } of candidates) result.observe(current === undefined ? 0 : 1, labels);
  });
  term.addCallback((result: ObservableResult) => {
    for (const { labels, term: current } of candidates) if (current !== undefined) result.observe(current, labels);
  });

  return {
    for: 'observeLeadership',
    begin: (subject): InstrumentRecording<LeadershipEvent> => {
      const { slot, holder, expiresAfter } = subject;
      const now = candidateClock(subject);
      const candidate: { labels: Attributes; term?: number } = {
        labels: { ...attributes, 'leadership.slot': slot, 'leadership.holder': holder },
      };
      candidates.add(candidate);
      const { labels } = candidate;
      return {
        record: (event) => {
          switch (event.type) {
            case 'elected':
              candidate.term = event.term;
              elections.add(1, labels);
              break;
            case 'renewed':
              // Its lease ends `expiresAfter` after the renewal was sent.
              renewals.record(Math.max(0, now() + expiresAfter - event.expiresAt) / 1000, labels);
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
        end: () => void candidates.delete(candidate),
      };
    },
  };
}

/**
 * An instrument for `observeLeader`'s `instrument` option that reports, through
 * OpenTelemetry, what each watch sees: whether the slot has a leader and its term (gauges,
 * per slot, with the holder), and the time the slot went without a leader while watched (a
 * counter, in seconds, that grows while it has none).
 */
export function leaderMetrics(options: LeadershipMetricsOptions = {}): LeaderInstrument {
  const { meter, attributes } = meterOf(options);
  const present = meter.createObservableGauge(metricNames.observedLeader, { description: 'Whether the slot has a leader (1) or not (0), as watched', unit: '{leader}' });
  const term = meter.createObservableGauge(metricNames.observedTerm, { description: "The leader's term, as watched", unit: '{term}' });
  const leaderless = meter.createObservableCounter(metricNames.leaderless, { description: 'Time the slot went without a leader while watched', unit: 's' });
  /** Every watch now: its latest state, the leaderless ms before it, and since when it has had no leader (if so). */
  const watches = new Set<{ slot: number; state?: LeaderState; leaderlessMs: number; leaderlessSince?: number }>();
  const labels = (state: LeaderState): Attributes => ({
    ...attributes,
    'leadership.slot': state.slot,
    ...(state.holder === null ? {} : { 'leadership.holder': state.holder }),
  });
  present.addCallback((result: ObservableResult) => {
    for (const { state } of watches) if (state) result.observe(state.holder === null ? 0 : 1, labels(state));
  });
  term.addCallback((result: ObservableResult) => {
    for (const { state } of watches) if (state?.term != null) result.observe(state.term, labels(state));
  });
  // Time without a leader is counted on a clock that a stepped wall clock does not move.
  leaderless.addCallback((result: ObservableResult) => {
    const now = performance.now();
    for (const { slot, leaderlessMs, leaderlessSince } of watches) {
      result.observe((leaderlessMs + (leaderlessSince === undefined ? 0 : now - leaderlessSince)) / 1000, { ...attributes, 'leadership.slot': slot });
    }
  });

  return {
    for: 'observeLeader',
    begin: ({ slot }): InstrumentRecording<LeaderState> => {
      const watch: { slot: number; state?: LeaderState; leaderlessMs: number; leaderlessSince?: number } = { slot, leaderlessMs: 0 };
      watches.add(watch);
      return {
        record: (state) => {
          const now = performance.now();
          if (watch.leaderlessSince !== undefined) watch.leaderlessMs += now - watch.leaderlessSince;
          watch.leaderlessSince = state.holder === null ? now : undefined;
          watch.state = state;
        },
        end: () => void watches.delete(watch),
      };
    },
  };
}

import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { Subscription } from 'rxjs';
import { eventually } from '../test-kit/eventually';
import { freePort } from '../test-kit/postgres-server';
import { handOff, LeaderState, LeadershipEvent, LeadershipInstrument, observeLeader, observeLeadership } from '../src';
import { leaderMetrics, leadershipMetrics } from '../src/surface/metrics';
import { temporaryDatabase, TemporaryDatabase } from './support/temporary-database';

// The OpenTelemetry SDK with its Prometheus exporter, as an application wires them, and a
// real scrape of /metrics over HTTP.
// With better-sqlite3's defaults (journal_mode delete) and as we advise (WAL).
describe.each(['delete', 'wal'] as const)('metrics through OpenTelemetry, scraped by Prometheus (journal_mode %s)', (journal) => {
  const timing = { renewEvery: 100, expiresAfter: 1_000, retryEvery: 100 };
  let file: TemporaryDatabase;
  let exporter: PrometheusExporter;
  let provider: MeterProvider;
  let port: number;
  let subscriptions: Subscription[];
  let instrument: LeadershipInstrument | undefined;

  beforeEach(async () => {
    file = temporaryDatabase(journal);
    port = await freePort();
    exporter = new PrometheusExporter({ host: '127.0.0.1', port, preventServerStart: true });
    await exporter.startServer();
    provider = new MeterProvider({ readers: [exporter] });
    subscriptions = [];
    instrument = undefined;
  });
  afterEach(async () => {
    subscriptions.forEach((subscription) => subscription.unsubscribe());
    await provider.shutdown();
    file.remove();
  });

  const scrape = async () => {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(response.status).toBe(200);
    return response.text();
  };
  /** The value of the sample of `name` whose labels include all of `labels`, or undefined. */
  const sample = (text: string, name: string, labels: Record<string, string | number> = {}) => {
    const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((label) => l.includes(label)));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  const candidate = (holder: string, preference: { priority?: number; preempt?: boolean } = {}) => {
    const events: LeadershipEvent[] = [];
    instrument ??= leadershipMetrics({ meter: provider.getMeter('spec'), attributes: { 'service.name': 'jobs' } });
    const subscription = observeLeadership(file.open(), { ...timing, ...preference, holder, instrument }).subscribe((event) =>
      events.push(event),
    );
    subscriptions.push(subscription);
    return {
      subscription,
      leads: () => events.filter((e) => e.type === 'elected' || e.type === 'lost').at(-1)?.type === 'elected',
      events,
    };
  };

  it('shows per slot whether this process leads, its term, elections, losses and renewal latency, each from its zero; after a handoff they move', async () => {
    const a = candidate('a');
    await eventually('a leads', () => a.leads());
    const b = candidate('b');
    await eventually('a renewal', () => a.events.some((e) => e.type === 'renewed'));
    const before = await scrape();
    expect(sample(before, 'leadership_leader', { leadership_slot: 0, service_name: 'jobs' })).toBe(1);
    expect(before).not.toMatch(/^leadership_leader\{[^}]*leadership_holder/m); // one series per slot, whoever leads
    expect(sample(before, 'leadership_candidates', { leadership_slot: 0 })).toBe(2);
    expect(sample(before, 'leadership_term', { leadership_slot: 0 })).toBe(1);
    expect(sample(before, 'leadership_elections_total', { leadership_slot: 0 })).toBe(1);
    expect(sample(before, 'leadership_losses_total', { leadership_loss_reason: 'expired' })).toBe(0);
    expect(sample(before, 'leadership_losses_total', { leadership_loss_reason: 'superseded' })).toBe(0);
    // Timed finer than a millisecond (a renewal of a local file in WAL takes tens of µs),
    // with buckets from 10 µs to show it.
    const renewals = sample(before, 'leadership_renewal_duration_count', { leadership_slot: 0 }) as number;
    const seconds = sample(before, 'leadership_renewal_duration_sum', { leadership_slot: 0 }) as number;
    expect(renewals).toBeGreaterThan(0);
    expect(seconds).toBeGreaterThan(0);
    expect(Number.isInteger(Math.round(seconds * 1e9) / 1e6)).toBe(false); // not whole ms
    expect(sample(before, 'leadership_renewal_duration_bucket', { le: '0.00001' })).toBeDefined();

    // a hands over, and campaigns again as a follower.
    a.subscription.unsubscribe();
    await eventually('b leads', () => b.leads());
    candidate('a');
    const after = await scrape();
    expect(sample(after, 'leadership_leader', { leadership_slot: 0 })).toBe(1);
    expect(sample(after, 'leadership_term', { leadership_slot: 0 })).toBe(2);
    expect(after).not.toMatch(/leadership_holder/); // who leads is the process (Prometheus' instance)
    expect(sample(after, 'leadership_elections_total', { leadership_slot: 0 })).toBe(2);

    // Every candidate steps down: the process still says so.
    subscriptions.forEach((subscription) => subscription.unsubscribe());
    const none = await scrape();
    expect(sample(none, 'leadership_leader', { leadership_slot: 0 })).toBe(0);
    expect(sample(none, 'leadership_candidates', { leadership_slot: 0 })).toBe(0);
    expect(sample(none, 'leadership_term', { leadership_slot: 0 })).toBe(0);
  });

  it('counts a handoff among the losses by its reason, handed-off', async () => {
    const a = candidate('a');
    await eventually('a leads', () => a.leads());
    const b = candidate('b');
    expect(sample(await scrape(), 'leadership_losses_total', { leadership_loss_reason: 'handed-off' })).toBe(0);
    await handOff(file.open({ readonly: true }), { to: 'b' });
    await eventually('b leads', () => b.leads());
    const after = await scrape();
    expect(sample(after, 'leadership_losses_total', { leadership_loss_reason: 'handed-off' })).toBe(1);
    expect(sample(after, 'leadership_losses_total', { leadership_loss_reason: 'stepped-down' })).toBe(0);
    expect(sample(after, 'leadership_elections_total', { leadership_slot: 0 })).toBe(2);
  });

  it('counts a leader that gave way to a higher priority among the losses by its reason, preempted', async () => {
    const a = candidate('a', { preempt: true });
    await eventually('a leads', () => a.leads());
    const b = candidate('b', { priority: 3 });
    await eventually('b leads', () => b.leads(), 10_000);
    const after = await scrape();
    expect(sample(after, 'leadership_losses_total', { leadership_loss_reason: 'preempted' })).toBe(1);
    expect(sample(after, 'leadership_losses_total', { leadership_loss_reason: 'handed-off' })).toBe(0);
  });

  it('shows who leads as an observer sees it, and counts the time without a leader', async () => {
    const states: LeaderState[] = [];
    const watching = leaderMetrics({ meter: provider.getMeter('spec') });
    subscriptions.push(observeLeader(file.open(), { pollEvery: 50, instrument: watching }).subscribe((state) => states.push(state)));
    await eventually('nobody leads', () => states.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const nobody = await scrape();
    expect(sample(nobody, 'leadership_observed_leader', { leadership_slot: 0 })).toBe(0);
    expect(sample(nobody, 'leadership_observed_leaderless_time_total', { leadership_slot: 0 })).toBeGreaterThanOrEqual(0.3);
    const a = candidate('a');
    await eventually('seen leading', () => states.at(-1)?.holder === 'a');
    const led = await scrape();
    expect(sample(led, 'leadership_observed_leader', { leadership_slot: 0 })).toBe(1);
    expect(sample(led, 'leadership_observed_term', { leadership_slot: 0 })).toBe(1);
    expect(sample(led, 'leadership_observed_elections_total', { leadership_slot: 0 })).toBe(1);
    a.subscription.unsubscribe();
    const b = candidate('b');
    await eventually('seen b leading', () => states.at(-1)?.holder === 'b');
    expect(sample(await scrape(), 'leadership_observed_elections_total', { leadership_slot: 0 })).toBe(2);
    b.subscription.unsubscribe();
    await eventually('seen nobody leading', () => states.at(-1)?.holder === null);
    const released = await scrape();
    expect(sample(released, 'leadership_observed_leader', { leadership_slot: 0 })).toBe(0); // no series of an old leader stays at 1
    expect(released.split('\n').filter((line) => line.startsWith('leadership_observed_leader{'))).toHaveLength(1);
  });

  it('reports a slot watched twice as one slot: the latest state read, each election once, and time without a leader that never falls', async () => {
    const watching = leaderMetrics({ meter: provider.getMeter('spec') });
    const watch = () => {
      const states: LeaderState[] = [];
      const subscription = observeLeader(file.open(), { pollEvery: 50, instrument: watching }).subscribe((state) => states.push(state));
      subscriptions.push(subscription);
      return { states, subscription };
    };
    const older = watch();
    await eventually('the older watch has read', () => older.states.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 300)); // time without a leader, seen by the older watch alone
    const newer = watch();
    const a = candidate('a');
    await eventually('both see a', () => older.states.at(-1)?.holder === 'a' && newer.states.at(-1)?.holder === 'a');
    const led = await scrape();
    expect(sample(led, 'leadership_observed_leader', { leadership_slot: 0 })).toBe(1);
    expect(sample(led, 'leadership_observed_elections_total', { leadership_slot: 0 })).toBe(1); // one election, seen twice
    const leaderlessBefore = sample(led, 'leadership_observed_leaderless_time_total', { leadership_slot: 0 }) as number;
    expect(leaderlessBefore).toBeGreaterThanOrEqual(0.3);

    // The older watch ends while the newer goes on: the counter goes on from where it was.
    older.subscription.unsubscribe();
    const afterOlder = await scrape();
    expect(sample(afterOlder, 'leadership_observed_leaderless_time_total', { leadership_slot: 0 })).toBeGreaterThanOrEqual(
      leaderlessBefore,
    );

    // The newer one's state is the latest: a release it sees shows at once.
    a.subscription.unsubscribe();
    await eventually('the newer watch sees nobody', () => newer.states.at(-1)?.holder === null);
    const released = await scrape();
    expect(sample(released, 'leadership_observed_leader', { leadership_slot: 0 })).toBe(0);
    expect(sample(released, 'leadership_observed_term', { leadership_slot: 0 })).toBe(0);
  });
});

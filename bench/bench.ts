/**
 * npm run bench [-- --smoke] [-- --only SCENARIOS] [-- --out FOLDER]
 *
 * Measures failover and cost with this library and, side by side in the same run, with a
 * baseline that does what the original worker does (its statements, polling at a fixed
 * interval). Prints one table, writes results.json and latency.svg into FOLDER (bench/ by
 * default; a temporary folder for --smoke, the tiny run that CI makes so that this script
 * cannot rot, and for --only, which runs some of the scenarios: a comma-separated list of
 * handoff, takeover, scale, idle, statements, postgres).
 *
 * `postgres` runs the handoff and takeover trials of this library on PostgreSQL (a server
 * started for the run, or the one OBSERVE_LEADERSHIP_TEST_DATABASE_URL names), to be read
 * beside the same trials on SQLite.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { eventually } from '../chaos/eventually';
import { mulberry32 } from '../chaos/fault-plan';
import { WorkerRecord } from '../chaos/history';
import { seedStatements, seedTable } from '../chaos/seed-statements';
import { PostgresTarget } from '../chaos/chaos-database';
import { PostgresServer, startPostgresServer } from '../chaos/postgres-server';
import { openDatabase } from '../chaos/worker';
import { sleep, stopWorkers, WorkerKind, WorkerProcess } from '../chaos/worker-process';
import { sqliteLeaseStore } from '../src/store/sqlite/sqlite-lease-store';
import { Pool } from 'pg';
import { renderChart } from './chart';

interface Timing {
  renewEvery: number;
  expiresAfter: number;
  retryEvery: number;
}

/** The library's defaults, which the original worker shares (retryEvery aside: it has none). */
const defaults: Timing = { renewEvery: 30_000, expiresAfter: 60_000, retryEvery: 1_000 };
/** Crash takeover waits for the lease: a one-second lease keeps the trials short. */
const shortLease: Timing = { renewEvery: 300, expiresAfter: 1_000, retryEvery: 1_000 };

export interface Distribution {
  samples: number[];
  p50: number;
  p99: number;
}

export interface Comparison {
  scenario: string;
  unit: string;
  ours: Distribution;
  baseline: Distribution;
}

function distribution(samples: number[]): Distribution {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  return { samples, p50: at(0.5), p99: at(0.99) };
}

/** Worker processes of one kind on one fresh database file, or one fresh PostgreSQL schema. */
class Cluster {
  readonly processes: WorkerProcess[] = [];
  readonly file: string | undefined;

  constructor(
    readonly kind: WorkerKind,
    readonly timing: Timing,
    folder: string,
    readonly postgres?: PostgresTarget,
  ) {
    if (postgres) return;
    this.file = join(mkdtempSync(join(folder, `${kind}-`)), 'bench.db');
    openDatabase(this.file, 1_000).close(); // in WAL mode before the workers start
  }

  spawn(): WorkerProcess {
    const name = `${this.kind}${this.processes.length + 1}`;
    const options = { file: this.file, postgres: this.postgres, ...this.timing };
    const worker = new WorkerProcess(name, this.kind, options, () => undefined, (text) => process.stderr.write(text));
    this.processes.push(worker);
    return worker;
  }

  async start(count: number): Promise<void> {
    const started = Array.from({ length: count }, () => this.spawn());
    await eventually('every worker campaigning', () => started.every((w) => w.records.some((r) => r.type === 'subscribed')), 120_000);
    await this.leader();
  }

  alive(): WorkerProcess[] {
    return this.processes.filter((w) => w.alive);
  }

  leader(): Promise<WorkerProcess> {
    return eventually('a leader', () => this.alive().find((w) => w.leading.has(0)), 120_000);
  }

  /** The first `elected` reported at or after `since` by any process but `except`. */
  elected(since: number, except: WorkerProcess): Promise<WorkerRecord> {
    return eventually(
      'a new leader',
      () =>
        this.processes
          .filter((w) => w !== except)
          .flatMap((w) => w.records)
          .find((r) => r.type === 'elected' && r.at >= since),
      120_000,
    );
  }

  errors(): number {
    return this.processes.flatMap((w) => w.records).filter((r) => r.type === 'error').length;
  }

  stop(): Promise<void> {
    return stopWorkers(this.processes);
  }
}

/** Graceful handoff: the leader releases; time from its release to the next `elected`. */
async function handoffs(cluster: Cluster, trials: number, random: () => number): Promise<number[]> {
  const latencies: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const leader = await cluster.leader();
    // At a random point of the followers' polling, so that the baseline's phases do not
    // line up with the trials.
    await sleep(random() * cluster.timing.retryEvery);
    const mark = Date.now();
    leader.send('unsubscribe');
    const released = await eventually('the release', () => leader.records.find((r) => r.type === 'unsubscribed' && r.at >= mark));
    const elected = await cluster.elected(released.at, leader);
    latencies.push(elected.at - released.at);
    leader.send('subscribe');
    await eventually('the old leader campaigning again', () => leader.records.find((r) => r.type === 'subscribed' && r.at >= mark));
    await sleep(20);
  }
  return latencies;
}

/** Crash takeover: SIGKILL the leader at a random point of its renewal cycle; time to the next `elected`. */
async function takeovers(cluster: Cluster, trials: number, random: () => number): Promise<{ fromKill: number[]; pastExpiry: number[] }> {
  const fromKill: number[] = [];
  const pastExpiry: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const leader = await cluster.leader();
    await sleep(random() * cluster.timing.renewEvery);
    const killedAt = Date.now();
    leader.signal('SIGKILL');
    await leader.exited;
    const elected = await cluster.elected(killedAt, leader);
    const lastExpiry = Math.max(...leader.records.filter((r) => r.expiresAt !== undefined).map((r) => r.expiresAt!));
    fromKill.push(elected.at - killedAt);
    pastExpiry.push(elected.at - lastExpiry);
    const replacement = cluster.spawn();
    await eventually('the replacement campaigning', () => replacement.records.some((r) => r.type === 'subscribed'), 60_000);
  }
  return { fromKill, pastExpiry };
}

/** Idle CPU in % of one core: the leader, and followers with and without a standby place. */
export interface IdleCost {
  leader: number;
  standby: number;
  polling: number;
  /** Every process measured: what it was, and its % of a core. */
  processes: Array<{ role: 'leader' | 'standby' | 'polling'; percent: number }>;
}

/** Enough processes for followers of both kinds: a leader, the standby places, and one more. */
const idleProcesses = 5;

/**
 * CPU used by idle processes, in % of one core, over `seconds`, after `warmUp` seconds: for
 * a minute after start-up a Node.js process still compiles and collects garbage, several
 * times more than it then uses idle. Followers are averaged by kind (the original worker's
 * all poll); a kind that no process has is NaN.
 */
async function idleCost(cluster: Cluster, warmUp: number, seconds: number): Promise<IdleCost> {
  const leader = await cluster.leader();
  const usage = async (worker: WorkerProcess) => {
    const mark = Date.now();
    worker.send('usage');
    return eventually('usage', () => worker.records.find((r) => r.type === 'usage' && r.at >= mark)) as Promise<
      WorkerRecord & { cpu: number; uptime: number; standby?: boolean }
    >;
  };
  await sleep(warmUp * 1000);
  const workers = cluster.alive();
  const before = await Promise.all(workers.map(usage));
  await sleep(seconds * 1000);
  const after = await Promise.all(workers.map(usage));
  const measured = workers.map((worker, i) => ({
    worker,
    standby: after[i].standby === true,
    percent: ((after[i].cpu - before[i].cpu) / 1000 / (after[i].uptime - before[i].uptime)) * 100,
  }));
  const processes = measured.map(({ worker, standby, percent }) => ({
    role: worker === leader ? ('leader' as const) : standby ? ('standby' as const) : ('polling' as const),
    percent,
  }));
  const mean = (role: string) => {
    const values = processes.filter((p) => p.role === role).map((p) => p.percent);
    return values.reduce((a, b) => a + b, 0) / values.length;
  };
  return { leader: mean('leader'), standby: mean('standby'), polling: mean('polling'), processes };
}

/** The cost of one statement group, in µs, in this process, on a WAL file; and the worst single call, in ms. */
function statementCosts(folder: string, calls: number) {
  const db = openDatabase(join(mkdtempSync(join(folder, 'statements-')), 'bench.db'), 50);
  db.exec(seedTable);
  const store = sqliteLeaseStore(db);
  const seed = seedStatements(db, 'rust', 60_000);
  const otherSeed = seedStatements(db, 'other', 60_000);
  const time = (operation: (i: number) => void) => {
    for (let i = 0; i < 100; i++) operation(-1 - i); // warm up: prepared statements, JIT
    const durations: number[] = [];
    for (let i = 0; i < calls; i++) {
      const start = performance.now();
      operation(i);
      durations.push(performance.now() - start);
    }
    const sorted = [...durations].sort((a, b) => a - b);
    return {
      meanMicros: (durations.reduce((a, b) => a + b, 0) / calls) * 1000,
      p99Millis: sorted[Math.floor(calls * 0.99)],
      p999Millis: sorted[Math.floor(calls * 0.999)],
      worstMillis: sorted[calls - 1],
    };
  };
  const now = Date.now();
  store.acquire(0, 'a', now, 60_000);
  const term = store.read(0)!.term;
  const results = {
    ours: {
      renew: time((i) => store.renew({ slot: 0, holder: 'a', term }, now + i, 60_000)),
      followerAttempt: time(() => store.acquire(0, 'b', now, 60_000)),
      acquire: time((i) => store.acquire(1, 'a', now + i, 60_000)),
    },
    baseline: {} as Record<string, { meanMicros: number; p99Millis: number; p999Millis: number; worstMillis: number }>,
  };
  store.release({ slot: 0, holder: 'a', term: store.read(0)!.term });
  seed.tryAcquire(now);
  results.baseline = {
    renew: time((i) => seed.renew(now + i)),
    followerAttempt: time(() => otherSeed.tryAcquire(now)),
  };
  db.close();
  return results;
}

async function serverVersion(url: string): Promise<string> {
  const pool = new Pool({ connectionString: url, max: 1 });
  try {
    return `PostgreSQL ${(await pool.query('SHOW server_version')).rows[0].server_version}`;
  } finally {
    await pool.end();
  }
}

async function compare(
  scenario: string,
  run: (kind: WorkerKind) => Promise<number[]>,
): Promise<Comparison> {
  const ours = distribution(await run('candidate'));
  const baseline = distribution(await run('seed'));
  return { scenario, unit: 'ms', ours, baseline };
}

const scenarios = ['handoff', 'takeover', 'scale', 'idle', 'statements', 'postgres'] as const;
type Scenario = (typeof scenarios)[number];

function parseArguments(argv: string[]) {
  const valueOf = (flag: string) => {
    const index = argv.indexOf(flag);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const smoke = argv.includes('--smoke');
  const only = valueOf('--only')?.split(',');
  const unknown = only?.filter((name) => !(scenarios as readonly string[]).includes(name));
  if (unknown?.length) throw new Error(`Unknown scenario ${unknown.join(', ')}: expected some of ${scenarios.join(', ')}`);
  const out = valueOf('--out') ?? (smoke || only ? mkdtempSync(join(os.tmpdir(), 'bench-')) : join(__dirname, '..', '..', 'bench'));
  return { smoke, out, runs: (scenario: Scenario) => only === undefined || only.includes(scenario) };
}

async function main(): Promise<void> {
  const { smoke, out, runs } = parseArguments(process.argv.slice(2));
  const folder = mkdtempSync(join(os.tmpdir(), 'observe-leadership-bench-'));
  const size = smoke
    ? { processes: 3, trials: 3, takeoverTrials: 2, scaleProcesses: 6, scaleTrials: 2, idleWarmUp: 1, idleSeconds: 1, calls: 200 }
    : { processes: 4, trials: 40, takeoverTrials: 20, scaleProcesses: 64, scaleTrials: 15, idleWarmUp: 60, idleSeconds: 120, calls: 20_000 };
  const random = mulberry32(7);
  const log = (line: string) => console.log(line);
  const busyErrors: Record<string, number> = {};

  const withCluster = async <T>(
    kind: WorkerKind,
    timing: Timing,
    count: number,
    body: (cluster: Cluster) => Promise<T>,
    postgres?: PostgresTarget,
  ) => {
    const cluster = new Cluster(kind, timing, folder, postgres);
    try {
      await cluster.start(count);
      return await body(cluster);
    } finally {
      await cluster.stop();
    }
  };

  log(`benchmark${smoke ? ' (smoke)' : ''}: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node.js ${process.version}`);
  const comparisons: Comparison[] = [];
  if (runs('handoff')) {
    comparisons.push(
      await compare(`graceful handoff, ${size.processes} processes`, (kind) =>
        withCluster(kind, defaults, size.processes, (cluster) => handoffs(cluster, size.trials, random)),
      ),
    );
    log(`handoff done`);
  }
  if (runs('takeover')) {
    const takeover: Record<WorkerKind, { fromKill: number[]; pastExpiry: number[] }> = {} as never;
    for (const kind of ['candidate', 'seed'] as const) {
      takeover[kind] = await withCluster(kind, shortLease, size.processes, (cluster) => takeovers(cluster, size.takeoverTrials, random));
    }
    comparisons.push({
      scenario: `crash takeover (SIGKILL), expiresAfter ${shortLease.expiresAfter} ms`,
      unit: 'ms',
      ours: distribution(takeover.candidate.fromKill),
      baseline: distribution(takeover.seed.fromKill),
    });
    comparisons.push({
      scenario: '  of which past the lease expiry',
      unit: 'ms',
      ours: distribution(takeover.candidate.pastExpiry),
      baseline: distribution(takeover.seed.pastExpiry),
    });
    log(`takeover done`);
  }
  if (runs('scale')) {
    comparisons.push(
      await compare(`graceful handoff, ${size.scaleProcesses} processes`, (kind) =>
        withCluster(kind, defaults, size.scaleProcesses, async (cluster) => {
          const errorsBefore = cluster.errors();
          const latencies = await handoffs(cluster, size.scaleTrials, random);
          busyErrors[kind] = cluster.errors() - errorsBefore;
          return latencies;
        }),
      ),
    );
    log(`scale done`);
  }
  // Both sides at once: idle, they hardly disturb each other, and it halves the wait.
  const idle = runs('idle')
    ? await Promise.all(
        (['candidate', 'seed'] as const).map((kind) =>
          withCluster(kind, defaults, idleProcesses, (cluster) => idleCost(cluster, size.idleWarmUp, size.idleSeconds)),
        ),
      ).then(([ours, baseline]) => ({ ours, baseline }))
    : undefined;
  const statements = runs('statements') ? statementCosts(folder, size.calls) : undefined;

  // The same trials on PostgreSQL, each cluster in a fresh schema of one server.
  let postgres: { server: string; handoff: Distribution; takeover: Distribution; takeoverPastExpiry: Distribution } | undefined;
  if (runs('postgres')) {
    const server: PostgresServer = await startPostgresServer();
    try {
      const target = (name: string): PostgresTarget => ({ url: server.url, schema: `bench_${name}_${Date.now()}` });
      const handoff = await withCluster('candidate', defaults, size.processes, (cluster) => handoffs(cluster, size.trials, random), target('handoff'));
      const takeover = await withCluster(
        'candidate',
        shortLease,
        size.processes,
        (cluster) => takeovers(cluster, size.takeoverTrials, random),
        target('takeover'),
      );
      postgres = {
        server: await serverVersion(server.url),
        handoff: distribution(handoff),
        takeover: distribution(takeover.fromKill),
        takeoverPastExpiry: distribution(takeover.pastExpiry),
      };
    } finally {
      server.stop();
    }
    log(`postgres done`);
  }

  const results = {
    date: new Date().toISOString(),
    smoke,
    machine: {
      cores: os.cpus().length,
      cpu: os.cpus()[0]?.model,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      os: `${os.type()} ${os.release()}`,
    },
    config: { defaults, shortLease, ...size },
    comparisons,
    busyErrorsDuringScaleHandoffs: busyErrors,
    idleCpuPercentOfOneCore: idle,
    statements,
    postgres,
  };
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(out, 'latency.svg'), renderChart(comparisons.filter((c) => !c.scenario.startsWith(' '))));

  const format = (value: number) => (value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toFixed(3));
  const rows = [
    ['scenario', 'ours p50 / p99', 'baseline p50 / p99', 'baseline / ours (p50)'],
    ...comparisons.map((c) => [
      c.scenario,
      `${format(c.ours.p50)} / ${format(c.ours.p99)} ms`,
      `${format(c.baseline.p50)} / ${format(c.baseline.p99)} ms`,
      c.ours.p50 > 0 ? `${format(c.baseline.p50 / c.ours.p50)}x` : '-',
    ]),
  ];
  if (postgres) {
    const both = (d: Distribution) => `${format(d.p50)} / ${format(d.p99)} ms`;
    rows.push(
      [`on ${postgres.server}: graceful handoff, ${size.processes} processes`, both(postgres.handoff), '', ''],
      [`on ${postgres.server}: crash takeover, expiresAfter ${shortLease.expiresAfter} ms`, both(postgres.takeover), '', ''],
      ['  of which past the lease expiry', both(postgres.takeoverPastExpiry), '', ''],
    );
  }
  if (idle) {
    const percent = (value: number) => (Number.isNaN(value) ? '-' : `${value.toFixed(3)} %`);
    rows.push(
      ['idle CPU, leader', percent(idle.ours.leader), percent(idle.baseline.leader), ''],
      ['idle CPU, follower standing by', percent(idle.ours.standby), percent(idle.baseline.standby), ''],
      ['idle CPU, follower polling', percent(idle.ours.polling), percent(idle.baseline.polling), ''],
    );
  }
  if (statements) {
    const worst = (side: keyof typeof statements, measure: 'p99Millis' | 'p999Millis' | 'worstMillis') =>
      format(Math.max(...Object.values(statements[side]).map((s) => s[measure])));
    rows.push(
      [
        'renew; follower attempt (µs, mean)',
        `${format(statements.ours.renew.meanMicros)}; ${format(statements.ours.followerAttempt.meanMicros)}`,
        `${format(statements.baseline.renew.meanMicros)}; ${format(statements.baseline.followerAttempt.meanMicros)}`,
        '',
      ],
      ['acquire (µs, mean)', `${format(statements.ours.acquire.meanMicros)}`, '', ''],
      ['single call, 99th percentile (ms)', worst('ours', 'p99Millis'), worst('baseline', 'p99Millis'), ''],
      ['single call, 99.9th percentile (ms)', worst('ours', 'p999Millis'), worst('baseline', 'p999Millis'), ''],
      ['worst single call (ms)', worst('ours', 'worstMillis'), worst('baseline', 'worstMillis'), ''],
    );
  }
  if (runs('scale')) {
    rows.push([`error events, ${size.scaleProcesses}-process handoffs`, `${busyErrors.candidate}`, `${busyErrors.seed}`, '']);
  }
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  log('');
  for (const row of rows) log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  log(`\nresults: ${join(out, 'results.json')}, chart: ${join(out, 'latency.svg')}`);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}

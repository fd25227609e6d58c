/**
 * npm run bench [-- --smoke] [-- --only SCENARIOS] [-- --journal MODES] [-- --trials N] [-- --out FOLDER]
 *
 * Measures failover and cost with this library and, side by side in the same run, with a
 * run of the original worker's own way (its statements, polling at a fixed
 * interval). Prints the tables, writes results.json and latency.svg into FOLDER (bench/ by
 * default; a temporary folder for --smoke, the tiny run that CI makes so that this script
 * cannot rot, and for --only, which runs some of the scenarios: a comma-separated list of
 * handoff, takeover, scale, locked, idle, statements, drivers, postgres, fleet, simulator).
 *
 * Every SQLite scenario runs once per journal mode of --journal (a comma-separated list of
 * delete, truncate, persist, wal; all four by default). Processes open the file as users do:
 * `delete`, `truncate` and `persist` with better-sqlite3's defaults otherwise (a 5 s busy
 * timeout, synchronous FULL), `wal` as README advises (synchronous NORMAL, a 50 ms busy
 * timeout). The original worker runs in the first mode listed only. `drivers` runs
 * handoffs, crash takeovers and an idle cluster once per driver: better-sqlite3 on this
 * Node.js, node:sqlite on Node.js 24 and bun:sqlite on Bun, each with its own defaults
 * (see drivers.ts; the runtimes are fetched once, as the specs fetch them).
 *
 * `postgres` runs the handoff and takeover trials of this library on PostgreSQL (a server
 * started for the run, or the one OBSERVE_LEADERSHIP_TEST_DATABASE_URL names), to be read
 * beside the same trials on SQLite, and the handoffs through PgBouncer in its transaction
 * and session modes. `fleet` runs 64 processes on 8 hosts (network namespaces: root only)
 * against a server of its own with PostgreSQL's default max_connections (see fleet.ts).
 * `simulator` runs `npm run simulate` for 60 s (3 in the smoke) on every core, from seed 1, then the same with `--postgres` (not in the smoke),
 * and reports its failovers a second.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { eventually } from '../test-kit/eventually';
import { mulberry32 } from '../test-kit/seeded-random';
import { originalStatements, originalTable } from '../test-kit/original-statements';
import { PostgresTarget } from '../test-kit/chaos-database';
import { PostgresServer, startPostgresServer } from '../test-kit/postgres-server';
import { JournalMode, journalModes, openWorkerDatabase } from '../test-kit/worker-database';
import { sleep, WorkerKind } from '../test-kit/worker-process';
import { Pool } from 'pg';
import { sqliteLeaseStore } from 'observe-leadership';
import { renderChart } from './chart';
import { fleet, FleetSize } from './fleet';
import { PoolMode, poolModes, startPgBouncer } from '../test-kit/pgbouncer';
import {
  Cluster,
  coldStarts,
  Comparison,
  defaults,
  Distribution,
  distribution,
  handoffs,
  namedHandoffs,
  shortLease,
  takeovers,
  Timing,
} from './cluster';
import { DriverRun, driverRuns, DriverTrials } from './drivers';
import { IdleRun, idleRun } from './idle';
import { LockedRun, lockedRuns, lockedTiming } from './locked';

/** A stopped leader (SIGSTOP) for `pause` ms, once its standbys watch it: who was elected, when, against its lease. */
export interface StoppedLeaderTrial {
  pause: number;
  /** Ms from the stopped leader's last lease expiry to the next `elected` (negative: before it, a violation). */
  electedPastExpiry: number;
  /** `elected` reports by others between the stop and that expiry: 0 unless broken. */
  electedBeforeExpiry: number;
  /** Ms from SIGCONT to the stopped leader's `lost`. */
  lostAfterResume: number;
}

async function stoppedLeader(cluster: Cluster, pause: number): Promise<StoppedLeaderTrial> {
  const leader = await cluster.leader();
  await cluster.watched();
  const stoppedAt = Date.now();
  leader.signal('SIGSTOP');
  await sleep(pause);
  const lastExpiry = Math.max(...leader.records.filter((r) => r.expiresAt !== undefined).map((r) => r.expiresAt!));
  const resumedAt = Date.now();
  leader.signal('SIGCONT');
  const elected = await cluster.elected(stoppedAt, leader);
  const lost = await eventually(
    'the stopped leader’s loss',
    () => leader.records.find((r) => r.type === 'lost' && r.at >= resumedAt),
    60_000,
  );
  const others = cluster.processes.filter((w) => w !== leader).flatMap((w) => w.records);
  return {
    pause,
    electedPastExpiry: elected.at - lastExpiry,
    electedBeforeExpiry: others.filter((r) => r.type === 'elected' && r.at >= stoppedAt && r.at <= lastExpiry).length,
    lostAfterResume: lost.at - resumedAt,
  };
}

/** The cost of one statement group, in µs, in this process, on a file in that journal mode; and the worst single call, in ms. */
function statementCosts(folder: string, calls: number, journal: JournalMode) {
  const db = openWorkerDatabase(join(mkdtempSync(join(folder, 'statements-')), 'bench.db'), { journal });
  db.exec(originalTable);
  const store = sqliteLeaseStore(db);
  const original = originalStatements(db, 'rust', 60_000);
  const otherOriginal = originalStatements(db, 'other', 60_000);
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
  const at = (ms: number) => ({ clock: 'bench', now: ms, wall: ms });
  const { term } = store.acquire(0, 'a', at(now), 60_000).lease;
  const results = {
    ours: {
      renew: time((i) => store.renew({ slot: 0, holder: 'a', term }, at(now + i), 60_000)),
      followerAttempt: time(() => store.acquire(0, 'b', at(now), 60_000)),
      acquire: time((i) => store.acquire(1, 'a', at(now + i), 60_000)),
    },
    original: {} as Record<string, { meanMicros: number; p99Millis: number; p999Millis: number; worstMillis: number }>,
  };
  store.release({ slot: 0, holder: 'a', term });
  original.tryAcquire(now);
  results.original = {
    renew: time((i) => original.renew(now + i)),
    followerAttempt: time(() => otherOriginal.tryAcquire(now)),
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

const scenarios = ['handoff', 'takeover', 'scale', 'locked', 'idle', 'statements', 'drivers', 'postgres', 'fleet', 'simulator'] as const;
type Scenario = (typeof scenarios)[number];

function parseArguments(argv: string[]) {
  const valueOf = (flag: string) => {
    const index = argv.indexOf(flag);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const listOf = <T extends string>(flag: string, known: readonly T[]): T[] | undefined => {
    const names = valueOf(flag)?.split(',');
    const unknown = names?.filter((name) => !(known as readonly string[]).includes(name));
    if (unknown?.length) throw new Error(`Unknown ${flag} ${unknown.join(', ')}: expected some of ${known.join(', ')}`);
    return names as T[] | undefined;
  };
  const smoke = argv.includes('--smoke');
  const only = listOf('--only', scenarios);
  // The smoke run takes the default mode and the advised one: enough to keep both paths working.
  const journals = listOf('--journal', journalModes) ?? (smoke ? (['delete', 'wal'] as JournalMode[]) : [...journalModes]);
  const out = valueOf('--out') ?? (smoke || only ? mkdtempSync(join(os.tmpdir(), 'bench-')) : join(__dirname, '..', '..', 'bench'));
  const trials = valueOf('--trials') === undefined ? undefined : Number(valueOf('--trials'));
  if (trials !== undefined && !(Number.isInteger(trials) && trials > 0))
    throw new Error(`Expected --trials to be a positive integer, got ${valueOf('--trials')}`);
  return { smoke, out, journals, trials, runs: (scenario: Scenario) => only === undefined || only.includes(scenario) };
}

type StatementCosts = ReturnType<typeof statementCosts>;

async function main(): Promise<void> {
  const options = parseArguments(process.argv.slice(2));
  const run = prepareRun(options);
  run.log(
    `benchmark${options.smoke ? ' (smoke)' : ''}: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node.js ${process.version}; journal modes ${options.journals.join(', ')}`,
  );
  const sqlite = await sqliteScenarios(run);
  const postgres = options.runs('postgres') ? await postgresScenarios(run) : undefined;
  const fleetResult = options.runs('fleet') ? await fleet(run.fleetSize, run.random, run.log) : undefined;
  const simulator = options.runs('simulator') ? await simulatorScenario(options.smoke ? 3 : 60, run.log) : undefined;
  // Not in the smoke: PGlite takes seconds to start, and the simulator's own specs run it.
  const simulatorOnPostgres =
    options.runs('simulator') && !options.smoke ? await simulatorScenario(60, run.log, ['--postgres']) : undefined;
  const results = {
    date: new Date().toISOString(),
    smoke: options.smoke,
    machine: {
      cores: os.cpus().length,
      cpu: os.cpus()[0]?.model,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      os: `${os.type()} ${os.release()}`,
    },
    config: {
      defaults,
      shortLease,
      crashTiming: run.crashTiming,
      journals: options.journals,
      appRowsPerSecond: run.appRowsPerSecond,
      ...run.size,
      fleet: run.fleetSize,
    },
    ...sqlite,
    postgres,
    fleet: fleetResult,
    simulator,
    simulatorOnPostgres,
  };
  const { out } = options;
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(out, 'latency.svg'), renderChart(results.comparisons.filter((c) => !c.scenario.startsWith(' '))));
  printResults(results, run.log);
  run.log(`\nresults: ${join(out, 'results.json')}, chart: ${join(out, 'latency.svg')}`);
}

/** How big a run is: a full one, or the smoke run that only checks that every path works. */
function sizesOf(smoke: boolean, trials: number | undefined) {
  const size = smoke
    ? {
        processes: 3,
        trials: 2,
        takeoverTrials: 1,
        coldStarts: 1,
        originalTakeoverTrials: 1,
        scaleProcesses: 6,
        scaleTrials: 1,
        idleProcesses: 4,
        idleScale: 6,
        idleWarmUp: 1,
        idleSeconds: 1,
        calls: 200,
        lockedTrials: 1,
        // Five seconds of a locked file a mode: the smoke's keeps the path working in one.
        lockedEveryMode: false,
      }
    : {
        processes: 4,
        trials: 100,
        takeoverTrials: 100,
        coldStarts: 10,
        originalTakeoverTrials: 3,
        scaleProcesses: 64,
        scaleTrials: 100,
        idleProcesses: 4,
        idleScale: 64,
        idleWarmUp: 60,
        idleSeconds: 240,
        calls: 20_000,
        lockedTrials: 5,
        lockedEveryMode: true,
      };
  const driverTrials: DriverTrials = smoke
    ? { processes: 3, handoffs: 2, takeovers: 1, idleWarmUp: 1, idleSeconds: 1 }
    : { processes: 4, handoffs: 100, takeovers: 50, idleWarmUp: 60, idleSeconds: 120 };
  // --trials N: that many handoffs and takeovers per cluster instead, for a quicker look.
  if (trials !== undefined) {
    Object.assign(size, { trials, takeoverTrials: trials, scaleTrials: trials });
    Object.assign(driverTrials, { handoffs: trials, takeovers: trials });
  }
  const fleetSize: FleetSize = smoke
    ? { hosts: 2, perHost: 2, warmUp: 1, idleSeconds: 1, handoffs: 1, takeovers: 1 }
    : { hosts: 8, perHost: 8, warmUp: 30, idleSeconds: 120, handoffs: 40, takeovers: 20 };
  return { size, driverTrials, fleetSize, appRowsPerSecond: smoke ? 50 : 500, crashTiming: smoke ? shortLease : defaults };
}

/** What every scenario of a run shares: its sizes, its folder, its random choices, its log, and the way to run a cluster. */
function prepareRun({ smoke, journals, trials, runs }: ReturnType<typeof parseArguments>) {
  const folder = mkdtempSync(join(os.tmpdir(), 'observe-leadership-bench-'));
  const withCluster = async <T>(
    kind: WorkerKind,
    timing: Timing,
    count: number,
    journal: JournalMode,
    body: (cluster: Cluster) => Promise<T>,
    postgres?: PostgresTarget,
  ) => {
    const cluster = new Cluster(kind, timing, folder, journal, { postgres });
    try {
      await cluster.start(count);
      return await body(cluster);
    } finally {
      await cluster.stop();
    }
  };
  return {
    ...sizesOf(smoke, trials),
    folder,
    journals,
    random: mulberry32(7),
    log: (line: string) => console.log(line),
    withCluster,
    /** Ours in `journal`, and the original worker too in the first mode. */
    compare: async (scenario: string, journal: JournalMode, run: (kind: WorkerKind) => Promise<number[]>): Promise<Comparison> => {
      const ours = distribution(await run('candidate'));
      const original = journal === journals[0] ? distribution(await run('original')) : undefined;
      return { scenario: `${scenario} [${journal}]`, unit: 'ms', ours, original };
    },
    runs,
  };
}

type BenchRun = ReturnType<typeof prepareRun>;

/** What the SQLite scenarios found, in every journal mode. */
interface SqliteResults {
  comparisons: Comparison[];
  crashes: Partial<Record<JournalMode, { overlaps: number; stopped: StoppedLeaderTrial }>>;
  busyErrorsDuringScaleHandoffs: Record<string, number>;
  /** Per run of handoffs to a named successor: how many trials somebody else won (0 unless broken). */
  namedHandoffMisses: Record<string, number>;
  idle: Array<IdleRun & { journal: JournalMode; kind: WorkerKind }>;
  statements: Partial<Record<JournalMode, StatementCosts>>;
  locked: Partial<Record<JournalMode, LockedRun>>;
  drivers: DriverRun[];
}

/** Every SQLite scenario asked for, once per journal mode. */
async function sqliteScenarios(run: BenchRun): Promise<SqliteResults> {
  const results: SqliteResults = {
    comparisons: [],
    crashes: {},
    busyErrorsDuringScaleHandoffs: {},
    namedHandoffMisses: {},
    idle: [],
    statements: {},
    locked: {},
    drivers: [],
  };
  for (const journal of run.journals) {
    if (run.runs('handoff')) await handoffScenario(run, journal, results);
    if (run.runs('takeover')) await takeoverScenario(run, journal, results);
    if (run.runs('scale')) await scaleScenario(run, journal, results);
    if (run.runs('locked') && (run.size.lockedEveryMode || journal === run.journals[0])) await lockedScenario(run, journal, results);
    if (run.runs('idle')) await idleScenario(run, journal, results);
    if (run.runs('statements')) results.statements[journal] = statementCosts(run.folder, run.size.calls, journal);
    if (run.runs('drivers')) await driversScenario(run, journal, results);
  }
  return results;
}

/** The three SQLite drivers, each on its runtime, with the same trials. */
async function driversScenario(
  { folder, crashTiming, driverTrials, random, log }: BenchRun,
  journal: JournalMode,
  { drivers }: SqliteResults,
) {
  drivers.push(...(await driverRuns(folder, journal, { handoffTiming: defaults, crashTiming }, driverTrials, random)));
  log(`drivers done [${journal}]`);
}

/** Graceful handoffs among a few processes, and handoffs to a named successor among a few and many. */
async function handoffScenario(run: BenchRun, journal: JournalMode, results: SqliteResults) {
  const { compare, withCluster, size, random, log } = run;
  results.comparisons.push(
    await compare(`graceful handoff, ${size.processes} processes`, journal, (kind) =>
      withCluster(kind, defaults, size.processes, journal, (cluster) => handoffs(cluster, size.trials, random)),
    ),
  );
  for (const processes of [size.processes, size.scaleProcesses]) {
    const scenario = `handoff to a named successor, ${processes} processes [${journal}]`;
    const named = await withCluster('candidate', defaults, processes, journal, (cluster) => namedHandoffs(cluster, size.trials, random));
    results.comparisons.push({ scenario, unit: 'ms', ours: distribution(named.latencies) });
    results.namedHandoffMisses[scenario] = named.othersElected;
  }
  log(`handoff done [${journal}]`);
}

/** Crash takeovers (SIGKILL) among a few processes and many, and a leader stopped (SIGSTOP) past its lease. */
async function takeoverScenario(
  { withCluster, crashTiming, size, random, log, journals }: BenchRun,
  journal: JournalMode,
  { comparisons, crashes }: SqliteResults,
) {
  // The default lease: what a crash costs a user who changed nothing.
  const ours = await withCluster('candidate', crashTiming, size.processes, journal, (cluster) =>
    takeovers(cluster, size.takeoverTrials, random, { watched: true, spread: 1_000 }).then((trials) => ({
      ...trials,
      overlaps: cluster.overlaps(),
    })),
  );
  const original =
    journal === journals[0]
      ? await withCluster('original', crashTiming, size.processes, journal, (cluster) =>
          takeovers(cluster, size.originalTakeoverTrials, random),
        )
      : undefined;
  const scale = await withCluster('candidate', crashTiming, size.scaleProcesses, journal, (cluster) =>
    takeovers(cluster, size.scaleTrials, random, { watched: true, spread: 1_000 }).then((trials) => ({
      ...trials,
      overlaps: cluster.overlaps(),
    })),
  );
  const stopped = await withCluster('candidate', crashTiming, size.processes, journal, (cluster) =>
    stoppedLeader(cluster, 2 * crashTiming.expiresAfter).then((trial) => ({ ...trial, overlaps: cluster.overlaps() })),
  );
  const lease = `expiresAfter ${crashTiming.expiresAfter} ms`;
  // What nobody can shorten: the kill until the dead leader's sockets close.
  const kernelShare = '  of which until the kernel closed the dead leader’s sockets';
  comparisons.push(
    {
      scenario: `crash takeover (SIGKILL), ${lease}, ${size.processes} processes [${journal}]`,
      unit: 'ms',
      ours: distribution(ours.fromKill),
      original: original && distribution(original.fromKill),
    },
    { scenario: kernelShare, unit: 'ms', ours: distribution(ours.kernelClose) },
    {
      scenario: `crash takeover (SIGKILL), ${lease}, ${size.scaleProcesses} processes [${journal}]`,
      unit: 'ms',
      ours: distribution(scale.fromKill),
    },
    { scenario: kernelShare, unit: 'ms', ours: distribution(scale.kernelClose) },
  );
  crashes[journal] = { overlaps: ours.overlaps + scale.overlaps + stopped.overlaps, stopped };
  log(`takeover done [${journal}]`);
}

/** Graceful handoffs among many processes, with the error events they cost. */
async function scaleScenario({ compare, withCluster, size, random, log }: BenchRun, journal: JournalMode, results: SqliteResults) {
  const busyErrors = results.busyErrorsDuringScaleHandoffs;
  const { comparisons } = results;
  comparisons.push(
    await compare(`graceful handoff, ${size.scaleProcesses} processes`, journal, (kind) =>
      withCluster(kind, defaults, size.scaleProcesses, journal, async (cluster) => {
        const errorsBefore = cluster.errors();
        const latencies = await handoffs(cluster, size.scaleTrials, random);
        busyErrors[`${kind} [${journal}]`] = cluster.errors() - errorsBefore;
        return latencies;
      }),
    ),
  );
  log(`scale done [${journal}]`);
}

/** The file locked by another connection: what the leader, its followers and their health checks see. */
async function lockedScenario({ folder, size, random, log }: BenchRun, journal: JournalMode, { locked }: SqliteResults) {
  locked[journal] = await lockedRuns(
    new Cluster('candidate', lockedTiming, folder, journal, { extra: { health: true } }),
    size.lockedTrials,
    random,
    size.calls / 10,
  );
  log(`locked done [${journal}]`);
}

/** What idle clusters cost, with and without an application writing beside them. */
async function idleScenario({ folder, size, appRowsPerSecond, journals, log }: BenchRun, journal: JournalMode, { idle }: SqliteResults) {
  // The clusters of one mode at once, each on its own file: idle, they hardly disturb each
  // other (the application writer aside, whose own CPU is not counted), and it saves
  // minutes. Each is started by idleRun itself, so that its whole life is counted.
  const clusters: Array<[WorkerKind, number, number]> = [
    ['candidate', size.idleProcesses, 0],
    ['candidate', size.idleProcesses, appRowsPerSecond],
    ['candidate', size.idleScale, 0],
    ...(journal === journals[0] ? ([['original', size.idleProcesses, 0]] as Array<[WorkerKind, number, number]>) : []),
  ];
  const runsOfMode = await Promise.all(
    clusters.map(([kind, count, rows]) =>
      idleRun(new Cluster(kind, defaults, folder, journal), count, size.idleWarmUp, size.idleSeconds, rows).then((run) => ({
        ...run,
        journal,
        kind,
      })),
    ),
  );
  idle.push(...runsOfMode);
  log(`idle done [${journal}]`);
}

/** The same trials on PostgreSQL, each cluster in a fresh schema of one server, and through PgBouncer in both modes. */
async function postgresScenarios({ withCluster, size, random, log }: BenchRun) {
  let postgres:
    | {
        server: string;
        handoff: Distribution;
        namedHandoff: Distribution;
        namedHandoffMisses: number;
        takeover: Distribution;
        takeoverPastExpiry: Distribution;
        coldStart: Distribution;
        pgbouncer: Record<PoolMode, Distribution>;
      }
    | undefined;
  const server: PostgresServer = await startPostgresServer();
  const pgbouncer = await startPgBouncer(server.url);
  try {
    const target = (name: string): PostgresTarget => ({ url: server.url, schema: `bench_${name}_${Date.now()}` });
    const onPostgres = <T>(timing: Timing, body: (cluster: Cluster) => Promise<T>, name: string) =>
      withCluster('candidate', timing, size.processes, 'delete', body, target(name));
    const handoff = await onPostgres(defaults, (cluster) => handoffs(cluster, size.trials, random), 'handoff');
    const named = await onPostgres(defaults, (cluster) => namedHandoffs(cluster, size.trials, random), 'named');
    const takeover = await onPostgres(shortLease, (cluster) => takeovers(cluster, size.takeoverTrials, random), 'takeover');
    // What judging leases by watching them costs: a fresh candidate facing a dead leader's row.
    const coldStart = await withCluster(
      'candidate',
      shortLease,
      1,
      'delete',
      (cluster) => coldStarts(cluster, size.coldStarts),
      target('cold'),
    );
    const throughPgBouncer = async (mode: PoolMode) =>
      distribution(
        await withCluster('candidate', defaults, size.processes, 'delete', (cluster) => handoffs(cluster, size.trials, random), {
          url: pgbouncer.url(mode),
          schema: `bench_pgbouncer_${mode}_${Date.now()}`,
        }),
      );
    postgres = {
      server: await serverVersion(server.url),
      handoff: distribution(handoff),
      namedHandoff: distribution(named.latencies),
      namedHandoffMisses: named.othersElected,
      takeover: distribution(takeover.fromKill),
      takeoverPastExpiry: distribution(takeover.pastExpiry),
      coldStart: distribution(coldStart.fromStart),
      pgbouncer: { transaction: await throughPgBouncer('transaction'), session: await throughPgBouncer('session') },
    };
  } finally {
    pgbouncer.stop();
    server.stop();
  }
  log(`postgres done`);
  return postgres;
}

type BenchResults = SqliteResults & {
  config: { scaleProcesses: number; processes: number };
  postgres: Awaited<ReturnType<typeof postgresScenarios>> | undefined;
  fleet: Awaited<ReturnType<typeof fleet>> | undefined;
  simulator: SimulatorRun | undefined;
  simulatorOnPostgres: SimulatorRun | undefined;
};

interface SimulatorRun {
  seconds: number;
  threads: number;
  failovers: number;
  faults: number;
  violations: number;
  failoversPerSecond: number;
  /** Of one core: the threads' failovers a second, shared out. */
  failoversPerSecondPerCore: number;
}

/** `npm run simulate -- --seconds S [...more]` from seed 1 on every core: what its last line says. */
async function simulatorScenario(seconds: number, log: (line: string) => void, more: string[] = []): Promise<SimulatorRun> {
  log(`simulator${more.length > 0 ? ` ${more.join(' ')}` : ''}: ${seconds} s on ${os.availableParallelism()} threads`);
  const output = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [join(__dirname, '..', 'sim', 'main.js'), '--seconds', String(seconds), ...more], (error, stdout) =>
      error === null ? resolve(stdout) : reject(new Error(`npm run simulate failed: ${stdout}${error.message}`)),
    ),
  );
  const last = /simulated: (\d+) failovers, (\d+) faults, (\d+) violations in ([\d.]+) s/.exec(output);
  if (last === null) throw new Error(`npm run simulate printed no summary: ${output}`);
  const [failovers, faults, violations, took] = last.slice(1).map(Number);
  const threads = os.availableParallelism();
  const failoversPerSecond = Math.round(failovers / took);
  return {
    seconds: took,
    threads,
    failovers,
    faults,
    violations,
    failoversPerSecond,
    failoversPerSecondPerCore: Math.round(failoversPerSecond / threads),
  };
}

/** A figure as the tables show it: whole above 100, one decimal above 1, three below. */
function format(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toFixed(3);
}

/** A distribution as the tables show it: p50 / p99 / p99.9 / worst. */
function both(d: Distribution | undefined): string {
  return d ? `${format(d.p50)} / ${format(d.p99)} / ${format(d.p999)} / ${format(d.worst)} ms` : '';
}

/** Prints the run's tables: failover and costs beside the original worker's, then what idle clusters cost. */
function printResults(results: BenchResults, log: (line: string) => void): void {
  printTable(
    [
      ['scenario', 'ours p50 / p99 / p99.9 / worst', 'original p50 / p99 / p99.9 / worst', 'original / ours (p50)'],
      ...results.comparisons.map((c) => [
        c.scenario,
        both(c.ours),
        both(c.original),
        c.original && c.ours.p50 > 0 ? `${format(c.original.p50 / c.ours.p50)}x` : '',
      ]),
      ...postgresRows(results),
      ...fleetRows(results),
      ...statementRows(results),
      ...missRows(results),
      ...crashRows(results),
      ...lockedRows(results),
      ...Object.entries(results.busyErrorsDuringScaleHandoffs).map(([kind, errors]) => [
        `error events, ${results.config.scaleProcesses}-process handoffs, ${kind}`,
        `${errors}`,
        '',
        '',
      ]),
      ...simulatorRows(results),
    ],
    log,
  );
  printIdle(results.idle, log);
  printDrivers(results.drivers, log);
}

function postgresRows({ postgres, config: size }: BenchResults): string[][] {
  if (!postgres) return [];
  return [
    [`on ${postgres.server}: graceful handoff, ${size.processes} processes`, both(postgres.handoff), '', ''],
    [`on ${postgres.server}: handoff to a named successor, ${size.processes} processes`, both(postgres.namedHandoff), '', ''],
    [`on ${postgres.server}: crash takeover, expiresAfter ${shortLease.expiresAfter} ms`, both(postgres.takeover), '', ''],
    ['  of which past the lease expiry', both(postgres.takeoverPastExpiry), '', ''],
    [`on ${postgres.server}: a fresh candidate facing a dead leader's row, from its start`, both(postgres.coldStart), '', ''],
    ...poolModes.map((mode) => [
      `through PgBouncer, ${mode} mode: graceful handoff, ${size.processes} processes`,
      both(postgres.pgbouncer[mode]),
      '',
      '',
    ]),
  ];
}

function fleetRows({ fleet: fleetResult }: BenchResults): string[][] {
  if (!fleetResult) return [];
  const { hosts, processes, idle, handoffConnections: peak } = fleetResult;
  const on = `${processes} processes on ${hosts} hosts, max_connections ${fleetResult.maxConnections}`;
  return [
    [`fleet (${on}): graceful handoff`, both(fleetResult.handoff), '', ''],
    [`fleet: handoff to a named successor`, both(fleetResult.namedHandoff), '', ''],
    [`fleet: crash takeover, expiresAfter ${fleetResult.takeoverLease} ms`, both(fleetResult.takeover), '', ''],
    ['  of which past the lease expiry', both(fleetResult.takeoverPastExpiry), '', ''],
    [
      `fleet: connections idle ${idle.seconds} s, all workers / most by one process / server`,
      `${idle.connections.total} / ${idle.connections.perProcess} / ${idle.connections.server}`,
      '',
      '',
    ],
    [
      'fleet: connections during handoffs, all workers / most by one process / server',
      `${peak.total} / ${peak.perProcess} / ${peak.server}`,
      '',
      '',
    ],
    [
      `fleet: idle elections, lost, errors; errors over the handoff run; overlapping beliefs`,
      `${idle.elections}, ${idle.lost}, ${idle.errors}; ${fleetResult.errors}; ${fleetResult.overlaps}`,
      '',
      '',
    ],
  ];
}

function statementRows({ statements }: BenchResults): string[][] {
  return (Object.entries(statements) as Array<[JournalMode, StatementCosts]>).flatMap(([journal, costs]) => {
    const worst = (side: 'ours' | 'original', measure: 'p99Millis' | 'p999Millis' | 'worstMillis') =>
      format(Math.max(...Object.values(costs[side]).map((s) => s[measure])));
    return [
      [
        `[${journal}] renew; follower attempt (µs, mean)`,
        `${format(costs.ours.renew.meanMicros)}; ${format(costs.ours.followerAttempt.meanMicros)}`,
        `${format(costs.original.renew.meanMicros)}; ${format(costs.original.followerAttempt.meanMicros)}`,
        '',
      ],
      [`[${journal}] acquire (µs, mean)`, `${format(costs.ours.acquire.meanMicros)}`, '', ''],
      [
        `[${journal}] single call, p99 / p99.9 / worst (ms)`,
        `${worst('ours', 'p99Millis')} / ${worst('ours', 'p999Millis')} / ${worst('ours', 'worstMillis')}`,
        `${worst('original', 'p99Millis')} / ${worst('original', 'p999Millis')} / ${worst('original', 'worstMillis')}`,
        '',
      ],
    ];
  });
}

function missRows({ namedHandoffMisses, postgres, fleet }: BenchResults): string[][] {
  const misses = [
    ...Object.values(namedHandoffMisses),
    ...(postgres ? [postgres.namedHandoffMisses] : []),
    ...(fleet ? [fleet.namedHandoffMisses] : []),
  ];
  if (misses.length === 0) return [];
  return [['handoffs to a named successor that another candidate won, all runs', `${misses.reduce((a, b) => a + b, 0)}`, '', '']];
}

function crashRows({ crashes }: BenchResults): string[][] {
  return Object.entries(crashes).flatMap(([journal, crash]) => {
    const { stopped } = crash;
    return [
      [`[${journal}] crash and stop trials: tenures that believed they led at once`, `${crash.overlaps}`, '', ''],
      [
        `[${journal}] leader stopped (SIGSTOP) ${stopped.pause} ms: elected before its expiry; past it; lost after SIGCONT`,
        `${stopped.electedBeforeExpiry}; ${format(stopped.electedPastExpiry)} ms; ${format(stopped.lostAfterResume)} ms`,
        '',
        '',
      ],
    ];
  });
}

function lockedRows({ locked }: BenchResults): string[][] {
  return (Object.entries(locked) as Array<[JournalMode, LockedRun]>).flatMap(([journal, run]) => {
    const of = `[${journal}] file locked ${run.lockFor / 1000} s by another connection (${run.trials} trials, ${run.processes} processes)`;
    return [
      [
        `${of}: event-loop delay, leader; followers (ms, worst)`,
        `${format(run.loopDelay.leader)}; ${format(run.loopDelay.followers)}`,
        '',
        '',
      ],
      [`${of}: health answers (ms)`, both(run.healthAnswers), '', ''],
      [
        `  the same ${run.lockFor / 1000} s just before, unlocked: event-loop delay (worst); health answers`,
        `${format(run.unlocked.loopDelay)}; ${both(run.unlocked.healthAnswers)}`,
        '',
        '',
      ],
      [`${of}: leader's lost past its deadline (ms)`, both(run.lostPastDeadline), '', ''],
      [
        `[${journal}] while locked, the library's calls with a 5 s busy timeout, worst of ${run.callsUnderLock.calls} each (ms)`,
        Object.entries(run.callsUnderLock.worst)
          .map(([name, ms]) => `${name} ${format(ms)}`)
          .join(', '),
        '',
        '',
      ],
      [`${of}: elected while locked; overlapping beliefs`, `${run.electedWhileLocked}; ${run.overlaps}`, '', ''],
    ];
  });
}

function simulatorRows(results: BenchResults): string[][] {
  const simulators = [
    ['simulator (npm run simulate)', results.simulator],
    ['simulator on PostgreSQL (-- --postgres)', results.simulatorOnPostgres],
  ] as const;
  return simulators.flatMap(([name, simulator]) => {
    if (simulator === undefined) return [];
    const { seconds, threads, failovers, faults, violations, failoversPerSecond, failoversPerSecondPerCore: perCore } = simulator;
    return [
      [
        `${name}, ${seconds} s on ${threads} threads: failovers/s (of one core); failovers, faults, violations`,
        `${failoversPerSecond}/s (${perCore}/s); ${failovers}, ${faults}, ${violations}`,
        '',
        '',
      ],
    ];
  });
}

function printIdle(idle: BenchResults['idle'], log: (line: string) => void): void {
  if (idle.length === 0) return;
  const percent = (value: number) => (Number.isNaN(value) ? '-' : `${value.toFixed(3)} %`);
  log('');
  printTable(
    [
      ['idle, % of a core', 'processes', 'leader', 'standby (mean / max)', 'polling (mean / max)', 'elections, lost, errors'],
      ...idle.map((run) => [
        `[${run.journal}] ${run.kind === 'original' ? 'original' : 'ours'}${run.appRowsPerSecond ? `, app writing ${run.appRowsPerSecond} rows/s` : ''}`,
        `${run.processes}`,
        percent(run.leader),
        `${percent(run.standby.mean)} / ${percent(run.standby.max)}`,
        `${percent(run.polling.mean)} / ${percent(run.polling.max)}`,
        `${run.elections}, ${run.lost}, ${run.errors}`,
      ]),
    ],
    log,
  );
}

function printDrivers(drivers: BenchResults['drivers'], log: (line: string) => void): void {
  if (drivers.length === 0) return;
  log('');
  printTable(
    [
      [
        'driver [journal], runtime',
        'handoff p50 / p99 / p99.9 / worst',
        'crash takeover p50 / p99 / worst',
        'idle leader; standby (max)',
        'overlaps',
      ],
      ...drivers.map((run) => [
        `${run.driver} [${run.journal}], ${run.runtime}`,
        both(run.handoff),
        `${format(run.takeover.p50)} / ${format(run.takeover.p99)} / ${format(run.takeover.worst)} ms`,
        `${run.idle.leader.toFixed(3)} %; ${run.idle.standby.max.toFixed(3)} %`,
        `${run.overlaps}`,
      ]),
    ],
    log,
  );
}

function printTable(rows: string[][], log: (line: string) => void): void {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  for (const row of rows) log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}

/**
 * A candidate process, for the chaos harness and the multi-process specs. It campaigns on
 * each of its slots with the built library, reports every event as one JSON line on
 * stdout, and while it leads a slot keeps appending rows to a ledger with `fenced`.
 *
 * Options come as JSON in argv[2] (see WorkerOptions). Commands come one per line on
 * stdin: `unsubscribe`, `subscribe`, `fenced-write` (one more write with the last lease of
 * each slot, whatever the campaign says since), `fenced-hang SLOT` (a fenced transaction
 * with that slot's last lease that never commits: the process blocks in it, to be killed
 * there), `usage` (CPU and event-loop time, for the benchmark), `loop-delay` (the event
 * loop's delays since the last `loop-delay`, the first starting the count), `exit`. SIGTERM
 * is a graceful stop. With `health`, it serves `leadershipHealth`'s report over HTTP as
 * README's health example does, on a free port of 127.0.0.1 that it reports (`health`).
 */
import type Database from 'better-sqlite3';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { IntervalHistogram, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import { asyncScheduler, EMPTY, ignoreElements, interval, map, merge, Subscription, tap } from 'rxjs';
import {
  ElectedEvent,
  fenced,
  Lease,
  LeaderInstrument,
  LeadershipEvent,
  leadershipHealth,
  LeadershipInstrument,
  LeaseReader,
  LeaseStore,
  observeLeader,
  observeLeadership,
  whileLeader,
} from 'observe-leadership';
import { postgresLeaseStore } from 'observe-leadership/postgres';
import { leaderMetrics, leadershipMetrics } from 'observe-leadership/metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { PostgresTarget } from './chaos-database';
import { asBetterSqlite3, monotonicScheduler, readClocks, SqliteDatabaseLike, SqliteDriver } from './library-internals';
import { uncommittedSeq } from './history';

export interface WorkerOptions {
  /** The SQLite file, unless the workers campaign on PostgreSQL. */
  file?: string;
  postgres?: PostgresTarget;
  /** The logical name, kept across restarts. */
  worker?: string;
  /** How many slots to campaign for (0 .. slots - 1). @default 1 */
  slots?: number;
  renewEvery: number;
  expiresAfter: number;
  retryEvery: number;
  /** Ms between fenced ledger writes while leading; no writes if absent. */
  ledgerEvery?: number;
  /**
   * Ms between ticks of a job that `whileLeader` runs while leading, each reported (`tick`)
   * by what follows `whileLeader`, where a side effect belongs; no ticks if absent.
   */
  tickEvery?: number;
  /** How the SQLite file is opened. @default 'delete', better-sqlite3's defaults */
  journal?: JournalMode;
  /** better-sqlite3's busy timeout. @default as `openWorkerDatabase` sets it for the journal mode */
  busyTimeout?: number;
  /** Which SQLite driver opens the file (under Bun, `bun:sqlite`). @default 'better-sqlite3' */
  driver?: SqliteDriver;
  /**
   * Ms added to this process's clock (`Date.now()`), as on a machine whose clock is off:
   * PostgreSQL candidates must not care. When given (even 0), the campaign reads that clock
   * instead of its default, so that its events' `expiresAt` can be compared with the
   * database server's clock of the same host.
   */
  clockOffset?: number;
  /** Serve `leadershipHealth`'s report over HTTP (GET /healthz), as README's health example does. */
  health?: boolean;
  /**
   * Export `leadershipMetrics()` of its candidates and `leaderMetrics()` of a watch of each
   * slot through the OpenTelemetry SDK's Prometheus exporter, as docs/metrics-and-health.md
   * wires them, on a free port of 127.0.0.1 that it reports (`metrics`).
   */
  metrics?: boolean;
}

/** What a worker needs of its database: the store to campaign in, fenced ledger writes, and a way out. */
interface WorkerDatabase {
  campaignIn: SqliteDatabaseLike | LeaseStore;
  append(lease: Lease, seq: number): Promise<void>;
  /**
   * Writes a ledger row of `uncommittedSeq` inside a fenced transaction, reports
   * `fenced-hang`, and never commits: the process blocks there until it is killed.
   */
  hang(lease: Lease): Promise<void>;
  standingBy(holder: string): boolean | undefined;
  close(): Promise<void>;
}

function sqliteWorkerDatabase(file: string, setup: DatabaseSetup & { driver?: SqliteDriver }): WorkerDatabase {
  const { raw, db } = openWorkerConnection(file, { ...setup, setupSql: ledgerTable });
  const append = db.prepare('INSERT INTO chaos_ledger (slot, holder, term, seq, at, mono) VALUES (?, ?, ?, ?, ?, ?)');
  return {
    campaignIn: raw as SqliteDatabaseLike,
    append: async (lease, seq) =>
      void fenced(raw as SqliteDatabaseLike, lease, () =>
        append.run(lease.slot, lease.holder, lease.term, seq, Date.now(), monotonicNow()),
      ),
    hang: async (lease) =>
      void fenced(raw as SqliteDatabaseLike, lease, () => {
        append.run(lease.slot, lease.holder, lease.term, uncommittedSeq, Date.now(), monotonicNow());
        report({ type: 'fenced-hang', slot: lease.slot, holder: lease.holder, term: lease.term, seq: uncommittedSeq });
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // the whole process, inside the transaction
      }),
    // Asked only once the campaign made its tables.
    standingBy: (holder) => {
      try {
        return db.prepare('SELECT count(*) FROM worker_leadership_standby WHERE holder = ?').pluck().get(holder) !== 0;
      } catch {
        return undefined; // the file stayed locked (an application writing without pause, in a rollback journal mode)
      }
    },
    close: async () => void db.close(),
  };
}

function postgresWorkerDatabase({ url, schema }: PostgresTarget, worker: string, queryTimeout: number): WorkerDatabase {
  // pg's defaults otherwise (10 connections at most, idle ones closed after 10 s), as a new user has them.
  const pool = new Pool({ connectionString: url, application_name: `chaos-${worker}`, connectionTimeoutMillis: queryTimeout });
  const store = postgresLeaseStore(pool, { schema, queryTimeout });
  const insert = `INSERT INTO "${schema}".chaos_ledger (slot, holder, term, seq, at, mono) VALUES ($1, $2, $3, $4, $5, $6)`;
  return {
    campaignIn: store,
    append: (lease, seq) =>
      fenced(
        store,
        lease,
        async (client) => void (await client.query(insert, [lease.slot, lease.holder, lease.term, seq, Date.now(), monotonicNow()])),
      ),
    hang: (lease) =>
      fenced(store, lease, async (client) => {
        await client.query(insert, [lease.slot, lease.holder, lease.term, uncommittedSeq, Date.now(), monotonicNow()]);
        report({ type: 'fenced-hang', slot: lease.slot, holder: lease.holder, term: lease.term, seq: uncommittedSeq });
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
      }),
    standingBy: () => store.isWatching(),
    close: async () => {
      await store.settled().catch(() => undefined);
      await pool.end();
    },
  };
}

export const ledgerTable = `CREATE TABLE IF NOT EXISTS chaos_ledger (
  id INTEGER PRIMARY KEY, slot INTEGER NOT NULL, holder TEXT NOT NULL, term INTEGER NOT NULL,
  seq INTEGER NOT NULL, at INTEGER NOT NULL, mono REAL NOT NULL)`;

/** SQLite's journal modes for a file that processes share; `delete` is what a new connection has. */
export const journalModes = ['delete', 'truncate', 'persist', 'wal'] as const;
export type JournalMode = (typeof journalModes)[number];

export interface DatabaseSetup {
  /** @default 'delete' */
  journal?: JournalMode;
  /** @default 50 ms in WAL mode (README's advice), else better-sqlite3's 5 s */
  busyTimeout?: number;
  /** Tables to create, if missing. */
  setupSql?: string;
}

/**
 * Opens `file` as users do: in WAL mode as README advises (synchronous NORMAL, a short busy
 * timeout), or in a rollback journal mode with better-sqlite3's defaults otherwise (what
 * `new Database(file)` gives, in `delete` mode). The setup itself waits longer: dozens of
 * processes starting at once all set the journal mode and create tables, which needs the
 * lock for a moment each.
 */
export function openWorkerDatabase(file: string, setup: DatabaseSetup = {}): Database.Database {
  return openWorkerConnection(file, { ...setup, driver: 'better-sqlite3' }).db;
}

/**
 * Opens `file` with `driver` as a user of it would (its own defaults, then the journal mode
 * and busy timeout asked): `raw` is the driver's connection, what the library is given;
 * `db` the same connection driven as better-sqlite3's, for the worker's own statements.
 * Each driver is loaded only when asked for: Bun has no better-sqlite3, Node.js no bun:sqlite.
 */
export function openWorkerConnection(
  file: string,
  { journal = 'delete', busyTimeout, setupSql = '', driver = 'better-sqlite3' }: DatabaseSetup & { driver?: SqliteDriver } = {},
): { raw: unknown; db: Database.Database } {
  let raw: unknown;
  if (driver === 'better-sqlite3') {
    const BetterSqlite3 = require('better-sqlite3') as typeof Database; // eslint-disable-line @typescript-eslint/no-require-imports -- loaded only when asked for
    raw = new BetterSqlite3(file, { timeout: 10_000 });
  } else if (driver === 'node:sqlite') {
    const { DatabaseSync } = require('node:sqlite') as { DatabaseSync: new (file: string, options: object) => unknown }; // eslint-disable-line @typescript-eslint/no-require-imports -- Node.js 22.13+ only
    raw = new DatabaseSync(file, { timeout: 10_000 });
  } else {
    const { Database: BunDatabase } = require('bun:sqlite') as { Database: new (file: string) => unknown }; // eslint-disable-line @typescript-eslint/no-require-imports -- Bun only
    raw = new BunDatabase(file);
  }
  const db = asBetterSqlite3(raw) as Database.Database;
  // bun:sqlite takes no timeout when it opens: the same 10 s as the others' before the setup,
  // whose statements would meet another process's lock at once without it.
  if (driver === 'bun:sqlite') db.exec('PRAGMA busy_timeout = 10000');
  db.exec(`PRAGMA journal_mode = ${journal}`);
  if (journal === 'wal') db.exec('PRAGMA synchronous = NORMAL');
  if (setupSql) db.exec(setupSql);
  db.exec(`PRAGMA busy_timeout = ${busyTimeout ?? (journal === 'wal' ? 50 : 5_000)}`);
  return { raw, db };
}

/** This host's CLOCK_MONOTONIC in ms, which a stepped wall clock leaves alone, and every process shares. */
export function monotonicNow(): number {
  // Bun's process.hrtime counts from the process's start: the library's reading is the host's clock there.
  return 'Bun' in globalThis ? readClocks(monotonicScheduler).now : Number(process.hrtime.bigint()) / 1e6;
}

/**
 * One JSON line: `at` by the wall clock (Unix ms, what the ledger and the faults use), and
 * `mono` by the host's monotonic clock, on which beliefs are compared when wall clocks step.
 */
export function report(record: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ at: Date.now(), mono: monotonicNow(), pid: process.pid, ...record })}\n`);
}

/**
 * For the benchmark: the CPU time used so far (µs) and the event loop's busy time (ms), as
 * libuv counts it (no timer of its own, so that measuring costs nothing).
 */
export function reportUsage(extra: Record<string, unknown> = {}): void {
  const { user, system } = process.cpuUsage();
  const { active, idle } = performance.eventLoopUtilization();
  report({ type: 'usage', cpu: user + system, uptime: process.uptime() * 1000, loopActive: active, loopTotal: active + idle, ...extra });
}

/** `leadershipMetrics()` through the SDK's Prometheus exporter, served by a server of its own on a free port. */
function startMetrics(worker: string): { candidates: LeadershipInstrument; watches: LeaderInstrument } {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const server = createServer((request, response) => exporter.getMetricsRequestHandler(request, response));
  server.listen(0, '127.0.0.1', () => report({ worker, type: 'metrics', port: (server.address() as AddressInfo).port }));
  server.unref();
  const meter = provider.getMeter('chaos-worker');
  return { candidates: leadershipMetrics({ meter }), watches: leaderMetrics({ meter }) };
}

function main(): void {
  const options = JSON.parse(process.argv[2]) as WorkerOptions;
  const {
    file,
    postgres,
    worker = 'worker',
    slots = 1,
    ledgerEvery,
    tickEvery,
    journal,
    busyTimeout,
    driver,
    clockOffset,
    health,
    metrics,
    ...timing
  } = options;
  if (clockOffset) {
    const realNow = Date.now;
    Date.now = () => realNow() + clockOffset;
  }
  const db = postgres
    ? postgresWorkerDatabase(postgres, worker, timing.expiresAfter)
    : sqliteWorkerDatabase(file!, { journal, busyTimeout, driver });
  const scheduler =
    clockOffset === undefined ? undefined : { now: () => Date.now(), schedule: asyncScheduler.schedule.bind(asyncScheduler) };
  // The library's default clock otherwise: the process's monotonic time from its start.
  const campaignClock = scheduler ?? { now: () => performance.timeOrigin + performance.now() };
  const lastLeases = new Map<number, ElectedEvent>();
  let subscriptions: Subscription[] = [];
  // A holder of its own for each subscription, as the default would be, but one that says
  // whose it is: the benchmark asks whether this worker holds a standby place.
  let round = 0;
  let holder = '';
  const healthReport = health ? leadershipHealth() : undefined;
  if (healthReport) {
    const server = createServer((_, response) => {
      const check = healthReport.check();
      response.writeHead(check.healthy ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(check));
    });
    server.listen(0, '127.0.0.1', () => report({ worker, type: 'health', port: (server.address() as AddressInfo).port }));
    server.unref();
  }
  const instruments: LeadershipInstrument[] = healthReport ? [healthReport] : [];
  if (metrics) {
    // As a worker that also watches who leads, for a dashboard: its candidates and its watches.
    const { candidates, watches } = startMetrics(worker);
    instruments.push(candidates);
    for (let slot = 0; slot < slots; slot++)
      observeLeader(db.campaignIn as SqliteDatabaseLike | LeaseReader, { slot, instrument: watches }).subscribe({ error: () => undefined });
  }
  let loopDelay: IntervalHistogram | undefined;
  /** The event loop's delays (ms) since the last call; the first call starts the count. */
  const reportLoopDelay = () => {
    if (loopDelay === undefined) {
      loopDelay = monitorEventLoopDelay({ resolution: 5 });
      loopDelay.enable();
    }
    const { max, count } = loopDelay;
    report({ worker, type: 'loop-delay', max: count === 0 ? 0 : max / 1e6, p99: count === 0 ? 0 : loopDelay.percentile(99) / 1e6, count });
    loopDelay.reset();
  };

  const fencedWrite = (lease: ElectedEvent, seq: number) =>
    db.append(lease, seq).then(
      () => report({ worker, type: 'fenced-write', slot: lease.slot, holder: lease.holder, term: lease.term, seq }),
      (error) => {
        const { code, message } = error as { code?: string; message: string };
        report({ worker, type: 'fenced-rejected', slot: lease.slot, holder: lease.holder, term: lease.term, code, message });
      },
    );

  const describe = (event: LeadershipEvent) =>
    event.type === 'error'
      ? { ...event, error: undefined, code: event.error.code, message: event.error.message }
      : // The belief's end on the host's monotonic clock too: the campaign's clock runs at its pace.
        { ...event, ...('expiresAt' in event && { monoExpiresAt: event.expiresAt - campaignClock.now() + monotonicNow() }) };

  const subscribe = () => {
    holder = `${worker}.${process.pid}.${++round}`;
    subscriptions = Array.from({ length: slots }, (_, slot) =>
      observeLeadership(db.campaignIn, {
        ...timing,
        slot,
        holder,
        ...(scheduler && { scheduler }),
        ...(instruments.length > 0 && { instrument: instruments }),
      })
        .pipe(
          tap((event) => {
            if (event.type === 'elected') lastLeases.set(slot, event);
            report({ worker, ...describe(event) });
          }),
          whileLeader((lease) =>
            merge(
              ledgerEvery
                ? interval(ledgerEvery).pipe(
                    tap((seq) => fencedWrite(lease, seq)),
                    ignoreElements(),
                  )
                : EMPTY,
              tickEvery ? interval(tickEvery).pipe(map(() => lease)) : EMPTY,
            ),
          ),
        )
        .subscribe({
          next: (lease) => report({ worker, type: 'tick', slot, holder: lease.holder, term: lease.term }),
          error: (error) => report({ worker, type: 'terminated', slot, code: error.code, message: error.message }),
        }),
    );
    report({ worker, type: 'subscribed', holder });
  };

  const unsubscribe = () => {
    // Reported first: belief ends when unsubscribe is called, and the release that follows
    // lets a successor in at once, which may report its election within the same millisecond.
    for (let slot = 0; slot < slots; slot++) report({ worker, type: 'unsubscribed', slot });
    for (const subscription of subscriptions) subscription.unsubscribe();
    subscriptions = [];
  };

  const exit = () => {
    unsubscribe();
    void db.close().finally(() => process.exit(0));
  };

  const commands: Record<string, (argument?: string) => void> = {
    subscribe,
    unsubscribe,
    'fenced-write': () => lastLeases.forEach((lease) => fencedWrite(lease, -1)),
    'fenced-hang': (slot = '0') => {
      const lease = lastLeases.get(Number(slot));
      if (lease) {
        void db
          .hang(lease)
          .catch(() =>
            report({ worker, type: 'fenced-rejected', slot: lease.slot, holder: lease.holder, term: lease.term, seq: uncommittedSeq }),
          );
      }
    },
    usage: () => reportUsage({ standby: db.standingBy(holder) }),
    'loop-delay': reportLoopDelay,
    exit,
  };
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, argument] = line.trim().split(' ');
    commands[command]?.(argument);
  });
  process.once('SIGTERM', exit);
  subscribe();
}

if (require.main === module) main();

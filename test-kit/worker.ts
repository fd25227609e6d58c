/**
 * A candidate process, for the chaos harness and the multi-process specs. It campaigns on
 * each of its slots with the built library, reports every event as one JSON line on
 * stdout, and while it leads a slot keeps appending rows to a ledger with `fenced`.
 *
 * Options come as JSON in argv[2] (see WorkerOptions). Commands come one per line on
 * stdin: `unsubscribe`, `subscribe`, `step-down` (every slot it leads, through the `stepDown` option), `hand-off SLOT,HOLDER` (asks that slot's leader, wherever it runs, to hand over to HOLDER), `priority N` (campaigns again with priority N and preempt on), `fenced-write` (one more write with the last lease of
 * each slot, whatever the campaign says since), `fenced-hang SLOT` (a fenced transaction
 * with that slot's last lease that never commits: the process blocks in it, to be killed
 * there), `usage` (CPU and event-loop time, for the benchmark), `loop-delay` (the event
 * loop's delays since the last `loop-delay`, the first starting the count), `exit`. SIGTERM
 * is a graceful stop. With `health`, it serves `leadershipHealth`'s report over HTTP as
 * README's health example does, on a free port of 127.0.0.1 that it reports (`health`).
 */
import { createServer } from 'node:http';
import { AddressInfo, Server, Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { IntervalHistogram, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Pool } from 'pg';
import { asyncScheduler, EMPTY, ignoreElements, interval, map, merge, SchedulerLike, Subject, Subscription, tap } from 'rxjs';
import {
  ElectedEvent,
  fenced,
  handOff,
  Lease,
  LeaderInstrument,
  LeadershipEvent,
  leadershipHealth,
  LeadershipInstrument,
  LeaseReader,
  LeaseStore,
  observeLeader,
  SqliteDatabaseLike,
  observeLeadership,
  whileLeader,
} from 'observe-leadership';
import { postgresLeaseStore } from 'observe-leadership/postgres';
import { leaderMetrics, leadershipMetrics } from 'observe-leadership/metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { PostgresTarget } from './chaos-database';
import { DatabaseSetup, ledgerTable, openWorkerConnection, SqliteDriver } from './worker-database';
import type { WorkerOptions } from './worker-options';
import { monotonicNow, report, reportUsage } from './worker-report';
import { uncommittedSeq } from './history';

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
    campaignIn: raw,
    append: async (lease, seq) =>
      void fenced(raw, lease, () => append.run(lease.slot, lease.holder, lease.term, seq, Date.now(), monotonicNow())),
    hang: async (lease) =>
      void fenced(raw, lease, () => {
        append.run(lease.slot, lease.holder, lease.term, uncommittedSeq, Date.now(), monotonicNow());
        report({ type: 'fenced-hang', slot: lease.slot, holder: lease.holder, term: lease.term, seq: uncommittedSeq });
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // the whole process, inside the transaction
      }),
    // Asked only once the campaign made its tables.
    standingBy: (holder) => {
      try {
        const row = db.prepare('SELECT count(*) AS places FROM worker_leadership_standby WHERE holder = ?').get(holder) as {
          places: number | bigint;
        };
        return Number(row.places) !== 0;
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
    standingBy: () => store.capabilities.changes.isWatching(),
    close: async () => {
      await store.settled().catch(() => undefined);
      await pool.end();
    },
  };
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

/**
 * Reports each follower a tenure endpoint of this process greeted (`greeted`): the kernel
 * lists a connection as accepted before the endpoint's callback writes the greeting, and a
 * follower never greeted has no proof of this process's death. Specs that kill a leader to
 * see a proof wait for this, not for the accepted connection alone.
 */
function reportGreetings(): void {
  const emit = Server.prototype.emit as (this: Server, event: string | symbol, ...args: unknown[]) => boolean;
  Server.prototype.emit = function (this: Server, event: string | symbol, ...args: unknown[]): boolean {
    const handled = emit.call(this, event, ...args);
    if (event === 'connection' && String(this.address()).includes('-leadership-')) report({ type: 'greeted' });
    return handled;
  };
}

/**
 * Reports each connection this process makes to a tenure endpoint, as a follower watching
 * its leader (`watch`): greeted, or closed before any greeting, and why. A follower that
 * never reached its leader's endpoint has no proof of its death; a spec that waits for the
 * followers to connect can then tell whether one tried, and what it met.
 */
function reportWatches(): void {
  const connect = Socket.prototype.connect as (this: Socket, ...args: unknown[]) => Socket;
  Socket.prototype.connect = function (this: Socket, ...args: unknown[]): Socket {
    // Node.js passes its normalized arguments as one array; Bun, as they came.
    const options = (Array.isArray(args[0]) ? args[0][0] : args[0]) as { path?: unknown } | undefined;
    const path = typeof options?.path === 'string' ? options.path : '';
    const at = path.lastIndexOf('-leadership-');
    if (at >= 0) {
      const endpoint = path.slice(at + '-leadership-'.length);
      let greeted = false;
      let failure: string | undefined;
      this.once('data', () => {
        greeted = true;
        report({ type: 'watch', endpoint, outcome: 'greeted' });
      });
      this.on('error', (error: NodeJS.ErrnoException) => (failure = error.code));
      this.once(
        'close',
        () => greeted || report({ type: 'watch', endpoint, outcome: `closed before a greeting (${failure ?? 'no error'})` }),
      );
    }
    return connect.apply(this, args);
  };
}

/** Serves `leadershipHealth`'s report over HTTP, as README's health example does, on a free port of 127.0.0.1 that it reports. */
function serveHealth(worker: string): LeadershipInstrument {
  const healthReport = leadershipHealth();
  const server = createServer((_, response) => {
    const check = healthReport.check();
    response.writeHead(check.healthy ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(check));
  });
  server.listen(0, '127.0.0.1', () => report({ worker, type: 'health', port: (server.address() as AddressInfo).port }));
  server.unref();
  return healthReport;
}

/** The options of a worker that are the worker's, not the library's. */
const setupOptions = [
  'file',
  'postgres',
  'worker',
  'slots',
  'ledgerEvery',
  'tickEvery',
  'journal',
  'busyTimeout',
  'driver',
  'clockOffset',
  'health',
  'metrics',
] as const;
type LibraryOptions = Omit<WorkerOptions, (typeof setupOptions)[number]>;

/** The options that go to `observeLeadership` as they are: the timing, a lock-delay, a sit-out. */
function libraryOptions(options: WorkerOptions): LibraryOptions {
  const library: Partial<WorkerOptions> = { ...options };
  for (const name of setupOptions) delete library[name];
  return library as LibraryOptions;
}

/** One worker process: its database, its candidates on each slot, and what its commands do. */
class Worker {
  private readonly name: string;
  private readonly db: WorkerDatabase;
  private readonly options: WorkerOptions;
  private readonly timing: LibraryOptions;
  /** The campaigns' clock when the worker's wall clock is offset; the library's default otherwise. */
  private readonly scheduler: SchedulerLike | undefined;
  private readonly instruments: LeadershipInstrument[] = [];
  private readonly lastLeases = new Map<number, ElectedEvent>();
  /** `step-down` on stdin: every slot this worker leads is stepped down from (the `stepDown` option). */
  private readonly stepDown = new Subject<void>();
  private subscriptions: Subscription[] = [];
  // A holder of its own for each subscription, as the default would be, but one that says
  // whose it is: the benchmark asks whether this worker holds a standby place.
  private round = 0;
  private holder = '';
  /** What the `priority` command set: this worker's priority, and preempt. */
  private preference: { priority?: number; preempt?: boolean } = {};
  private loopDelay: IntervalHistogram | undefined;

  constructor(options: WorkerOptions) {
    const { file, postgres, worker = 'worker', journal, busyTimeout, driver, clockOffset, health, metrics } = options;
    const timing = libraryOptions(options);
    this.options = options;
    this.name = worker;
    this.timing = timing;
    if (clockOffset) {
      const realNow = Date.now;
      Date.now = () => realNow() + clockOffset;
    }
    if (clockOffset !== undefined) {
      this.scheduler = { now: () => Date.now(), schedule: asyncScheduler.schedule.bind(asyncScheduler) as SchedulerLike['schedule'] };
    }
    this.db = postgres
      ? postgresWorkerDatabase(postgres, worker, timing.expiresAfter)
      : sqliteWorkerDatabase(file!, { journal, busyTimeout, driver });
    if (health) this.instruments.push(serveHealth(worker));
    if (metrics) {
      // As a worker that also watches who leads, for a dashboard: its candidates and its watches.
      const { candidates, watches } = startMetrics(worker);
      this.instruments.push(candidates);
      for (let slot = 0; slot < this.slots; slot++)
        observeLeader(this.db.campaignIn as SqliteDatabaseLike | LeaseReader, { slot, instrument: watches }).subscribe({
          error: () => undefined,
        });
    }
  }

  private get slots(): number {
    return this.options.slots ?? 1;
  }

  readonly subscribe = (): void => {
    const { name: worker, options } = this;
    this.holder = `${worker}.${process.pid}.${++this.round}`;
    const holder = this.holder;
    this.subscriptions = Array.from({ length: this.slots }, (_, slot) =>
      observeLeadership(this.db.campaignIn, {
        ...this.timing,
        ...this.preference,
        slot,
        holder,
        ...(this.scheduler && { scheduler: this.scheduler }),
        ...(this.instruments.length > 0 && { instrument: this.instruments }),
        stepDown: this.stepDown,
      })
        .pipe(
          tap((event) => {
            if (event.type === 'elected') this.lastLeases.set(slot, event);
            report({ worker, ...this.describe(event) });
          }),
          whileLeader((lease) =>
            merge(
              options.ledgerEvery
                ? interval(options.ledgerEvery).pipe(
                    tap((seq) => this.fencedWrite(lease, seq)),
                    ignoreElements(),
                  )
                : EMPTY,
              options.tickEvery ? interval(options.tickEvery).pipe(map(() => lease)) : EMPTY,
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

  readonly unsubscribe = (): void => {
    // Reported first: belief ends when unsubscribe is called, and the release that follows
    // lets a successor in at once, which may report its election within the same millisecond.
    for (let slot = 0; slot < this.slots; slot++) report({ worker: this.name, type: 'unsubscribed', slot });
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.subscriptions = [];
  };

  readonly exit = (): void => {
    this.unsubscribe();
    void this.db.close().finally(() => process.exit(0));
  };

  /** What each command on stdin does (see the top of this file). */
  commands(): Record<string, (argument?: string) => void> {
    const worker = this.name;
    return {
      subscribe: this.subscribe,
      unsubscribe: this.unsubscribe,
      'fenced-write': () => this.lastLeases.forEach((lease) => this.fencedWrite(lease, -1)),
      'fenced-hang': (slot = '0') => {
        const lease = this.lastLeases.get(Number(slot));
        if (lease) {
          void this.db
            .hang(lease)
            .catch(() =>
              report({ worker, type: 'fenced-rejected', slot: lease.slot, holder: lease.holder, term: lease.term, seq: uncommittedSeq }),
            );
        }
      },
      'step-down': () => this.stepDown.next(),
      // `priority N`: campaigns again with priority N and preempt on, as a new version would.
      priority: (argument = '0') => {
        this.preference = { priority: Number(argument), preempt: true };
        this.unsubscribe();
        this.subscribe();
      },
      // `hand-off SLOT,HOLDER`: asks the slot's leader to hand over to HOLDER, as the command would.
      'hand-off': (argument = '') => {
        const [slot, to] = argument.split(',');
        handOff(this.db.campaignIn as SqliteDatabaseLike | LeaseReader, { slot: Number(slot), to }).then(
          (result) => report({ worker, type: 'handoff-done', slot: Number(slot), to, term: result.to.term }),
          (error: { code?: string; message: string }) =>
            report({ worker, type: 'handoff-failed', slot: Number(slot), to, code: error.code }),
        );
      },
      usage: () => reportUsage({ standby: this.db.standingBy(this.holder) }),
      'loop-delay': () => this.reportLoopDelay(),
      exit: this.exit,
    };
  }

  private fencedWrite(lease: ElectedEvent, seq: number): Promise<void> {
    const worker = this.name;
    return this.db.append(lease, seq).then(
      () => report({ worker, type: 'fenced-write', slot: lease.slot, holder: lease.holder, term: lease.term, seq }),
      (error) => {
        const { code, message } = error as { code?: string; message: string };
        report({ worker, type: 'fenced-rejected', slot: lease.slot, holder: lease.holder, term: lease.term, code, message });
      },
    );
  }

  /** The event loop's delays (ms) since the last call; the first call starts the count. */
  private reportLoopDelay(): void {
    if (this.loopDelay === undefined) {
      this.loopDelay = monitorEventLoopDelay({ resolution: 5 });
      this.loopDelay.enable();
    }
    const { max, count } = this.loopDelay;
    const p99 = count === 0 ? 0 : this.loopDelay.percentile(99) / 1e6;
    report({ worker: this.name, type: 'loop-delay', max: count === 0 ? 0 : max / 1e6, p99, count });
    this.loopDelay.reset();
  }

  private describe(event: LeadershipEvent): Record<string, unknown> {
    return event.type === 'error'
      ? { ...event, error: undefined, code: event.error.code, message: event.error.message }
      : // The belief's end on the host's monotonic clock too.
        { ...event, ...('expiresAt' in event && { monoExpiresAt: this.onHostClock(event.expiresAt) }) };
  }

  /**
   * A time of the campaign's clock on the host's monotonic clock, which runs at its pace:
   * from readings of both taken back to back, the campaign's between two of the host's, and
   * taken again while the process was descheduled between them (on a busy machine, a ms or
   * more), which would otherwise shift the result by that much.
   */
  private onHostClock(at: number): number {
    // The library's default clock, unless offset: the process's monotonic time from its start.
    const campaignNow = this.scheduler ? () => Date.now() : () => performance.timeOrigin + performance.now();
    let best = { gap: Infinity, offset: 0 };
    for (let tries = 0; tries < 10 && best.gap > 0.05; tries++) {
      const before = monotonicNow();
      const campaign = campaignNow();
      const after = monotonicNow();
      if (after - before < best.gap) best = { gap: after - before, offset: (before + after) / 2 - campaign };
    }
    return at + best.offset;
  }
}

function main(): void {
  reportGreetings();
  reportWatches();
  const worker = new Worker(JSON.parse(process.argv[2]) as WorkerOptions);
  const commands = worker.commands();
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, argument] = line.trim().split(' ');
    commands[command]?.(argument);
  });
  process.once('SIGTERM', worker.exit);
  worker.subscribe();
}

if (require.main === module) main();

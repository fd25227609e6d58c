import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChaosDatabase, LeaseRow, postgresChaosDatabase, PostgresTarget, sqliteChaosDatabase } from '../test-kit/chaos-database';
import { planFaults } from './fault-plan';
import { FaultInjector } from './fault-injection';
import { began } from './moments';
import { ChaosHost, RunWorkers, Timing } from './run-workers';
import { FaultRecord, LedgerRow, WorkerRecord } from '../test-kit/history';
import { SteppedClock } from '../test-kit/stepped-clock';
import type { JournalMode } from '../test-kit/worker-database';
import type { WorkerOptions } from '../test-kit/worker-options';
import { sleep, stopWorkers } from '../test-kit/worker-process';

export interface ChaosOptions {
  /** Candidate processes of ours. */
  processes: number;
  /** Run length, ms (faults, then a quiet settle, then the final check). */
  duration: number;
  /** expiresAfter, ms; renewEvery is a third of it, retryEvery a fifth. */
  lease: number;
  seed: number;
  slots: number;
  /** Whether one more process runs the original worker's statements on slot 0. */
  originalWorker: boolean;
  /** The database file; a fresh one in a temporary folder if absent. */
  file?: string;
  /** How every process opens the file (see `openWorkerDatabase`). @default 'delete' */
  journal?: JournalMode;
  /** Campaign on PostgreSQL instead of a SQLite file (no worker of the original statements then). */
  postgres?: PostgresTarget;
  /**
   * PostgreSQL: the hosts the processes run on (process i on host i mod their number), each
   * reaching the server at its own URL; their links are what `cut-host` cuts. Not in reports.
   */
  hosts?: ChaosHost[];
  /** PostgreSQL: the URL the processes use instead of `postgres.url` (PgBouncer's, say), and what it is. */
  workerUrl?: string;
  through?: string;
  /**
   * Whether the wall clock steps (fault `clock-step`): on SQLite every worker's, on
   * PostgreSQL the server's, which `clock` moves. Beliefs are compared on the host's
   * monotonic clock either way.
   */
  clockSteps?: boolean;
}

/** What a run needs besides its options, and does not report. */
export interface ChaosParts {
  /** The wall clock that `clock-step` moves: every SQLite worker runs on it, or the PostgreSQL server does. */
  readonly clock?: SteppedClock;
}

export type { ChaosHost };

/** The state of every slot at the end, after faults stopped and leases had time to settle. */
interface FinalState {
  at: number;
  /** `at` on the host's monotonic clock. */
  mono?: number;
  rows: LeaseRow[];
  /** Holders of processes still alive, by slot, from their own reports. */
  liveHolders: Array<{ slot: number; holder: string }>;
}

/** Everything a run saw: what the checker reads, and what `--report` writes. */
export interface ChaosHistory {
  options: ChaosOptions;
  timing: Timing;
  startedAt: number;
  endedAt: number;
  records: WorkerRecord[];
  faults: FaultRecord[];
  ledger: LedgerRow[];
  final: FinalState;
}

function timingFor(lease: number): Timing {
  return { renewEvery: Math.round(lease / 3), expiresAfter: lease, retryEvery: Math.max(1, Math.round(lease / 5)) };
}

/**
 * Runs worker processes on one SQLite file (or one PostgreSQL schema), injects the planned
 * faults, then lets the slots settle and collects the history. Never throws for what the
 * workers do: that is for the checker to judge.
 */
export async function runChaos(
  options: ChaosOptions,
  log: (line: string) => void = () => undefined,
  { clock }: ChaosParts = {},
): Promise<ChaosHistory> {
  if (options.clockSteps && clock === undefined) throw new Error('clockSteps needs the clock to step');
  const timing = timingFor(options.lease);
  const { postgres, journal = 'delete' } = options;
  const file = postgres ? undefined : (options.file ?? join(mkdtempSync(join(tmpdir(), 'observe-leadership-chaos-')), 'chaos.db'));
  const db: ChaosDatabase = postgres ? await postgresChaosDatabase(postgres) : sqliteChaosDatabase(file!, journal);
  const workerOptions: WorkerOptions = {
    file,
    postgres,
    journal,
    slots: options.slots,
    ...timing,
    ledgerEvery: Math.max(10, Math.round(options.lease / 10)),
  };

  const hosts = options.hosts ?? [];
  const workers = new RunWorkers({ workerOptions, timing, hosts, workerUrl: options.workerUrl, clock }, log);
  const injector = new FaultInjector(workers, db, timing, clock);
  for (let i = 1; i <= options.processes; i++) workers.start(`w${i}`, 'candidate');
  if (options.originalWorker && !postgres) workers.start('original', 'original');
  const startedAt = Date.now();

  const plan = planFaults({
    seed: options.seed,
    duration: options.duration,
    lease: options.lease,
    slots: options.slots,
    hosts: hosts.length > 1,
    clockSteps: options.clockSteps,
  });
  const timers = plan.map((planned) => setTimeout(() => injector.inject(planned), planned.at));
  const where = postgres
    ? `schema ${postgres.schema} of ${postgres.url}${hosts.length ? ` from ${hosts.length} hosts` : ''}${options.through ? ` through ${options.through}` : ''}`
    : `${file} (journal_mode ${journal})`;
  log(`${workers.all.length} workers on ${where}; ${plan.length} faults planned over ${Math.round(options.duration / 1000)} s`);
  await sleep(options.duration);
  timers.forEach(clearTimeout);

  // Quiet: let every lasting fault end and the slots settle, then look at the final state,
  // with the wall clock back on time for the rows that the quiet end writes.
  await workers.settled();
  clock?.reset();
  await sleep(timing.expiresAfter + 4 * timing.retryEvery + 500);
  workers.stopping = true;
  const final: FinalState = {
    ...began(),
    rows: await db.leaseRows(),
    liveHolders: workers.live().flatMap((w) => [...w.holders].map(([slot, holder]) => ({ slot, holder }))),
  };

  await stopWorkers(workers.all);
  await workers.settled();

  const ledger: LedgerRow[] = await db.ledger();
  await db.close();
  return { options, timing, startedAt, endedAt: Date.now(), records: workers.records, faults: injector.faults, ledger, final };
}

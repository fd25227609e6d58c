import type Database from 'better-sqlite3';
import { beliefSegments, BeliefSegment } from '../../test-kit/history';
import { eventually } from '../../test-kit/eventually';
import type { JournalMode } from '../../test-kit/worker-database';
import type { WorkerOptions } from '../../test-kit/worker-options';
import { ChildWorker, explainFailure, isStopped } from './child-worker';
import { temporaryDatabase, TemporaryDatabase } from './temporary-database';

/** Worker processes on one fresh database file per test, stopped after it. */
export interface WorkerGroup {
  readonly database: TemporaryDatabase;
  readonly workers: readonly ChildWorker[];
  /** Starts a worker on the test's file, in its journal mode; `launcher` runs node for it (`ip netns exec NAME`, say). */
  start(
    kind: 'candidate' | 'original',
    options: Omit<WorkerOptions, 'file' | 'journal'>,
    launcher?: string[],
    runtime?: string,
  ): ChildWorker;
  /** The first of `candidates` that says it leads, once one does. */
  leaderAmong(candidates: readonly ChildWorker[]): Promise<ChildWorker>;
  /**
   * Every worker's belief segments so far, on the host's monotonic clock unless told: on the
   * wall clock, a report's time is one process's `Date.now()` and a belief's end another's
   * campaign clock, anchored to the wall clock at its start, and the two drift apart by ms
   * (13 ms between two processes in a rehearsal on Node.js 24: a false overlap of 6 ms).
   */
  history(clock?: 'wall' | 'monotonic'): BeliefSegment[];
  /** Runs `test`; if it fails, adds what every worker said, so that the failure can be read. */
  explain(test: () => Promise<void>): Promise<void>;
  /** The terms of every election so far, in the order they came (the original worker's have none). */
  electedTerms(): number[];
}

/**
 * For a `describe` block of multi-process specs: registers the hooks that give each test a
 * fresh file in `journal` mode, and stop its workers and remove the file after it.
 */
export function workerGroup(journal: JournalMode): WorkerGroup {
  let database: TemporaryDatabase;
  let workers: ChildWorker[] = [];
  beforeEach(() => {
    database = temporaryDatabase(journal);
    // The file in its journal mode before any worker opens it: workers that start together
    // on a new file all convert it to WAL, and one can meet another's conversion with
    // SQLITE_BUSY at once (no busy wait there).
    database.open();
    workers = [];
  });
  afterEach(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    database.remove();
  });
  return {
    get database() {
      return database;
    },
    get workers() {
      return workers;
    },
    start: (kind, options, launcher = [], runtime) => {
      const worker = new ChildWorker(kind, { file: database.file, journal, ...options }, launcher, runtime);
      workers.push(worker);
      return worker;
    },
    leaderAmong: (candidates) => eventually('a leader', () => candidates.find((w) => w.leads)),
    history: (clock = 'monotonic') => workers.flatMap((w) => beliefSegments(w.records, clock)),
    explain: (test) => explainFailure(() => workers, test),
    electedTerms: () =>
      workers
        .flatMap((w) => w.records)
        .filter((r) => r.type === 'elected' && r.term !== undefined)
        .sort((a, b) => a.at - b.at)
        .map((r) => r.term!),
  };
}

/**
 * Stops `worker` with SIGSTOP at a moment when it holds no lock: a process paused inside a
 * write transaction (or, outside WAL mode, inside a read) stops every writer until it
 * resumes (SQLite's nature), which is not what this test is about. Checks with a probe
 * connection that takes the exclusive lock, and tries again if needed. `pid` is the worker's
 * own process where a launcher runs it as a child (`unshare --fork`).
 */
export async function pauseOutsideWriteLock(worker: ChildWorker, probe: Database.Database, pid = worker.pid): Promise<void> {
  for (;;) {
    process.kill(pid, 'SIGSTOP');
    await eventually('the process to stop', () => isStopped(pid));
    try {
      probe.exec('BEGIN EXCLUSIVE');
      probe.exec('ROLLBACK');
      return;
    } catch {
      process.kill(pid, 'SIGCONT');
      await eventually('the process to run again', () => !isStopped(pid));
    }
  }
}

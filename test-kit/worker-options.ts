import type { PostgresTarget } from './chaos-database';
import type { JournalMode, SqliteDriver } from './worker-database';

/** What a worker process is told to do, as JSON in its argv[2] (see worker.ts). */
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
  /** The library's `lockDelay`. @default 0 */
  lockDelay?: number;
  /** The library's `sitOut`. @default `expiresAfter` */
  sitOut?: number;
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

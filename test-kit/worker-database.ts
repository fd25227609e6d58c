import type Database from 'better-sqlite3';
import type { SqliteDatabaseLike } from 'observe-leadership';

/*
 * The SQLite files of the test kit's workers, and of the tools that share them (the chaos
 * harness, the benchmark, the demo): opened as users open them, in each journal mode.
 */

/** Which SQLite driver a worker opens its file with. */
export type SqliteDriver = 'better-sqlite3' | 'node:sqlite' | 'bun:sqlite';

/** What the three drivers' connections share, and all the worker's own statements use. */
export interface SqliteConnection {
  prepare(sql: string): { run(...parameters: unknown[]): unknown; get(...parameters: unknown[]): unknown };
  exec(sql: string): void;
  close(): void;
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
  return openWorkerConnection(file, { ...setup, driver: 'better-sqlite3' }).raw as unknown as Database.Database;
}

/**
 * Opens `file` with `driver` as a user of it would (its own defaults, then the journal mode
 * and busy timeout asked): `raw` is the driver's connection, what the library is given;
 * `db` the same connection as the worker's own statements use it, through what the three
 * drivers share (as the examples do). Each driver is loaded only when asked for: Bun has no
 * better-sqlite3, Node.js no bun:sqlite.
 */
export function openWorkerConnection(
  file: string,
  { journal = 'delete', busyTimeout, setupSql = '', driver = 'better-sqlite3' }: DatabaseSetup & { driver?: SqliteDriver } = {},
): { raw: SqliteDatabaseLike; db: SqliteConnection } {
  let raw: SqliteDatabaseLike;
  if (driver === 'better-sqlite3') {
    const BetterSqlite3 = require('better-sqlite3') as typeof Database; // eslint-disable-line @typescript-eslint/no-require-imports -- loaded only when asked for
    raw = new BetterSqlite3(file, { timeout: 10_000 }) as SqliteDatabaseLike;
  } else if (driver === 'node:sqlite') {
    const { DatabaseSync } = require('node:sqlite') as { DatabaseSync: new (file: string, options: object) => SqliteDatabaseLike }; // eslint-disable-line @typescript-eslint/no-require-imports -- Node.js 22.13+ only
    raw = new DatabaseSync(file, { timeout: 10_000 });
  } else {
    const { Database: BunDatabase } = require('bun:sqlite') as { Database: new (file: string) => SqliteDatabaseLike }; // eslint-disable-line @typescript-eslint/no-require-imports -- Bun only
    raw = new BunDatabase(file);
  }
  const db = raw as SqliteConnection;
  // bun:sqlite takes no timeout when it opens: the same 10 s as the others' before the setup,
  // whose statements would meet another process's lock at once without it.
  if (driver === 'bun:sqlite') db.exec('PRAGMA busy_timeout = 10000');
  db.exec(`PRAGMA journal_mode = ${journal}`);
  if (journal === 'wal') db.exec('PRAGMA synchronous = NORMAL');
  if (setupSql) db.exec(setupSql);
  db.exec(`PRAGMA busy_timeout = ${busyTimeout ?? (journal === 'wal' ? 50 : 5_000)}`);
  return { raw, db };
}

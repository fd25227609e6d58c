import type { Database } from 'better-sqlite3';
import { Stats, statSync } from 'node:fs';
import { LeadershipError } from '../core/leadership-error';
import { errorText } from '../core/error-text';
import { asBetterSqlite3, SqliteDriver } from '../store/sqlite/sqlite-driver';
import { SqliteLeaseStore, sqliteLeaseStore } from '../store/sqlite/sqlite-lease-store';
import { CliError, exitCode } from './cli-arguments';
import { patiently } from './patiently';

/** A SQLite file the command line opened, with the driver it took. */
export interface OpenedSqliteFile {
  /** The connection as the driver made it: what the library's functions take. */
  readonly raw: unknown;
  /** The same, driven as better-sqlite3's `Database` (see sqlite-driver.ts). */
  readonly db: Database;
  readonly driver: SqliteDriver;
}

/**
 * Opens `file` with the first SQLite driver this runtime has: better-sqlite3 when it is
 * installed (and loads: it does not in Bun), else Bun's `bun:sqlite` under Bun, else Node's
 * `node:sqlite` (22.13+). Each is loaded only here, so that a user of one needs none of the
 * others. `create: false` never makes a file. The command runs no statement of its own: all
 * it reads or creates, it asks of the store (see `checkedStore`).
 */
export async function openSqliteFile(
  file: string,
  { readonly, create }: { readonly: boolean; create: boolean },
): Promise<OpenedSqliteFile> {
  const failures: string[] = [];
  try {
    const { default: BetterSqlite3 } = await import('better-sqlite3');
    const db = new BetterSqlite3(file, { readonly, fileMustExist: !create });
    return { raw: db, db, driver: 'better-sqlite3' };
  } catch (error) {
    if (!isMissingDriver(error)) throw error;
    failures.push(`better-sqlite3 (${(error as Error).message.split('\n')[0]})`);
  }
  if ('Bun' in globalThis) {
    const { Database } = (await import('bun:sqlite' as string)) as { Database: new (file: string, options: object) => unknown };
    const raw = new Database(file, { readonly, create });
    return { raw, db: asBetterSqlite3(raw) as Database, driver: 'bun:sqlite' };
  }
  let sqlite: { DatabaseSync: new (file: string, options: object) => unknown };
  try {
    sqlite = (await import('node:sqlite' as string)) as typeof sqlite;
  } catch (error) {
    failures.push(`node:sqlite (${(error as Error).message})`);
    throw new CliError(
      exitCode.failed,
      `no SQLite driver: install better-sqlite3, or run on Node.js 22.13+ or Bun; tried ${failures.join(', ')}`,
    );
  }
  const raw = new sqlite.DatabaseSync(file, { readOnly: readonly });
  return { raw, db: asBetterSqlite3(raw) as Database, driver: 'node:sqlite' };
}

/** Whether loading better-sqlite3 failed because it is not there or cannot load here (Bun, a binary for another Node.js), not because of the file. */
function isMissingDriver(error: unknown): boolean {
  const { code, message = '' } = (error ?? {}) as { code?: string; message?: string };
  return (
    code === 'MODULE_NOT_FOUND' ||
    code === 'ERR_MODULE_NOT_FOUND' ||
    code === 'ERR_DLOPEN_FAILED' ||
    /not yet supported in Bun|NODE_MODULE_VERSION|Could not locate the bindings file/.test(message)
  );
}

/**
 * Refuses a path that exists and is no file (a directory, a FIFO, a device), before a driver
 * opens it and says only "disk I/O error" or "unable to open database file".
 */
export function expectFileIfAny(path: string): void {
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch {
    return; // nothing there (or nothing this process may look at): the caller says what it means
  }
  if (stats.isDirectory()) throw new CliError(exitCode.notDatabase, `${path} is a directory, not a SQLite database file`);
  if (!stats.isFile()) throw new CliError(exitCode.notDatabase, `${path} is not a regular file, so not a SQLite database`);
}

/**
 * The store of the file `opened`, once its first look at the file (whether the lease table
 * exists: opening reads nothing) showed a SQLite database. A file that is something else
 * ends the command with exit code 5, one that cannot be used otherwise with 3; either is
 * closed first. The command runs no statement of its own: it asks the store.
 */
export async function checkedStore(opened: OpenedSqliteFile, file: string): Promise<SqliteLeaseStore> {
  const store = sqliteLeaseStore(opened.db);
  try {
    await patiently(() => store.hasTable());
    return store;
  } catch (error) {
    opened.db.close();
    if (!(error instanceof LeadershipError)) throw error;
    if (error.code === 'DATABASE_CORRUPT') {
      const reason = error.cause instanceof Error ? error.cause.message : error.message;
      throw new CliError(exitCode.notDatabase, `${file} is not a SQLite database, or a damaged one (${reason})`);
    }
    throw new CliError(exitCode.noDatabase, `cannot use ${file} as a SQLite database: ${errorText(error)}`);
  }
}

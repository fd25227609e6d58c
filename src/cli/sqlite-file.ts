import type { Database } from 'better-sqlite3';
import { asBetterSqlite3, SqliteDriver } from '../store/sqlite/sqlite-driver';
import { toLeadershipError } from '../store/sqlite/sqlite-error';
import { CliError, exitCode } from './cli-arguments';

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
 * others. `create: false` never makes a file; the connection waits up to a second for a lock,
 * as better-sqlite3's `timeout` says (the library's own statements never wait).
 */
export async function openSqliteFile(
  file: string,
  { readonly, create }: { readonly: boolean; create: boolean },
): Promise<OpenedSqliteFile> {
  const failures: string[] = [];
  try {
    const { default: BetterSqlite3 } = await import('better-sqlite3');
    const db = new BetterSqlite3(file, { readonly, fileMustExist: !create, timeout: 1_000 });
    return { raw: db, db, driver: 'better-sqlite3' };
  } catch (error) {
    if (!isMissingDriver(error)) throw error;
    failures.push(`better-sqlite3 (${(error as Error).message.split('\n')[0]})`);
  }
  if ('Bun' in globalThis) {
    const { Database } = (await import('bun:sqlite' as string)) as { Database: new (file: string, options: object) => unknown };
    const raw = new Database(file, { readonly, create });
    (asBetterSqlite3(raw) as Database).exec('PRAGMA busy_timeout = 1000');
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
  const raw = new sqlite.DatabaseSync(file, { readOnly: readonly, timeout: 1_000 });
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
 * Checks that the file `db` opened is a SQLite database by reading its schema (opening
 * reads nothing), and closes it if not: exit code 5 for a file that is something else (or a
 * damaged database), 3 for one that cannot be read at all.
 */
export function expectSqliteDatabase(db: Database, file: string): void {
  try {
    db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (error) {
    const notDatabase = toLeadershipError(error, db).code === 'DATABASE_CORRUPT';
    db.close();
    const reason = (error as Error).message;
    throw notDatabase
      ? new CliError(exitCode.notDatabase, `${file} is not a SQLite database, or a damaged one (${reason})`)
      : new CliError(exitCode.noDatabase, `cannot read ${file} as a SQLite database: ${reason}`);
  }
}

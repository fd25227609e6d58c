import type { Database } from 'better-sqlite3';
import { LeadershipError } from '../../core/leadership-error';
import { LockTaken } from '../lease-store';

/**
 * Turns what a SQLite driver threw into a `LeadershipError` whose code says whether it can
 * heal. better-sqlite3 reports a closed connection with a plain `TypeError`, so the
 * connection's own state is asked first; SQLite's extended codes (`SQLITE_BUSY_SNAPSHOT`,
 * `SQLITE_READONLY_DBMOVED`, ...) are grouped by their primary code. A lock met without
 * waiting (`waited: false`: the library's own statements, which run with no busy wait) is
 * `LockTaken`, which the caller retries on its own timers.
 */
export function toLeadershipError(error: unknown, db: Database, { waited = true } = {}): LeadershipError {
  if (error instanceof LeadershipError) return error;
  if (!db.open) return new LeadershipError('DATABASE_CLOSED', 'The database connection is closed', { cause: error });
  const code = codeOf(sqliteCodeOf(error));
  const reason = error instanceof Error ? error.message : String(error);
  if (code === 'DATABASE_BUSY' && !waited) return new LockTaken(`${describe[code]}: ${reason} (not waited for)`, { cause: error });
  return new LeadershipError(code, `${describe[code]}: ${reason}`, { cause: error });
}

/** SQLite's primary result codes that the mapping below tells apart, by number (node:sqlite gives only the number). */
const primaryCodes: Record<number, string> = {
  3: 'SQLITE_PERM',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  8: 'SQLITE_READONLY',
  11: 'SQLITE_CORRUPT',
  23: 'SQLITE_AUTH',
  26: 'SQLITE_NOTADB',
};

/**
 * The SQLite code of what a driver threw: better-sqlite3 and bun:sqlite name it in `code`
 * (`SQLITE_BUSY`, `SQLITE_BUSY_SNAPSHOT`), node:sqlite gives `code: 'ERR_SQLITE_ERROR'` and
 * the (extended) number in `errcode`, whose low byte is the primary code.
 */
function sqliteCodeOf(error: unknown): string {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return code;
  return typeof errcode === 'number' ? (primaryCodes[errcode & 0xff] ?? 'SQLITE_ERROR') : '';
}

type DatabaseErrorCode = 'DATABASE_BUSY' | 'DATABASE_READONLY' | 'DATABASE_CORRUPT' | 'DATABASE_ERROR';

function codeOf(sqliteCode: string): DatabaseErrorCode {
  switch (sqliteCode.split('_').slice(0, 2).join('_')) {
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return 'DATABASE_BUSY';
    case 'SQLITE_READONLY':
    case 'SQLITE_PERM':
    case 'SQLITE_AUTH':
      return 'DATABASE_READONLY';
    case 'SQLITE_CORRUPT':
    case 'SQLITE_NOTADB':
      return 'DATABASE_CORRUPT';
    default:
      return 'DATABASE_ERROR';
  }
}

const describe: Record<DatabaseErrorCode, string> = {
  DATABASE_BUSY: 'The database is locked by another connection',
  DATABASE_READONLY: 'The database cannot be written',
  DATABASE_CORRUPT: 'The file is not a usable database',
  DATABASE_ERROR: 'The database failed',
};

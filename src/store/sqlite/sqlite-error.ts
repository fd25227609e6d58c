import type { Database } from 'better-sqlite3';
import { LeadershipError } from '../../core/leadership-error';
import { LockTaken } from '../lease-store';

/**
 * Turns what better-sqlite3 threw into a `LeadershipError` whose code says whether it can
 * heal. better-sqlite3 reports a closed connection with a plain `TypeError`, so the
 * connection's own state is asked first; SQLite's extended codes (`SQLITE_BUSY_SNAPSHOT`,
 * `SQLITE_READONLY_DBMOVED`, ...) are grouped by their primary code. A lock met without
 * waiting (`waited: false`: the library's own statements, which run with no busy wait) is
 * `LockTaken`, which the caller retries on its own timers.
 */
export function toLeadershipError(error: unknown, db: Database, { waited = true } = {}): LeadershipError {
  if (error instanceof LeadershipError) return error;
  if (!db.open) return new LeadershipError('DATABASE_CLOSED', 'The database connection is closed', { cause: error });
  const sqliteCode = typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : '';
  const code = codeOf(sqliteCode);
  const reason = error instanceof Error ? error.message : String(error);
  if (code === 'DATABASE_BUSY' && !waited) return new LockTaken(`${describe[code]}: ${reason} (not waited for)`, { cause: error });
  return new LeadershipError(code, `${describe[code]}: ${reason}`, { cause: error });
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

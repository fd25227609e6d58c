import { LeadershipError, LeadershipErrorCode } from '../../core/leadership-error';

/**
 * Turns what `pg` threw or rejected with into a `LeadershipError` whose code says whether it
 * can heal. Server errors carry a SQLSTATE (`code`, five characters); network failures carry
 * Node's `ECONNRESET` and the like, or only a message. Whatever is not known to be terminal
 * counts as transient: a leader then steps down at its deadline, and campaigning goes on.
 */
export function toLeadershipError(error: unknown): LeadershipError {
  if (error instanceof LeadershipError) return error;
  const code = codeOf(error);
  const reason = error instanceof Error ? error.message : String(error);
  return new LeadershipError(code, `${describe[code]}: ${reason}`, { cause: error });
}

type PostgresErrorCode = Extract<
  LeadershipErrorCode,
  'DATABASE_BUSY' | 'DATABASE_READONLY' | 'DATABASE_CLOSED' | 'ACCESS_DENIED' | 'SCHEMA_MISMATCH' | 'DATABASE_ERROR'
>;

function codeOf(error: unknown): PostgresErrorCode {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message === 'string' && message.includes('after calling end on the pool')) return 'DATABASE_CLOSED';
  switch (typeof code === 'string' ? code : '') {
    case '40001': // serialization_failure
    case '40P01': // deadlock_detected
    case '55P03': // lock_not_available
    case '57014': // query_canceled (statement_timeout)
      return 'DATABASE_BUSY';
    case '25006': // read_only_sql_transaction (a standby server)
    case '42501': // insufficient_privilege
      return 'DATABASE_READONLY';
    case '28000': // invalid_authorization_specification
    case '28P01': // invalid_password
    case '3D000': // invalid_catalog_name: no such database
      return 'ACCESS_DENIED';
    case '42703': // undefined_column
    case '42804': // datatype_mismatch
      return 'SCHEMA_MISMATCH';
    default:
      return 'DATABASE_ERROR';
  }
}

const describe: Record<PostgresErrorCode, string> = {
  DATABASE_BUSY: 'The database did not answer in time (a lock, a timeout)',
  DATABASE_READONLY: 'The database cannot be written by this role',
  DATABASE_CLOSED: 'The pool has been ended',
  ACCESS_DENIED: 'The server refused this role or database',
  SCHEMA_MISMATCH: 'The lease table has another shape',
  DATABASE_ERROR: 'The database failed',
};

import { argumentError, expectConfig, expectInteger, expectObject, expectString, MAX_DELAY } from '../../core/argument-check';
import type { PostgresLeaseTable } from './postgres-schema';

/** Options of `postgresLeaseStore`. */
export interface PostgresLeaseStoreConfig {
  /**
   * The schema of the lease table, created if missing.
   * @default 'public'
   */
  schema?: string;
  /**
   * The lease table, created if missing, with its term sequence `<table>_term` beside it.
   * @default 'worker_leadership'
   */
  table?: string;
  /**
   * Ms after which a statement of the store that got no answer fails (`pg`'s `query_timeout`),
   * as a transient error: a campaign makes one call at a time, and a call that hangs on a
   * dead connection must not keep it from the next. It does not bound the wait for a
   * connection from the pool: set the pool's `connectionTimeoutMillis` for that.
   * @default 5_000
   */
  queryTimeout?: number;
}

/** A store's config, checked, with its defaults. */
export interface ResolvedPostgresConfig {
  readonly names: PostgresLeaseTable;
  readonly queryTimeout: number;
  /** What tells two configs apart: one store per pool and key. */
  readonly key: string;
}

/** Checks `pool` and `config` at once, throwing `TypeError` or `RangeError` with the field, what it expects and the value. */
export function resolvePostgresConfig(pool: unknown, config: PostgresLeaseStoreConfig): ResolvedPostgresConfig {
  const pg = expectObject('pool', pool, 'a pg Pool') as Record<string, unknown>;
  if (typeof pg.query !== 'function' || typeof pg.connect !== 'function' || typeof pg.on !== 'function') {
    throw argumentError(TypeError, 'pool', 'a pg Pool', pool);
  }
  expectConfig(config, ['schema', 'table', 'queryTimeout']);
  const { schema = 'public', table = 'worker_leadership', queryTimeout = 5_000 } = config;
  // PostgreSQL names are at most 63 bytes; the term sequence adds `_term` to the table's.
  expectString('schema', schema, 63);
  expectString('table', table, 58);
  expectInteger('queryTimeout', queryTimeout, 1, MAX_DELAY);
  return { names: { schema, table }, queryTimeout, key: JSON.stringify([schema, table, queryTimeout]) };
}

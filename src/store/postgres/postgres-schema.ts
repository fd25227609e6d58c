import type { Pool } from 'pg';
import { LeadershipError } from '../../core/leadership-error';
import { inTransaction } from './postgres-transaction';

/** Where the leases live: a table of the user's naming, and its term sequence beside it. */
export interface PostgresLeaseTable {
  readonly schema: string;
  readonly table: string;
}

/** `"name"`, with any double quote doubled: identifiers of the user's naming are quoted everywhere. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export function qualifiedNames({ schema, table }: PostgresLeaseTable): { table: string; termSequence: string } {
  return {
    table: `${quoteIdentifier(schema)}.${quoteIdentifier(table)}`,
    termSequence: `${quoteIdentifier(schema)}.${quoteIdentifier(`${table}_term`)}`,
  };
}

/*
 * The original worker's row (slot, holder, expires_at in Unix ms) with the term in it. Terms
 * come from a sequence, not from the row: a release deletes the row, as the original does,
 * and a sequence never goes back, whatever is deleted, so every tenure's term is greater
 * than every term granted before, on every slot. `lease_ms` is the lease's length as its
 * holder wrote it: the server's clock may step, so followers time a lease by watching it
 * for that long rather than by comparing `expires_at` with that clock. A table made by an
 * earlier version gets the column on a candidate's first start.
 */
const expectedColumns: Record<string, string> = {
  slot: 'bigint',
  holder: 'text',
  expires_at: 'bigint',
  term: 'bigint',
};

/**
 * Creates what is missing (schema, table, sequence), then checks that the table has the
 * shape the statements need. Creation runs under a transaction-scoped advisory lock, so
 * that candidates starting together do not race on the catalog; the lock only orders the
 * creation and is never a source of truth for leadership.
 */
export async function installPostgresSchema(pool: Pool, names: PostgresLeaseTable): Promise<void> {
  if ((await describeTable(pool, names)) === 'complete') return;
  const { table, termSequence } = qualifiedNames(names);
  await inTransaction(pool, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('observe-leadership schema'))`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(names.schema)}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${table} (
      slot bigint PRIMARY KEY,
      holder text NOT NULL,
      expires_at bigint NOT NULL,
      term bigint NOT NULL,
      lease_ms bigint)`);
    await client.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS lease_ms bigint`);
    await client.query(`CREATE SEQUENCE IF NOT EXISTS ${termSequence}`);
  });
  if ((await describeTable(pool, names)) !== 'complete') {
    throw new LeadershipError('SCHEMA_MISMATCH', `${table} could not be created`);
  }
}

/** Whether the lease table, its `lease_ms` and its sequence exist; throws if the table has another shape. */
async function describeTable(pool: Pool, names: PostgresLeaseTable): Promise<'complete' | 'incomplete'> {
  const { table, termSequence } = qualifiedNames(names);
  // The catalog, not information_schema, which hides what the role has no privilege on: a
  // role that may only read the table must still find the sequence there.
  const { rows } = await pool.query<{ column_name: string; data_type: string; sequence: boolean }>(
    `SELECT attname AS column_name, format_type(atttypid, atttypmod) AS data_type, to_regclass($2) IS NOT NULL AS sequence
     FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
    [table, termSequence],
  );
  if (rows.length === 0) return 'incomplete';
  const found = Object.fromEntries(rows.map((row) => [row.column_name, row.data_type]));
  const wrong = Object.entries(expectedColumns).filter(([column, type]) => found[column] !== type);
  if (wrong.length > 0) {
    const shape = Object.entries(expectedColumns)
      .map(([column, type]) => `${column} ${type}`)
      .join(', ');
    throw new LeadershipError(
      'SCHEMA_MISMATCH',
      `${table} exists with another shape: expected ${shape}; got ${rows.map((row) => `${row.column_name} ${row.data_type}`).join(', ')}`,
    );
  }
  if (found.lease_ms !== undefined && found.lease_ms !== 'bigint') {
    throw new LeadershipError(
      'SCHEMA_MISMATCH',
      `${table} exists with another shape: expected lease_ms bigint; got lease_ms ${found.lease_ms}`,
    );
  }
  // A missing sequence or length is created with the rest.
  return rows[0].sequence && found.lease_ms !== undefined ? 'complete' : 'incomplete';
}

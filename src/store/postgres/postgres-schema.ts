import type { Pool } from 'pg';
import { LeadershipError } from '../../core/leadership-error';
import { inTransaction } from './postgres-transaction';

/** Where the leases live: a table of the user's naming, and its term sequence beside it. */
export interface PostgresLeaseTable {
  readonly schema: string;
  readonly table: string;
}

/** `"name"`, with any double quote doubled: identifiers of the user's naming are quoted everywhere. */
function quoteIdentifier(name: string): string {
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
 * for that long rather than by comparing `expires_at` with that clock. `advertised` is what
 * the holder advertises.
 */
const expectedColumns: Record<string, string> = {
  slot: 'bigint',
  holder: 'text',
  expires_at: 'bigint',
  term: 'bigint',
  lease_ms: 'bigint',
  advertised: 'text',
};

/** Sends one statement, resolving with its rows. */
type Query = (text: string, values: unknown[]) => Promise<unknown[]>;

/** The catalog's answer about the lease table (see `describeTable`). */
interface Found {
  readonly schema: boolean;
  readonly sequence: boolean;
  /** The table's columns and their types; empty when there is no table. */
  readonly columns: Record<string, string>;
}

/**
 * Creates what is missing, and only that, then checks that the table has the shape the
 * statements need. A role granted only what the documentation lists (`SELECT, INSERT,
 * UPDATE, DELETE` on a table made by hand, `USAGE` on its sequence) creates nothing and is
 * asked for nothing more: no `CREATE SCHEMA` when the schema exists. Creation runs under a
 * transaction-scoped advisory lock, so that candidates starting together do not race on the
 * catalog; the lock only orders the creation and is never a source of truth for leadership.
 */
export async function installPostgresSchema(pool: Pool, names: PostgresLeaseTable): Promise<void> {
  const query: Query = async (text, values) => (await pool.query(text, values)).rows;
  let found = await describeTable(query, names);
  if (found.sequence && hasTable(found)) return;
  const { table, termSequence } = qualifiedNames(names);
  const creations = [
    found.schema ? '' : `CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(names.schema)}`,
    hasTable(found)
      ? ''
      : `CREATE TABLE IF NOT EXISTS ${table} (slot bigint PRIMARY KEY, holder text NOT NULL, expires_at bigint NOT NULL, term bigint NOT NULL, lease_ms bigint, advertised text)`,
    found.sequence ? '' : `CREATE SEQUENCE IF NOT EXISTS ${termSequence}`,
  ].filter(Boolean);
  try {
    await inTransaction(pool, async (client) => {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('observe-leadership schema'))`);
      for (const creation of creations) await client.query(creation);
    });
  } catch (error) {
    if ((error as { code?: string }).code !== '42501') throw error;
    throw new LeadershipError(
      'DATABASE_READONLY',
      `${describeMissing(found, names)} and this role may not create it (${(error as Error).message}): ` +
        'create it as docs/postgresql.md shows, or grant the role CREATE on the schema',
      { cause: error },
    );
  }
  found = await describeTable(query, names);
  if (!hasTable(found) || !found.sequence)
    throw new LeadershipError('SCHEMA_MISMATCH', `${describeMissing(found, names)} after creating it`);
}

function hasTable(found: Found): boolean {
  return Object.keys(found.columns).length > 0;
}

function describeMissing(found: Found, names: PostgresLeaseTable): string {
  const { table, termSequence } = qualifiedNames(names);
  if (!found.schema) return `the schema ${quoteIdentifier(names.schema)} does not exist`;
  if (!hasTable(found)) return `the lease table ${table} does not exist`;
  return `the term sequence ${termSequence} does not exist`;
}

/** What the catalog says of the schema, the table and its sequence; throws if the table has another shape. */
export async function describeTable(query: Query, names: PostgresLeaseTable): Promise<Found> {
  const { table, termSequence } = qualifiedNames(names);
  // The catalog, not information_schema, which hides what the role has no privilege on: a
  // role that may only read the table must still find the sequence there.
  const rows = (await query(
    `SELECT to_regnamespace($1) IS NOT NULL AS schema, to_regclass($3) IS NOT NULL AS sequence,
       ARRAY(SELECT ARRAY[attname::text, format_type(atttypid, atttypmod)] FROM pg_attribute
         WHERE attrelid = to_regclass($2) AND attnum > 0 AND NOT attisdropped) AS columns`,
    [quoteIdentifier(names.schema), table, termSequence],
  )) as Array<{ schema: boolean; sequence: boolean; columns: Array<[string, string]> }>;
  const [{ schema, sequence, columns: pairs }] = rows;
  const columns: Record<string, string> = Object.fromEntries(pairs);
  const found: Found = { schema, sequence, columns };
  if (!hasTable(found)) return found;
  const missing = Object.keys(expectedColumns).filter((column) => columns[column] === undefined);
  const wrong = Object.entries(expectedColumns).filter(([column, type]) => columns[column] !== undefined && columns[column] !== type);
  if (wrong.length > 0 || missing.length > 0) throw new LeadershipError('SCHEMA_MISMATCH', mismatch(table, pairs, missing, wrong));
  return found;
}

/**
 * What is wrong with the table's shape: a table made by hand without a column it needs
 * (`lease_ms`, `advertised`) gets the statement that adds it, which only its owner may run.
 */
function mismatch(table: string, pairs: Array<[string, string]>, missing: string[], wrong: Array<[string, string]>): string {
  if (wrong.length === 0) {
    const additions = missing.map((column) => `ALTER TABLE ${table} ADD COLUMN ${column} ${expectedColumns[column]};`);
    return `${table} has no ${missing.join(' or ')} column: run once, as the table's owner: ${additions.join(' ')}`;
  }
  const expected = Object.entries(expectedColumns).map(([column, type]) => `${column} ${type}`);
  const got = pairs.map(([column, type]) => `${column} ${type}`);
  return `${table} exists with another shape: expected ${expected.join(', ')}; got ${got.join(', ')}`;
}

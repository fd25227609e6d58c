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
 * for that long rather than by comparing `expires_at` with that clock.
 */
const expectedColumns: Record<string, string> = {
  slot: 'bigint',
  holder: 'text',
  expires_at: 'bigint',
  term: 'bigint',
};

/** The one statement that gives a table made without it its `lease_ms` (only the table's owner may run it). */
function addLeaseLength(names: PostgresLeaseTable): string {
  return `ALTER TABLE ${qualifiedNames(names).table} ADD COLUMN lease_ms bigint`;
}

/** The one statement that gives a table made without it its `advertised` column (only the table's owner may run it). */
export function addAdvertised(names: PostgresLeaseTable): string {
  return `ALTER TABLE ${qualifiedNames(names).table} ADD COLUMN advertised text`;
}

/** Sends one statement, resolving with its rows. */
type Query = (text: string, values: unknown[]) => Promise<unknown[]>;

/** What the statements may count on, once the schema is made. */
export interface LeaseTableShape {
  /** Whether the table has `lease_ms`: without it, leases are judged by the server's clock. */
  readonly leaseLength: boolean;
  /** Whether the table has `advertised`: without it, candidates advertise nothing. */
  readonly advertised: boolean;
}

/** The catalog's answer about the lease table (see `describeTable`). */
interface Found {
  readonly schema: boolean;
  readonly sequence: boolean;
  /** Whether this role may alter the table (it owns it, or is a member of its owner): only an owner may add a column. */
  readonly owner: boolean;
  /** The table's columns and their types; empty when there is no table. */
  readonly columns: Record<string, string>;
}

/**
 * Creates what is missing, and only that, then checks that the table has the shape the
 * statements need. A role granted only what the documentation lists (`SELECT, INSERT,
 * UPDATE, DELETE` on a table made by hand, `USAGE` on its sequence) creates nothing and is
 * asked for nothing more: no `CREATE SCHEMA` when the schema exists, no `ALTER TABLE` it
 * may not run. A table without `lease_ms` that this role may not alter is used as it is,
 * its leases judged by the server's clock, and `warn` is told once what that risks and
 * the one statement that fixes it. Creation runs under a transaction-scoped advisory lock,
 * so that candidates starting together do not race on the catalog; the lock only orders
 * the creation and is never a source of truth for leadership.
 */
export async function installPostgresSchema(
  pool: Pool,
  names: PostgresLeaseTable,
  warn: (message: string) => void,
): Promise<LeaseTableShape> {
  const query: Query = async (text, values) => (await pool.query(text, values)).rows;
  let found = await describeTable(query, names);
  const whole = (columns: Record<string, string>) => columns.lease_ms !== undefined && columns.advertised !== undefined;
  if (found.sequence && (whole(found.columns) || (hasTable(found) && !found.owner && found.columns.lease_ms !== undefined))) {
    return shapeOf(found);
  }
  const { table, termSequence } = qualifiedNames(names);
  const creations = [
    found.schema ? '' : `CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(names.schema)}`,
    hasTable(found)
      ? ''
      : `CREATE TABLE IF NOT EXISTS ${table} (slot bigint PRIMARY KEY, holder text NOT NULL, expires_at bigint NOT NULL, term bigint NOT NULL, lease_ms bigint, advertised text)`,
    found.sequence ? '' : `CREATE SEQUENCE IF NOT EXISTS ${termSequence}`,
    hasTable(found) && found.owner ? `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS lease_ms bigint` : '',
    hasTable(found) && found.owner ? `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS advertised text` : '',
  ].filter(Boolean);
  if (creations.length > 0) {
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
  }
  if (!hasTable(found) || !found.sequence)
    throw new LeadershipError('SCHEMA_MISMATCH', `${describeMissing(found, names)} after creating it`);
  if (found.columns.lease_ms !== undefined) return shapeOf(found);
  warn(
    `${table} has no lease_ms column, and this role may not add it (only the table's owner may): ` +
      `leases are judged by the database server's clock, so a step of that clock (NTP, a resumed VM) ` +
      `can make two leaders at once (forward) or none for the step's length (back). ` +
      `Run once, as the table's owner: ${addLeaseLength(names)}`,
  );
  return shapeOf(found);
}

function shapeOf(found: Found): LeaseTableShape {
  return { leaseLength: found.columns.lease_ms !== undefined, advertised: found.columns.advertised !== undefined };
}

/** Whether the table has `lease_ms` now (a table used without it may have been given it since). */
export async function hasLeaseLength(query: Query, names: PostgresLeaseTable): Promise<boolean> {
  return (await describeTable(query, names)).columns.lease_ms !== undefined;
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
async function describeTable(query: Query, names: PostgresLeaseTable): Promise<Found> {
  const { table, termSequence } = qualifiedNames(names);
  // The catalog, not information_schema, which hides what the role has no privilege on: a
  // role that may only read the table must still find the sequence there.
  const rows = (await query(
    `SELECT to_regnamespace($1) IS NOT NULL AS schema, to_regclass($3) IS NOT NULL AS sequence,
       coalesce(pg_has_role(relation.relowner, 'USAGE'), false) AS owner,
       ARRAY(SELECT ARRAY[attname::text, format_type(atttypid, atttypmod)] FROM pg_attribute
         WHERE attrelid = to_regclass($2) AND attnum > 0 AND NOT attisdropped) AS columns
     FROM (SELECT 1) AS one LEFT JOIN pg_class AS relation ON relation.oid = to_regclass($2)`,
    [quoteIdentifier(names.schema), table, termSequence],
  )) as Array<{ schema: boolean; sequence: boolean; owner: boolean; columns: Array<[string, string]> }>;
  const [{ schema, sequence, owner, columns: pairs }] = rows;
  const columns: Record<string, string> = Object.fromEntries(pairs);
  const found: Found = { schema, sequence, owner, columns };
  if (!hasTable(found)) return found;
  const wrong = Object.entries(expectedColumns).filter(([column, type]) => columns[column] !== type);
  if (columns.lease_ms !== undefined && columns.lease_ms !== 'bigint') wrong.push(['lease_ms', 'bigint']);
  if (columns.advertised !== undefined && columns.advertised !== 'text') wrong.push(['advertised', 'text']);
  if (wrong.length > 0) {
    const shape = [...Object.entries(expectedColumns), ['lease_ms', 'bigint'], ['advertised', 'text']]
      .map(([column, type]) => `${column} ${type}`)
      .join(', ');
    throw new LeadershipError(
      'SCHEMA_MISMATCH',
      `${table} exists with another shape: expected ${shape}; got ${pairs.map(([column, type]) => `${column} ${type}`).join(', ')}`,
    );
  }
  return found;
}

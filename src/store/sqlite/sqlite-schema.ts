import type { Database } from 'better-sqlite3';
import { LeadershipError } from '../../core/leadership-error';
import type { SqliteTable } from './sqlite-capability';
import { candidateTable } from './priorities';
import { standbyTable } from './standby';
import { advertisedTable } from './advertised';

/*
 * The lease table is exactly the original worker's, so that its three statements keep
 * working on a shared database. The term cannot live in that row: the original worker
 * releases with DELETE, which would erase it and let terms go back. It lives in a
 * companion table instead, and two triggers advance it on every statement that starts a
 * tenure, whoever runs it:
 * - an INSERT (the original worker's `INSERT OR IGNORE`, or ours into a free slot);
 * - an UPDATE that sets `holder` (the original worker's takeover, and ours, which sets it
 *   even when the holder stays the same: re-acquiring an expired row is a new tenure).
 * A renewal sets only `expires_at` and keeps the term. Triggers fire for every writer's
 * statements, so tenures taken by the original worker advance the term too.
 *
 * The trigger inserts the term row with `WHERE NOT EXISTS` rather than `INSERT OR
 * IGNORE`: inside a trigger, the conflict policy of the outer statement (our upsert's
 * ABORT) overrides the trigger's own, and the IGNORE would be lost.
 *
 * Another table holds the end of each tenure's lease on a clock that cannot jump: the
 * host's monotonic clock, named by its boot (see monotonic-scheduler.ts). `expires_at` in
 * the row stays the wall clock's Unix ms, as the original worker writes and reads it, but a
 * wall clock steps, and a follower that judged a lease by it would take a live one after a
 * step forward, or wait out a dead one for the length of a step back. Our candidates write
 * both in one transaction; the deadline counts only for the tenure it names (holder and
 * term), so a tenure the original worker's statements start, which advances the term, is
 * judged by the wall clock again, as that worker judges it.
 *
 * The other tables are in their homes: what tenures advertise in advertised.ts, standby
 * places in standby.ts, priorities in priorities.ts.
 */
const leaseTable: SqliteTable = {
  name: 'worker_leadership',
  create: `CREATE TABLE IF NOT EXISTS worker_leadership (
    slot INTEGER PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  )`,
  columns: { slot: 'INTEGER', holder: 'TEXT', expires_at: 'INTEGER' },
  key: ['slot'],
};

const termTable: SqliteTable = {
  name: 'worker_leadership_term',
  create: `CREATE TABLE IF NOT EXISTS worker_leadership_term (
    slot INTEGER PRIMARY KEY,
    term INTEGER NOT NULL
  )`,
  columns: { slot: 'INTEGER', term: 'INTEGER' },
  key: ['slot'],
};

const deadlineTable: SqliteTable = {
  name: 'worker_leadership_deadline',
  create: `CREATE TABLE IF NOT EXISTS worker_leadership_deadline (
    slot INTEGER PRIMARY KEY,
    holder TEXT NOT NULL,
    term INTEGER NOT NULL,
    clock TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  )`,
  columns: { slot: 'INTEGER', holder: 'TEXT', term: 'INTEGER', clock: 'TEXT', expires_at: 'INTEGER' },
  key: ['slot'],
};

const tables = [leaseTable, termTable, deadlineTable, advertisedTable, standbyTable, candidateTable];

const advanceTerm = `
    INSERT INTO worker_leadership_term (slot, term)
      SELECT NEW.slot, 0 WHERE NOT EXISTS (SELECT 1 FROM worker_leadership_term WHERE slot = NEW.slot);
    UPDATE worker_leadership_term SET term = term + 1 WHERE slot = NEW.slot;`;

const triggers = {
  worker_leadership_term_on_insert: 'AFTER INSERT ON worker_leadership',
  worker_leadership_term_on_take: 'AFTER UPDATE OF holder ON worker_leadership',
};

const schema = [
  ...tables.map((table) => table.create),
  ...Object.entries(triggers).map(([name, event]) => `CREATE TRIGGER IF NOT EXISTS ${name}\n    ${event}\n  BEGIN ${advanceTerm}\n  END`),
].join(';\n');

const schemaObjects = [...tables.map((table) => table.name), ...Object.keys(triggers)];

/** A row of `describeSchema`: a column of one of the schema's tables, or a trigger (no column). */
interface SchemaRow {
  object: string;
  /** Null for a trigger: the row only says that it exists. */
  name: string | null;
  type: string;
  notnull: number;
  dflt_value: unknown;
  pk: number;
}

/**
 * The schema's objects that exist, each table with its columns, in one statement: a
 * candidate's first operation reads it, and a process that starts often (a worker pool, the
 * simulator) should not pay a statement per table.
 */
const describeSchema = `SELECT object.name AS object, c.name AS name, c.type AS type, c."notnull" AS "notnull",
    c.dflt_value AS dflt_value, c.pk AS pk
  FROM sqlite_master AS object LEFT JOIN pragma_table_info(object.name) AS c
  WHERE object.name IN (${schemaObjects.map((name) => `'${name}'`).join(', ')})`;

/** The text of each of the schema's objects that exists, as SQLite keeps it: what its shape follows from. */
const schemaText = `SELECT group_concat(name || ': ' || sql, char(10)) FROM
  (SELECT name, sql FROM sqlite_master WHERE name IN (${schemaObjects.map((name) => `'${name}'`).join(', ')}) ORDER BY name)`;

/**
 * The texts of schemas that passed the check in this process. The check is the costliest
 * part of a candidate's first operation (a third of a ms: a pragma per table), and the
 * shape it checks follows from the text alone (an ALTER TABLE rewrites it): a connection
 * that finds a text checked before, to another file or by another connection, passes.
 */
const checkedSchemas = new Set<string>();

/**
 * Creates whatever of the schema is missing, then checks that the tables have the shape
 * the statements rely on. Takes the write lock only when something must be created.
 */
export function installSqliteSchema(db: Database): void {
  const text = db.prepare<[], string | null>(schemaText).pluck();
  if (checkedSchemas.has(text.get() ?? '')) return;
  // The text and the columns from one snapshot: the text remembered is the one checked.
  const snapshot = db.transaction(() => ({ text: text.get() ?? '', columns: describe(db) }));
  let seen = snapshot();
  const missing = schemaObjects.some((name) => !seen.columns.some((column) => column.object === name));
  if (missing || additions(seen.columns).length > 0) {
    db.transaction(() => {
      if (missing) db.exec(schema);
      for (const addition of additions(describe(db))) db.exec(addition); // under the write lock, once
    }).immediate();
    seen = snapshot();
  }
  const { columns } = seen;
  for (const table of tables) {
    checkShape(
      table,
      columns.filter((column): column is SchemaRow & { name: string } => column.object === table.name && column.name !== null),
    );
  }
  checkedSchemas.add(seen.text);
}

function describe(db: Database): SchemaRow[] {
  return db.prepare<[], SchemaRow>(describeSchema).all();
}

/** The `ALTER TABLE`s that add what an earlier version made a table without (see `SqliteTable.addedLater`). */
function additions(columns: SchemaRow[]): string[] {
  return tables.flatMap(({ name, addedLater = {} }) => {
    const made = columns.filter((column) => column.object === name);
    return made.length === 0
      ? []
      : Object.entries(addedLater)
          .filter(([column]) => !made.some((c) => c.name === column))
          .map(([column, definition]) => `ALTER TABLE ${name} ADD COLUMN ${column} ${definition}`);
  });
}

function checkShape({ name: table, columns: expected, key }: SqliteTable, columns: Array<SchemaRow & { name: string }>): void {
  const problems: string[] = [];
  for (const [name, affinity] of Object.entries(expected)) {
    const column = columns.find((c) => c.name === name);
    if (!column) problems.push(`no column ${name}`);
    else if (affinityOf(column.type) !== affinity) problems.push(`${name} is ${column.type || 'untyped'}, not ${affinity}`);
  }
  const keys = columns
    .filter((c) => c.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((c) => c.name);
  if (keys.join() !== key.join()) problems.push(`the primary key is (${keys.join(', ')}), not (${key.join(', ')})`);
  for (const column of columns) {
    if (!(column.name in expected) && column.notnull && column.dflt_value === null) {
      problems.push(`extra column ${column.name} is NOT NULL without a default`);
    }
  }
  if (problems.length > 0) {
    throw new LeadershipError(
      'SCHEMA_MISMATCH',
      `Table ${table} has another shape than this library expects (${problems.join('; ')}); ` +
        `expected (${Object.entries(expected)
          .map(([name, affinity]) => `${name} ${affinity}`)
          .join(', ')}) with (${key.join(', ')}) as the primary key`,
    );
  }
}

/** SQLite's own rules for the affinity of a declared type, reduced to the two we use. */
function affinityOf(declaredType: string): 'INTEGER' | 'TEXT' | 'OTHER' {
  const type = declaredType.toUpperCase();
  if (type.includes('INT')) return 'INTEGER';
  if (type.includes('CHAR') || type.includes('CLOB') || type.includes('TEXT')) return 'TEXT';
  return 'OTHER';
}

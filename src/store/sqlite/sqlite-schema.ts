import type { Database } from 'better-sqlite3';
import { LeadershipError } from '../../core/leadership-error';

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
 * A third table holds the standby places of each slot: the few followers that watch for
 * releases, each place a small lease of its own (see the lease store). It only decides who
 * is woken first, never who leads.
 *
 * A fifth holds the priorities candidates declared (the `priority` option), each a small
 * lease of its own on the host's monotonic clock that `clock` names, as a deadline is (an
 * earlier version wrote the wall clock's ms, with no `clock`): it only decides who takes a
 * free slot first, never who leads.
 *
 * A fourth holds what each tenure's holder advertises to followers (the `advertise` option),
 * which, like the deadline, counts only for the tenure it names: a tenure the original
 * worker's statements start advertises nothing.
 */
const advanceTerm = `
    INSERT INTO worker_leadership_term (slot, term)
      SELECT NEW.slot, 0 WHERE NOT EXISTS (SELECT 1 FROM worker_leadership_term WHERE slot = NEW.slot);
    UPDATE worker_leadership_term SET term = term + 1 WHERE slot = NEW.slot;`;

const schema = `
  CREATE TABLE IF NOT EXISTS worker_leadership (
    slot INTEGER PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS worker_leadership_term (
    slot INTEGER PRIMARY KEY,
    term INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS worker_leadership_deadline (
    slot INTEGER PRIMARY KEY,
    holder TEXT NOT NULL,
    term INTEGER NOT NULL,
    clock TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS worker_leadership_advertised (
    slot INTEGER PRIMARY KEY,
    holder TEXT NOT NULL,
    term INTEGER NOT NULL,
    value TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS worker_leadership_candidate (
    slot INTEGER NOT NULL,
    holder TEXT NOT NULL,
    priority INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    clock TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (slot, holder)
  );
  CREATE TABLE IF NOT EXISTS worker_leadership_standby (
    slot INTEGER NOT NULL,
    place INTEGER NOT NULL,
    holder TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (slot, place)
  );
  CREATE TRIGGER IF NOT EXISTS worker_leadership_term_on_insert
    AFTER INSERT ON worker_leadership
  BEGIN ${advanceTerm}
  END;
  CREATE TRIGGER IF NOT EXISTS worker_leadership_term_on_take
    AFTER UPDATE OF holder ON worker_leadership
  BEGIN ${advanceTerm}
  END;`;

const schemaObjects = [
  'worker_leadership',
  'worker_leadership_term',
  'worker_leadership_deadline',
  'worker_leadership_standby',
  'worker_leadership_advertised',
  'worker_leadership_candidate',
  'worker_leadership_term_on_insert',
  'worker_leadership_term_on_take',
];

type Affinity = 'INTEGER' | 'TEXT';

interface Shape {
  readonly columns: Record<string, Affinity>;
  readonly key: readonly string[];
}

const expectedShapes: Record<string, Shape> = {
  worker_leadership: { columns: { slot: 'INTEGER', holder: 'TEXT', expires_at: 'INTEGER' }, key: ['slot'] },
  worker_leadership_term: { columns: { slot: 'INTEGER', term: 'INTEGER' }, key: ['slot'] },
  worker_leadership_deadline: {
    columns: { slot: 'INTEGER', holder: 'TEXT', term: 'INTEGER', clock: 'TEXT', expires_at: 'INTEGER' },
    key: ['slot'],
  },
  worker_leadership_standby: {
    columns: { slot: 'INTEGER', place: 'INTEGER', holder: 'TEXT', expires_at: 'INTEGER' },
    key: ['slot', 'place'],
  },
  worker_leadership_advertised: { columns: { slot: 'INTEGER', holder: 'TEXT', term: 'INTEGER', value: 'TEXT' }, key: ['slot'] },
  worker_leadership_candidate: {
    columns: { slot: 'INTEGER', holder: 'TEXT', priority: 'INTEGER', expires_at: 'INTEGER', clock: 'TEXT' },
    key: ['slot', 'holder'],
  },
};

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
  if (missing || lacksClock(seen.columns)) {
    db.transaction(() => {
      if (missing) db.exec(schema);
      // Made by an earlier version: the column added under the write lock, once.
      if (lacksClock(describe(db))) db.exec(`ALTER TABLE worker_leadership_candidate ADD COLUMN clock TEXT NOT NULL DEFAULT ''`);
    }).immediate();
    seen = snapshot();
  }
  const { columns } = seen;
  for (const [table, shape] of Object.entries(expectedShapes)) {
    checkShape(
      table,
      shape,
      columns.filter((column): column is SchemaRow & { name: string } => column.object === table && column.name !== null),
    );
  }
  checkedSchemas.add(seen.text);
}

function describe(db: Database): SchemaRow[] {
  return db.prepare<[], SchemaRow>(describeSchema).all();
}

/** Whether the priorities' table was made before declarations named their clock. */
function lacksClock(columns: SchemaRow[]): boolean {
  const table = columns.filter((column) => column.object === 'worker_leadership_candidate');
  return table.length > 0 && !table.some((column) => column.name === 'clock');
}

function checkShape(table: string, { columns: expected, key }: Shape, columns: Array<SchemaRow & { name: string }>): void {
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
function affinityOf(declaredType: string): Affinity | 'OTHER' {
  const type = declaredType.toUpperCase();
  if (type.includes('INT')) return 'INTEGER';
  if (type.includes('CHAR') || type.includes('CLOB') || type.includes('TEXT')) return 'TEXT';
  return 'OTHER';
}

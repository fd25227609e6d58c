import type { Database } from 'better-sqlite3';
import type { SqliteDatabaseLike } from './sqlite-database-like';

/*
 * The three SQLite drivers a user may hand the library: better-sqlite3's `Database`, Node's
 * built-in `node:sqlite` `DatabaseSync` (Node 22.13+) and Bun's `bun:sqlite` `Database`. All
 * three are synchronous and close to one another; the library's SQL is written once, against
 * the part of better-sqlite3's API it uses, and the other two are driven through a thin
 * adapter that gives that part. Each driver is recognised by what it has, never configured.
 */

export type { SqliteDatabaseLike } from './sqlite-database-like';

/** Which driver a connection comes from. */
export type SqliteDriver = 'better-sqlite3' | 'node:sqlite' | 'bun:sqlite';

interface Statement {
  get(...parameters: unknown[]): unknown;
  all(...parameters: unknown[]): unknown[];
  run(...parameters: unknown[]): { changes: number | bigint };
}

/** node:sqlite's `DatabaseSync`, as far as the adapter uses it. */
interface NodeDatabase extends SqliteDatabaseLike {
  prepare(sql: string): Statement & { setAllowUnknownNamedParameters?(allow: boolean): void };
  location(): string | null;
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
}

/** bun:sqlite's `Database`, as far as the adapter uses it. */
interface BunDatabase extends SqliteDatabaseLike {
  prepare(sql: string): Statement & { values(...parameters: unknown[]): unknown[][] };
  query(sql: string): unknown;
  transaction(fn: (...args: never[]) => unknown): Transaction;
  readonly filename: string;
  readonly inTransaction: boolean;
}

type Transaction = ((...args: never[]) => unknown) & { deferred: unknown; immediate: unknown; exclusive: unknown };

/** Which driver `value` is a connection of, or `undefined` if it is none. */
export function sqliteDriverOf(value: unknown): SqliteDriver | undefined {
  const db = value as Record<string, unknown> | null;
  if (typeof db !== 'object' || db === null || typeof db.prepare !== 'function' || typeof db.exec !== 'function') return undefined;
  if (typeof db.transaction === 'function' && typeof db.pragma === 'function') return 'better-sqlite3';
  if (typeof db.location === 'function' && 'isOpen' in db) return 'node:sqlite';
  if (typeof db.query === 'function' && typeof db.transaction === 'function' && typeof db.filename === 'string') return 'bun:sqlite';
  return undefined;
}

const adapted = new WeakMap<object, Database>();

/**
 * The connection as the library's SQLite code drives it: a better-sqlite3 `Database` as it
 * is, the others through their adapter, made once per connection (so that the store, its
 * prepared statements and its watches are made once too). `undefined` if it is none of them.
 */
export function asBetterSqlite3(value: unknown): Database | undefined {
  const driver = sqliteDriverOf(value);
  if (driver === undefined) return undefined;
  if (driver === 'better-sqlite3') return value as Database;
  let db = adapted.get(value as object);
  if (db === undefined) {
    db = (driver === 'node:sqlite'
      ? new NodeSqliteAdapter(value as NodeDatabase)
      : new BunSqliteAdapter(value as BunDatabase)) as unknown as Database;
    adapted.set(value as object, db);
  }
  return db;
}

/** The names of a statement's named parameters (`:name`, `@name`, `$name`), each with the prefix it was written with. */
function namedParameters(sql: string): Array<{ name: string; written: string }> {
  // Outside string literals, where a colon or an at sign could appear in the library's SQL.
  const code = sql.replace(/'(?:[^']|'')*'/g, "''");
  const found = new Map<string, string>();
  for (const [written, name] of code.matchAll(/[:@$]([A-Za-z_][A-Za-z0-9_]*)/g)) found.set(written, name);
  return [...found].map(([written, name]) => ({ name, written }));
}

/**
 * The parameters as the driver takes them: better-sqlite3 takes an object with keys
 * beyond those the statement names, and without their prefix; node:sqlite refuses unknown
 * keys and bun:sqlite may want the prefix. Only the statement's own are passed, keyed as
 * `key` says.
 */
function binder(sql: string, key: (parameter: { name: string; written: string }) => string): (parameters: unknown[]) => unknown[] {
  const named = namedParameters(sql);
  return (parameters) => {
    const [first] = parameters;
    if (named.length === 0 || parameters.length !== 1 || typeof first !== 'object' || first === null) return parameters;
    const given = first as Record<string, unknown>;
    return [Object.fromEntries(named.map((parameter) => [key(parameter), given[parameter.name]]))];
  };
}

/** A statement with better-sqlite3's `get`, `all`, `run` and `pluck()` over another driver's. */
class AdaptedStatement {
  constructor(
    private readonly statement: Statement,
    private readonly bind: (parameters: unknown[]) => unknown[],
    /** The first column of each row instead of the row (better-sqlite3's `pluck()`). */
    private readonly plucked: boolean,
    /** Reads the rows as arrays (bun:sqlite's `values`), for `pluck()`. */
    private readonly values?: (...parameters: unknown[]) => unknown[][],
  ) {}

  pluck(toggle = true): AdaptedStatement {
    return new AdaptedStatement(this.statement, this.bind, toggle, this.values);
  }

  get(...parameters: unknown[]): unknown {
    const bound = this.bind(parameters);
    if (this.plucked && this.values) return this.values(...bound)[0]?.[0];
    const row = this.statement.get(...bound) ?? undefined; // bun:sqlite answers null for no row
    return this.plucked && row !== undefined ? Object.values(row as object)[0] : row;
  }

  all(...parameters: unknown[]): unknown[] {
    const bound = this.bind(parameters);
    if (this.plucked && this.values) return this.values(...bound).map((row) => row[0]);
    const rows = this.statement.all(...bound);
    return this.plucked ? rows.map((row) => Object.values(row as object)[0]) : rows;
  }

  run(...parameters: unknown[]): { changes: number } {
    const { changes } = this.statement.run(...this.bind(parameters));
    return { changes: Number(changes) };
  }
}

/** What both adapters share: better-sqlite3's `exec`, `pragma` and `close` over the driver's own. */
abstract class Adapter<Raw extends SqliteDatabaseLike> {
  constructor(protected readonly raw: Raw) {}

  abstract prepare(sql: string): AdaptedStatement;

  exec(sql: string): this {
    this.raw.exec(sql);
    return this;
  }

  pragma(text: string, { simple = false }: { simple?: boolean } = {}): unknown {
    const statement = this.prepare(`PRAGMA ${text}`);
    return simple ? statement.pluck().get() : statement.all();
  }

  close(): this {
    this.raw.close();
    return this;
  }
}

/**
 * node:sqlite's `DatabaseSync` with the part of better-sqlite3's API the library uses. Its
 * transactions are made as better-sqlite3 makes them: `BEGIN` (`.immediate`: `BEGIN
 * IMMEDIATE`), the function, `COMMIT`, and a rollback if either fails; a savepoint inside a
 * transaction already open.
 */
class NodeSqliteAdapter extends Adapter<NodeDatabase> {
  /**
   * The file, read once: node:sqlite throws at `location()` once the connection is closed. A
   * connection closed before the library saw it counts as one in memory (no files beside
   * it): its first operation ends with `DATABASE_CLOSED` anyway.
   */
  private readonly location: string | null;

  constructor(raw: NodeDatabase) {
    super(raw);
    this.location = raw.isOpen ? raw.location() : null;
  }

  get name(): string {
    return this.location ?? ':memory:';
  }

  get memory(): boolean {
    return !this.location;
  }

  /** Not told by the driver: a read-only connection is found out at its first write (`DATABASE_READONLY`). */
  get readonly(): boolean {
    return false;
  }

  get open(): boolean {
    return this.raw.isOpen;
  }

  get inTransaction(): boolean {
    return this.raw.isTransaction;
  }

  prepare(sql: string): AdaptedStatement {
    const statement = this.raw.prepare(sql);
    return new AdaptedStatement(
      statement,
      binder(sql, ({ name }) => name),
      false,
    );
  }

  transaction<Args extends unknown[], Result>(fn: (...args: Args) => Result) {
    const begin =
      (mode: string) =>
      (...args: Args): Result => {
        if (this.raw.isTransaction) return this.inSavepoint(() => fn(...args));
        this.raw.exec(`BEGIN ${mode}`);
        let result: Result;
        try {
          result = fn(...args);
          this.raw.exec('COMMIT');
        } catch (error) {
          if (this.raw.isOpen && this.raw.isTransaction) this.raw.exec('ROLLBACK');
          throw error;
        }
        return result;
      };
    return Object.assign(begin('DEFERRED'), { deferred: begin('DEFERRED'), immediate: begin('IMMEDIATE'), exclusive: begin('EXCLUSIVE') });
  }

  private inSavepoint<Result>(fn: () => Result): Result {
    this.raw.exec('SAVEPOINT observe_leadership');
    try {
      const result = fn();
      this.raw.exec('RELEASE observe_leadership');
      return result;
    } catch (error) {
      if (this.raw.isOpen && this.raw.isTransaction) this.raw.exec('ROLLBACK TO observe_leadership; RELEASE observe_leadership');
      throw error;
    }
  }
}

/** bun:sqlite's `Database` with the part of better-sqlite3's API the library uses; its transactions are its own, made as better-sqlite3's are. */
class BunSqliteAdapter extends Adapter<BunDatabase> {
  private closed = false;

  get name(): string {
    return this.raw.filename;
  }

  get memory(): boolean {
    return this.raw.filename === '' || this.raw.filename === ':memory:';
  }

  /** Not told by the driver: a read-only connection is found out at its first write (`DATABASE_READONLY`). */
  get readonly(): boolean {
    return false;
  }

  /**
   * Not told by the driver either, and statements prepared before `close()` still run after
   * it (Bun defers closing while they live): its `inTransaction` throws once it is closed,
   * without running a statement.
   */
  get open(): boolean {
    if (this.closed) return false;
    try {
      return typeof this.raw.inTransaction === 'boolean';
    } catch {
      return false;
    }
  }

  get inTransaction(): boolean {
    return this.raw.inTransaction;
  }

  prepare(sql: string): AdaptedStatement {
    const statement = this.raw.prepare(sql);
    return new AdaptedStatement(
      statement,
      binder(sql, ({ written }) => written),
      false,
      (...parameters) => statement.values(...parameters),
    );
  }

  transaction(fn: (...args: never[]) => unknown): Transaction {
    return this.raw.transaction(fn);
  }

  override close(): this {
    this.closed = true;
    return super.close();
  }
}

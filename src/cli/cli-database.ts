import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { monotonicScheduler, readClocks } from '../core/monotonic-scheduler';
import { Lease } from '../core/leadership-event';
import { LockRetry } from '../campaign/lock-retry';
import { LeaseReader, LeaseStore, LeaseView, LockTaken } from '../store/lease-store';
import { postgresLeaseStore, PostgresLeaseStore } from '../store/postgres/postgres-lease-store';
import { sqliteLeaseStore } from '../store/sqlite/sqlite-lease-store';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';
import { expectSqliteDatabase, OpenedSqliteFile, openSqliteFile } from './sqlite-file';
import { CliError, exitCode, ParsedArguments } from './cli-arguments';

/**
 * The database a command works on, SQLite or PostgreSQL alike: what `observeLeader` and
 * `observeLeadership` take, a look at a slot, and the way to close it once every release
 * is done.
 */
export interface CliDatabase {
  /** The file, or the URL without its password, for messages. */
  readonly name: string;
  /** What the library takes: a SQLite connection of whichever driver opened it, or a PostgreSQL store. */
  readonly source: SqliteDatabaseLike | (LeaseStore & LeaseReader);
  /** Whether a candidate ever ran here: the lease table exists. */
  hasLeaseTable(): Promise<boolean>;
  /** The slot's row, with the time its lease has left by the database's clock. */
  look(slot: number): Promise<LeaseView | undefined>;
  /** SQLite: the leader's endpoint (see tenure-endpoints.ts), for the command's guard to hold. */
  endpointDescriptor(lease: Lease): number | undefined;
  /** Waits for the releases in flight, then closes. */
  close(): Promise<void>;
}

const postgresUrl = /^postgres(ql)?:\/\//;

/**
 * Opens the database the positional argument names: a `postgres://` URL (with `--schema`
 * and `--table`), or the path of a SQLite file, which must exist: a misspelt path must not
 * create a new, empty database, where a candidate would elect itself beside the real one.
 */
export async function openCliDatabase(parsed: ParsedArguments, { readonly }: { readonly: boolean }): Promise<CliDatabase> {
  const [target] = parsed.positional;
  if (!target) throw new CliError(exitCode.usage, 'which database? Give the path of the SQLite file, or a postgres:// URL');
  const schema = parsed.options.get('schema');
  const table = parsed.options.get('table');
  if (postgresUrl.test(target)) return openPostgres(target, { schema: schema as string | undefined, table: table as string | undefined });
  if (schema !== undefined || table !== undefined) throw new CliError(exitCode.usage, '--schema and --table are for a postgres:// URL');
  return openSqlite(target, readonly);
}

async function openSqlite(file: string, readonly: boolean): Promise<CliDatabase> {
  if (!existsSync(file)) {
    throw new CliError(
      exitCode.noDatabase,
      `no database at ${file}; if that is the path you meant, create it once with: observe-leadership init ${shellWord(file)}`,
    );
  }
  let opened: OpenedSqliteFile;
  try {
    opened = await openSqliteFile(file, { readonly, create: false });
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(exitCode.noDatabase, `cannot open ${file} as a SQLite database: ${(error as Error).message}`);
  }
  const { db } = opened;
  expectSqliteDatabase(db, file);
  return {
    name: file,
    source: opened.raw as SqliteDatabaseLike,
    hasLeaseTable: async () =>
      db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'worker_leadership'`).get() !== undefined,
    look: (slot) => lookPatiently(() => sqliteLeaseStore(db).look(slot, readClocks(monotonicScheduler))),
    endpointDescriptor: (lease) => sqliteLeaseStore(db).endpointDescriptor(lease),
    close: async () => void db.close(),
  };
}

/**
 * A look that meets a lock (the store never waits for one: a commit in a rollback journal
 * keeps readers out for a few ms) tries again on short steps, for up to a second, as the
 * connection's busy timeout would have, then fails as it would have.
 */
async function lookPatiently(look: () => LeaseView | undefined): Promise<LeaseView | undefined> {
  const retry = new LockRetry();
  for (;;) {
    try {
      return look();
    } catch (error) {
      const step = error instanceof LockTaken ? retry.nextWithin(performance.now(), 1_000) : undefined;
      if (step === undefined) throw error;
      await new Promise((resolve) => setTimeout(resolve, step));
    }
  }
}

async function openPostgres(url: string, names: { schema?: string; table?: string }): Promise<CliDatabase> {
  const shown = withoutPassword(url);
  // Loaded here: a user of SQLite alone need not install pg.
  const { Pool } = await import('pg');
  const pool: Pool = new Pool({ connectionString: url, connectionTimeoutMillis: 5_000 });
  let store: PostgresLeaseStore;
  try {
    store = postgresLeaseStore(pool, Object.fromEntries(Object.entries(names).filter(([, value]) => value !== undefined)));
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    if (error instanceof TypeError || error instanceof RangeError) throw new CliError(exitCode.usage, error.message);
    throw new CliError(exitCode.noDatabase, `cannot reach ${shown}: ${(error as Error).message}`);
  }
  const { schema = 'public', table = 'worker_leadership' } = names;
  return {
    name: shown,
    source: store,
    hasLeaseTable: async () =>
      (
        await pool.query<{ found: boolean }>('SELECT to_regclass(format($1, $2::text, $3::text)) IS NOT NULL AS found', [
          '%I.%I',
          schema,
          table,
        ])
      ).rows[0].found,
    look: async (slot) => store.look(slot),
    endpointDescriptor: () => undefined,
    close: async () => {
      await store.settled().catch(() => undefined);
      await pool.end();
    },
  };
}

/** `text` as one word of a shell command line, quoted only when it must be. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    throw new CliError(exitCode.usage, `not a URL: ${url}`);
  }
}

/** The message for a database without the lease table, the same for every command. */
export function noTableError(name: string): CliError {
  return new CliError(exitCode.noTable, `no worker_leadership table in ${name}: no candidate has campaigned on this database`);
}

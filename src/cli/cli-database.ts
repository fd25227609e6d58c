import { existsSync } from 'node:fs';
import type { Pool } from 'pg';
import { monotonicScheduler, readClocks } from '../core/monotonic-scheduler';
import { Lease } from '../core/leadership-event';
import { lastValueFrom, toArray } from 'rxjs';
import { everybody, LeaseReader, LeaseStore, LeaseView } from '../store/lease-store';
import { rollCall } from '../surface/roll-call';
import { postgresLeaseStore, PostgresLeaseStore } from '../store/postgres/postgres-lease-store';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';
import { checkedStore, expectFileIfAny, openSqliteFile } from './sqlite-file';
import { patiently } from './patiently';
import { CliError, exitCode, ParsedArguments } from './cli-arguments';

/**
 * The database a command works on, SQLite or PostgreSQL alike: what `observeLeader` and
 * `observeLeadership` take, a look at a slot, and the way to close it once every release
 * is done.
 */
export interface CliDatabase {
  /** The file, or the URL without its password, for messages. */
  readonly name: string;
  /** The lease table, for messages. */
  readonly tableName: string;
  /** What the library takes: a SQLite connection of whichever driver opened it, or a PostgreSQL store. */
  readonly source: SqliteDatabaseLike | (LeaseStore & LeaseReader);
  /** Whether a candidate ever ran here: the lease table exists. */
  hasLeaseTable(): Promise<boolean>;
  /** The slot's row, with the time its lease has left by the database's clock. */
  look(slot: number): Promise<LeaseView | undefined>;
  /**
   * The holders of the followers of `slot` that answer a roll call within `within` ms (see
   * `rollCall`): those that can hear messages about handoffs, as running now.
   */
  present(slot: number, within: number): Promise<string[]>;
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
  expectFileIfAny(file);
  if (!existsSync(file)) {
    throw new CliError(
      exitCode.noDatabase,
      `no database at ${file}; if that is the path you meant, create it once with: observe-leadership init ${shellWord(file)}`,
    );
  }
  const opened = await openSqliteFile(file, { readonly, create: false }).catch((error: unknown) => {
    throw error instanceof CliError
      ? error
      : new CliError(exitCode.noDatabase, `cannot open ${file} as a SQLite database: ${(error as Error).message}`);
  });
  const store = await checkedStore(opened, file);
  return {
    name: file,
    tableName: store.tableName,
    source: opened.raw as SqliteDatabaseLike,
    hasLeaseTable: () => patiently(() => store.hasTable()),
    look: (slot) => patiently(() => store.look(slot, readClocks(monotonicScheduler))),
    present: (slot, within) => lastValueFrom(rollCall(store.capabilities.handoffs, slot, everybody, within).pipe(toArray())),
    endpointDescriptor: (lease) => store.endpointDescriptor(lease),
    close: async () => void opened.db.close(),
  };
}

async function openPostgres(url: string, names: { schema?: string; table?: string }): Promise<CliDatabase> {
  const shown = withoutPassword(url);
  // Loaded here: a user of SQLite alone need not install pg.
  const { Pool } = await import('pg');
  const pool: Pool = new Pool({ connectionString: url, connectionTimeoutMillis: 5_000 });
  let store: PostgresLeaseStore;
  try {
    store = postgresLeaseStore(pool, Object.fromEntries(Object.entries(names).filter(([, value]) => value !== undefined)));
    await store.hasTable(); // the server answers
  } catch (error) {
    await pool.end().catch(() => undefined);
    if (error instanceof TypeError || error instanceof RangeError) throw new CliError(exitCode.usage, error.message);
    throw new CliError(exitCode.noDatabase, `cannot reach ${shown}: ${(error as Error).message}`);
  }
  return {
    name: shown,
    tableName: store.tableName,
    source: store,
    hasLeaseTable: () => store.hasTable(),
    look: async (slot) => store.look(slot),
    present: (slot, within) => lastValueFrom(rollCall(store.capabilities.handoffs, slot, everybody, within).pipe(toArray())),
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
export function noTableError({ name, tableName }: CliDatabase): CliError {
  return new CliError(exitCode.noTable, `no ${tableName} table in ${name}: no candidate has campaigned on this database`);
}

import type { Database } from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { installSqliteSchema } from '../store/sqlite/sqlite-schema';
import { CliError, exitCode, parseArguments } from './cli-arguments';
import { expectSqliteDatabase, openSqliteFile } from './sqlite-file';

/**
 * `init <file> [--wal]`: creates the SQLite file and the lease tables, once, where `run`,
 * `status` and `watch` never create a file (a misspelt path must not start a second
 * election in a new, empty database). On a database that exists it creates only what is
 * missing, as every candidate does. `--wal` also sets the journal mode we advise, which the
 * file keeps. PostgreSQL needs none of it: its candidates create their table.
 */
export async function initCommand(argv: readonly string[], print: (line: string) => void): Promise<number> {
  const parsed = parseArguments(argv, [], ['wal']);
  const [file, ...extra] = parsed.positional;
  if (!file) throw new CliError(exitCode.usage, 'which SQLite file? Give its path');
  if (extra.length > 0) throw new CliError(exitCode.usage, `one file at a time, got ${parsed.positional.length}`);
  if (/^postgres(ql)?:\/\//.test(file)) {
    throw new CliError(exitCode.usage, 'init is for SQLite files: on PostgreSQL, the first candidate creates the lease table');
  }
  const existed = existsSync(file);
  let db: Database;
  try {
    ({ db } = await openSqliteFile(file, { readonly: false, create: true }));
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(exitCode.noDatabase, `cannot create ${file}: ${(error as Error).message}`);
  }
  expectSqliteDatabase(db, file);
  try {
    if (parsed.options.has('wal')) db.pragma('journal_mode = WAL');
    installSqliteSchema(db);
    const mode = db.pragma('journal_mode', { simple: true }) as string;
    print(`${existed ? 'ready' : 'created'}: ${file}, with the lease tables (journal_mode ${mode})`);
    return exitCode.ok;
  } finally {
    db.close();
  }
}

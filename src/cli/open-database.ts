import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { CliError, exitCode } from './cli-arguments';

/**
 * Opens the database at `file`, which must exist: a misspelt path must not create a new,
 * empty database, where a candidate would elect itself beside the real election.
 */
export function openDatabase(file: string | undefined, { readonly }: { readonly: boolean }): Database.Database {
  if (file === undefined) throw new CliError(exitCode.usage, 'which database? Give the path of the SQLite file');
  if (!existsSync(file)) throw new CliError(exitCode.noDatabase, `no database at ${file}`);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly, fileMustExist: true, timeout: 1_000 });
    db.prepare('SELECT count(*) FROM sqlite_master').get(); // not a database: fails here
  } catch (error) {
    throw new CliError(exitCode.noDatabase, `cannot open ${file} as a SQLite database: ${(error as Error).message}`);
  }
  return db;
}

/** Whether a candidate ever ran on `db`: the lease table exists. */
export function hasLeaseTable(db: Database.Database): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'worker_leadership'`).get() !== undefined;
}

/** The message for a database without the lease table, the same for every command. */
export function noTableError(file: string): CliError {
  return new CliError(exitCode.noTable, `no worker_leadership table in ${file}: no candidate has campaigned on this database`);
}

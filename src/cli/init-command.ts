import { existsSync } from 'node:fs';
import { CliError, exitCode, parseArguments } from './cli-arguments';
import { patiently } from './patiently';
import { checkedStore, expectFileIfAny, openSqliteFile } from './sqlite-file';

/**
 * `init <file> [--wal]`: creates the SQLite file and the lease tables, once, where `run`,
 * `status` and `watch` never create a file (a misspelt path must not start a second
 * election in a new, empty database). On a database that exists it creates only what is
 * missing, as every candidate does. `--wal` also sets the journal mode we advise, which the
 * file keeps. PostgreSQL needs none of it: its candidates create their table.
 */
export async function initCommand(argv: readonly string[], print: (line: string) => void): Promise<number> {
  const parsed = parseArguments(argv, [], ['wal']);
  const [file] = parsed.positional;
  if (!file) throw new CliError(exitCode.usage, 'which SQLite file? Give its path');
  if (/^postgres(ql)?:\/\//.test(file)) {
    throw new CliError(exitCode.usage, 'init is for SQLite files: on PostgreSQL, the first candidate creates the lease table');
  }
  expectFileIfAny(file);
  const existed = existsSync(file);
  const opened = await openSqliteFile(file, { readonly: false, create: true }).catch((error: unknown) => {
    throw error instanceof CliError ? error : new CliError(exitCode.noDatabase, `cannot create ${file}: ${(error as Error).message}`);
  });
  const store = await checkedStore(opened, file);
  try {
    const mode = await patiently(() => store.install({ wal: parsed.options.has('wal') }));
    print(`${existed ? 'ready' : 'created'}: ${file}, with the lease tables (journal_mode ${mode})`);
    return exitCode.ok;
  } finally {
    opened.db.close();
  }
}

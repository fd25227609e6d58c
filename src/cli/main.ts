#!/usr/bin/env node
import { fromEvent, merge, Observable, take } from 'rxjs';
import { CliError, exitCode } from './cli-arguments';
import { handoffCommand } from './handoff-command';
import { initCommand } from './init-command';
import { runCommand } from './run-command';
import { statusCommand } from './status-command';
import { watchCommand } from './watch-command';

const usage = `usage: observe-leadership <command> <database> [options]

  <database> is the path of a SQLite file, or a postgres:// URL (with --schema S
  and --table T for a lease table of another name)

  status <db> [--slot N] [--json | --prometheus]
      who holds the slot, for which term, until when, and whether the lease is live
  watch <db> [--slot N] [--poll-every MS] [--prometheus]
      a line each time the slot changes hands, is renewed, or runs out, until Ctrl-C
  handoff <db> [--slot N] [--to HOLDER] [--within MS]
      ask the leader to hand its tenure to the standing candidate HOLDER (to
      anybody without --to), and say who leads next; fails (exit 1) when the
      leader does not answer, or HOLDER does not take the slot, within MS (10 s)
  init <file> [--wal]
      create a SQLite file with the lease tables (run, status and watch never
      create one: a misspelt path must not start a second election); --wal sets
      the journal mode we advise
  run <db> [--slot N] [--holder H] [--renew-every MS] [--expires-after MS] [--retry-every MS] [--grace MS] -- <command...>
      campaign as H (a new ULID by default, printed), and run the command only
      while leading; its environment has OBSERVE_LEADERSHIP_SLOT,
      OBSERVE_LEADERSHIP_HOLDER and OBSERVE_LEADERSHIP_TERM

exit codes: 0 done, 1 failed, 2 bad arguments, 3 no such database, 4 no lease table,
5 a file that is not a SQLite database; run exits with its command's code`;

/** Runs one command line; resolves with the exit code. Never throws. */
export async function main(
  argv: readonly string[],
  out: (line: string) => void,
  err: (line: string) => void,
  stop: Observable<unknown>,
): Promise<number> {
  const [name, ...rest] = argv;
  try {
    switch (name) {
      case 'status':
        return await statusCommand(rest, out);
      case 'watch':
        return await watchCommand(rest, out, stop);
      case 'init':
        return await initCommand(rest, out);
      case 'handoff':
        return await handoffCommand(rest, out);
      case 'run':
        return await runCommand(rest, (line) => err(`observe-leadership: ${line}`), stop);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        out(usage);
        return name === undefined ? exitCode.usage : exitCode.ok;
      default:
        throw new CliError(exitCode.usage, `unknown command ${name}`);
    }
  } catch (error) {
    err(`observe-leadership: ${(error as Error).message}`);
    if (error instanceof CliError && error.code === exitCode.usage) err(`run observe-leadership --help for usage`);
    return error instanceof CliError ? error.code : exitCode.failed;
  }
}

if (require.main === module) {
  const stop = merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')).pipe(take(1));
  void main(
    process.argv.slice(2),
    (line) => console.log(line),
    (line) => console.error(line),
    stop,
  ).then((code) => {
    process.exitCode = code;
  });
}

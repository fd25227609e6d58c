#!/usr/bin/env node
import { fromEvent, merge, Observable, take } from 'rxjs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliError, exitCode } from './cli-arguments';
import { commandHelp, helpOf, overview } from './command-help';
import { handoffCommand } from './handoff-command';
import { initCommand } from './init-command';
import { runCommand } from './run-command';
import { statusCommand } from './status-command';
import { watchCommand } from './watch-command';

/** Runs one command line; resolves with the exit code. Never throws. */
export async function main(
  argv: readonly string[],
  out: (line: string) => void,
  err: (line: string) => void,
  stop: Observable<unknown>,
): Promise<number> {
  const [name, ...rest] = argv;
  try {
    // Each command's own help, wherever --help comes among its options (not in run's command).
    const own = rest.indexOf('--') >= 0 ? rest.slice(0, rest.indexOf('--')) : rest;
    if (name !== undefined && name in commandHelp && (own.includes('--help') || own.includes('-h'))) {
      out(helpOf(name));
      return exitCode.ok;
    }
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
      case 'help':
        if (rest[0] !== undefined && rest[0] in commandHelp) {
          out(helpOf(rest[0]));
          return exitCode.ok;
        }
        out(overview());
        return exitCode.ok;
      case undefined:
      case '--help':
      case '-h':
        out(overview());
        return name === undefined ? exitCode.usage : exitCode.ok;
      case '--version':
      case '-v':
      case 'version':
        out(packageVersion());
        return exitCode.ok;
      default:
        throw new CliError(exitCode.usage, `unknown command ${name}`);
    }
  } catch (error) {
    err(`observe-leadership: ${(error as Error).message}`);
    if (error instanceof CliError && error.code === exitCode.usage) {
      err(`run observe-leadership ${name !== undefined && name in commandHelp ? `${name} --help` : '--help'} for usage`);
    }
    return error instanceof CliError ? error.code : exitCode.failed;
  }
}

/** This package's version, from its package.json (two folders up, from src/cli or dist/cli). */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
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

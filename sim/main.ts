/**
 * npm run simulate -- [--seconds S] [--runs R] [--seed N] [--candidates N] [--slots N] [--duration MS] [--postgres]
 *                     [--threads T] [--plant NAME] [--journal wal|delete] [--out FILE] [--shrink-seconds S] [--shrink-runs R]
 * npm run simulate -- --replay FILE
 * npm run simulate -- --exhaustive [--candidates 2|3] [--delays K] [--plant NAME] [--out FILE]
 *
 * Simulated runs, one per seed from N on, for S seconds of this machine's time (or R runs, if
 * fewer: the same seeds on any machine), on T threads
 * (one per core unless told): each run is `--duration` ms of simulated time with faults, then
 * a quiet time, checked (check.ts). At the first violation it shrinks the run (shrink.ts: for
 * S seconds or R runs, whichever ends first), writes the shrunk scenario to FILE (`--replay
 * FILE` runs it again, exactly) and prints its timeline. `--plant NAME` runs with a known bug
 * switched in (plants.ts); `--journal delete` runs on a rollback journal, better-sqlite3's
 * default, rather than WAL; `--postgres` runs the PostgreSQL store on its real statements, on
 * PGlite (sim/postgres/sim-server.ts: what that server cannot show). Last line:
 * `simulated: F failovers, X faults, V violations in S s (seed N)`.
 * `--exhaustive` runs every schedule of a small search instead (exhaustive.ts): every order of
 * the events due at one instant in different processes, and every way up to K operations
 * (0 unless told) answer late, under each fault plan; it says how many schedules that was.
 * Exits 1 on a violation, 2 on bad arguments.
 */
import { runCommand } from '../test-kit/command';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cores, exploreInThreads } from './explore-threads';
import { plant, plants } from './plants';
import { closeEngineOfThread } from './postgres/sim-server';
import type { Scenario } from './scenario';

interface Arguments {
  seconds: number;
  runs: number;
  seed: number;
  candidates: number;
  slots: number;
  duration: number;
  shrinkSeconds: number;
  shrinkRuns: number;
  threads: number;
  plant?: string;
  journal?: string;
  exhaustive: boolean;
  postgres: boolean;
  delays: number;
  replay?: string;
  out?: string;
}

const numbers: Record<string, [keyof Arguments, number, number]> = {
  '--seconds': ['seconds', 0.01, 86_400],
  '--runs': ['runs', 1, 1_000_000_000],
  '--seed': ['seed', 0, 2 ** 31],
  '--candidates': ['candidates', 1, 64],
  '--slots': ['slots', 1, 16],
  '--duration': ['duration', 1_000, 3_600_000],
  '--shrink-seconds': ['shrinkSeconds', 0, 3_600],
  '--shrink-runs': ['shrinkRuns', 0, 1_000_000],
  '--threads': ['threads', 1, 256],
  '--delays': ['delays', 0, 4],
};
const strings: Record<string, 'plant' | 'journal' | 'replay' | 'out'> = {
  '--plant': 'plant',
  '--journal': 'journal',
  '--replay': 'replay',
  '--out': 'out',
};

export function parseArguments(argv: string[]): Arguments {
  const args: Arguments = {
    seconds: 10,
    runs: Infinity,
    exhaustive: false,
    postgres: false,
    delays: 0,
    seed: 1,
    candidates: 3,
    slots: 1,
    duration: 60_000,
    shrinkSeconds: 60,
    shrinkRuns: Infinity,
    threads: cores,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [option, value] = [argv[i], argv[i + 1]];
    if (option === '--exhaustive' || option === '--postgres') {
      args[option === '--exhaustive' ? 'exhaustive' : 'postgres'] = true;
      i--; // no value
      continue;
    }
    if (option in strings) {
      if (value === undefined) throw new Error(`${option} needs a value`);
      args[strings[option]] = value;
      continue;
    }
    const limit = numbers[option];
    if (limit === undefined) {
      throw new Error(`unknown option ${option} (options: ${[...Object.keys(numbers), ...Object.keys(strings)].join(', ')})`);
    }
    const [name, min, max] = limit;
    const number = Number(value);
    if (!Number.isFinite(number) || number < min || number > max)
      throw new Error(`${option} must be a number from ${min} to ${max}, got ${value}`);
    (args[name] as number) = number;
  }
  if (args.journal !== undefined && args.journal !== 'wal' && args.journal !== 'delete') {
    throw new Error(`--journal must be wal or delete, got ${args.journal}`);
  }
  if (args.postgres && (args.exhaustive || args.journal !== undefined)) {
    throw new Error("--postgres runs without --exhaustive and --journal (a journal is SQLite's)");
  }
  if (args.plant !== undefined && !(args.plant in plants)) {
    throw new Error(`--plant must be one of ${Object.keys(plants).join(', ')}, got ${args.plant}`);
  }
  return args;
}

async function main(): Promise<number> {
  let args: Arguments;
  let replayed: Scenario | undefined;
  try {
    args = parseArguments(process.argv.slice(2));
    if (args.replay !== undefined) replayed = JSON.parse(readFileSync(args.replay, 'utf8')) as Scenario;
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  // Planted before the library loads (below), so that it loads with the bug.
  const planted = args.plant ?? replayed?.plant;
  const loadedPlanted = planted === undefined ? undefined : plant(planted);
  // A require, not an import: the plant hooks the CommonJS loader, which an import() would bypass.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { explore, story } = require('./explore') as typeof import('./explore');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { shrink } = require('./shrink') as typeof import('./shrink');
  const started = performance.now();
  const elapsed = () => ((performance.now() - started) / 1_000).toFixed(1);
  if (replayed !== undefined) {
    const told = await story(replayed);
    console.log(told.lines.join('\n'));
    console.log(
      `simulated: replay of ${args.replay}, ${told.violation === undefined ? 0 : 1} violations in ${elapsed()} s (seed ${replayed.seed})`,
    );
    return told.violation === undefined ? 0 : 1;
  }
  if (args.exhaustive) return exhaustively(args, planted, elapsed);
  const shape = {
    candidates: args.candidates,
    slots: args.slots,
    duration: args.duration,
    ...(args.journal === 'delete' && { journal: 'delete' as const }),
    ...(args.postgres && { store: 'postgres' as const }),
    ...(planted !== undefined && { plant: planted }),
  };
  const { seed, seconds, runs, threads } = args;
  const run =
    threads === 1 ? await explore(shape, { seed, seconds, runs }) : await exploreInThreads(shape, { seed, seconds, runs, threads });
  if (loadedPlanted !== undefined && !loadedPlanted()) throw new Error(`plant ${planted}: its file never loaded`);
  const [first, last] = run.seeds;
  console.log(
    `${run.runs} runs of ${args.duration / 1_000} simulated s${args.postgres ? ' on PostgreSQL' : ''}, seeds ${first} to ${last}`,
  );
  if (run.found === undefined) {
    console.log(`simulated: ${run.failovers} failovers, ${run.faults} faults, 0 violations in ${elapsed()} s (seed ${first})`);
    return 0;
  }
  const { violation } = run.found;
  const shrunk = await shrink(run.found.scenario, violation, { seconds: args.shrinkSeconds, runs: args.shrinkRuns });
  const file = args.out ?? join(tmpdir(), `observe-leadership-simulation-${run.found.scenario.seed}.json`);
  writeFileSync(file, `${JSON.stringify(shrunk.scenario, null, 2)}\n`);
  console.log(`seed ${run.found.scenario.seed}: ${violation.check}: ${violation.detail}`);
  console.log(
    `shrunk in ${shrunk.runs} runs to ${shrunk.scenario.faults.length} fault(s) (from ${run.found.scenario.faults.length}); its timeline:`,
  );
  console.log((await story(shrunk.scenario)).lines.join('\n'));
  console.log(`replay: npm run simulate -- --replay ${file}`);
  console.log(
    `simulated: ${run.failovers} failovers, ${run.faults} faults, 1 violations in ${elapsed()} s (seed ${run.found.scenario.seed})`,
  );
  return 1;
}

/** `--exhaustive`: every schedule of the search, or the first that fails, written out and told. */
async function exhaustively(args: Arguments, planted: string | undefined, elapsed: () => string): Promise<number> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { exhaust, horizon } = require('./exhaustive') as typeof import('./exhaustive');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { story } = require('./explore') as typeof import('./explore');
  const { candidates, delays } = args;
  // Every schedule, however long that takes, unless told otherwise.
  const seconds = process.argv.includes('--seconds') ? args.seconds : Infinity;
  const result = exhaust({ candidates, delays, ...(planted !== undefined && { plant: planted }) }, { seconds });
  console.log(
    `exhaustive: ${result.plans} fault plans, ${result.schedules} schedules${result.complete ? ' (all of them)' : ' (stopped)'}: ` +
      `every order of the events due at one instant in different processes, and up to ${delays} late answer(s), ` +
      `within ${horizon} ms, ${candidates} candidates, in ${elapsed()} s`,
  );
  if (result.found === undefined) {
    console.log(`simulated: ${result.failovers} failovers, ${result.plans - 1} faults, 0 violations in ${elapsed()} s (seed 1)`);
    return 0;
  }
  const file = args.out ?? join(tmpdir(), 'observe-leadership-simulation-exhaustive.json');
  writeFileSync(file, `${JSON.stringify(result.found.scenario, null, 2)}\n`);
  console.log((await story(result.found.scenario)).lines.join('\n'));
  console.log(`replay: npm run simulate -- --replay ${file}`);
  console.log(`simulated: ${result.failovers} failovers, ${result.plans - 1} faults, 1 violations in ${elapsed()} s (seed 1)`);
  return 1;
}

if (require.main === module) {
  runCommand(async () => {
    try {
      return await main();
    } finally {
      await closeEngineOfThread();
    }
  });
}

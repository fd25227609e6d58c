/**
 * npm run chaos -- [--processes N] [--duration S] [--lease MS] [--seed K] [--slots M]
 *                  [--report FILE] [--slack MS] [--no-seed-worker] [--postgres [URL]]
 *                  [--journal delete|truncate|persist|wal]
 * npm run chaos -- --check FILE
 *
 * Runs worker processes on one SQLite file, opened by every process in the --journal mode
 * (default delete: better-sqlite3's defaults; wal as README advises) (or, with --postgres, in a fresh schema of the
 * PostgreSQL server at URL, or of a throwaway server started for the run) under injected
 * faults, then checks the history (see checker.ts). Prints a table; exits 1 on any
 * violation, 2 on bad arguments.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { checkHistory } from './checker';
import { ChaosHistory, runChaos } from './orchestrator';
import { startPostgresServer } from './postgres-server';
import { formatSummary, summarize } from './report';
import { JournalMode, journalModes } from './worker';

interface Arguments {
  processes: number;
  duration: number;
  lease: number;
  seed: number;
  slots: number;
  slack: number;
  seedWorker: boolean;
  journal: JournalMode;
  report?: string;
  check?: string;
  /** `true`: a server started for the run (or the one of OBSERVE_LEADERSHIP_TEST_DATABASE_URL). */
  postgres?: string | true;
}

const numeric: Record<string, [min: number, max: number]> = {
  processes: [1, 64],
  duration: [1, 24 * 3600],
  lease: [10, 600_000],
  seed: [0, 2 ** 32 - 1],
  slots: [1, 64],
  slack: [0, 600_000],
};

export function parseArguments(argv: string[]): Arguments {
  const parsed: Arguments = {
    processes: 4,
    duration: 30,
    lease: 600,
    seed: Math.floor(Math.random() * 2 ** 32),
    slots: 1,
    slack: 1_000,
    seedWorker: true,
    journal: 'delete',
  };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--/, '');
    if (name === 'no-seed-worker') parsed.seedWorker = false;
    else if (name === 'postgres') parsed.postgres = argv[i + 1] === undefined || argv[i + 1].startsWith('--') ? true : argv[++i];
    else if (name === 'report' || name === 'check') parsed[name] = expectValue(name, argv[++i]);
    else if (name === 'journal') {
      const mode = expectValue(name, argv[++i]);
      if (!(journalModes as readonly string[]).includes(mode)) throw new RangeError(`Expected --journal to be one of ${journalModes.join(', ')}, got ${mode}`);
      parsed.journal = mode as JournalMode;
    }
    else if (name in numeric) {
      const value = Number(expectValue(name, argv[++i]));
      const [min, max] = numeric[name];
      if (!Number.isInteger(value) || value < min || value > max) {
        throw new RangeError(`Expected --${name} to be an integer from ${min} to ${max}, got ${argv[i]}`);
      }
      (parsed as unknown as Record<string, number>)[name] = value;
    } else throw new RangeError(`Unknown option ${argv[i]}; see chaos/main.ts for the options`);
  }
  return parsed;
}

function expectValue(name: string, value: string | undefined): string {
  if (value === undefined || value.startsWith('--')) throw new RangeError(`Expected a value after --${name}`);
  return value;
}

async function main(): Promise<number> {
  let args: Arguments;
  try {
    args = parseArguments(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  let history: ChaosHistory;
  if (args.check) {
    history = JSON.parse(readFileSync(args.check, 'utf8')).history;
  } else {
    const { processes, lease, seed, slots, seedWorker, journal } = args;
    const server = args.postgres === true ? await startPostgresServer() : undefined;
    const url = server?.url ?? (args.postgres as string | undefined);
    const postgres = url === undefined ? undefined : { url, schema: `chaos_${Date.now()}_${seed}` };
    try {
      history = await runChaos({ processes, duration: args.duration * 1000, lease, seed, slots, seedWorker, postgres, journal }, (line) => console.log(line));
    } finally {
      server?.stop();
    }
  }
  const result = checkHistory(history, { slack: args.slack });
  const summary = summarize(history, result);
  console.log(formatSummary(history, summary, result));
  if (args.report) {
    writeFileSync(args.report, JSON.stringify({ summary, violations: result.violations, outcomes: result.outcomes, history }));
    console.log(`report: ${args.report}`);
  }
  return summary.violations === 0 ? 0 : 1;
}

if (require.main === module) {
  main().then(
    (code) => (process.exitCode = code),
    (error) => {
      console.error(error);
      process.exitCode = 2;
    },
  );
}

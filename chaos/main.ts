/**
 * npm run chaos -- [--processes N] [--duration S] [--lease MS] [--seed K] [--slots M]
 *                  [--report FILE] [--slack MS] [--no-original-worker] [--postgres [URL]]
 *                  [--journal delete|truncate|persist|wal]
 *                  [--hosts H | --pgbouncer transaction|session] [--clock-steps]
 * npm run chaos -- --check FILE
 *
 * Runs worker processes on one SQLite file, opened by every process in the --journal mode
 * (default delete: better-sqlite3's defaults; wal as README advises) (or, with --postgres, in a fresh schema of the
 * PostgreSQL server at URL, or of a throwaway server started for the run) under injected
 * faults, then checks the history (see checker.ts). Prints a table; exits 1 on any
 * violation, 2 on bad arguments.
 *
 * PostgreSQL only: --hosts H runs the processes on H hosts (network namespaces on links of
 * their own, root only; a server started for the run, listening on them), and adds the
 * fault `cut-host`, which cuts the leader's host off for longer than a lease and then heals
 * it. --pgbouncer MODE runs them through a PgBouncer started in front of the server.
 *
 * --clock-steps adds the fault `clock-step`: the wall clock steps, forward or back, by a
 * second to four hours, or strobes, for every worker at once (SQLite: every worker runs
 * under libfaketime, from Debian's faketime package) or for the server (PostgreSQL: a server
 * started for the run, under libfaketime). No worker of the original statements then: it
 * judges leases by the wall clock, which a step fools (see docs/operating.md).
 */
import { runCommand } from '../test-kit/command';
import { readFileSync, writeFileSync } from 'node:fs';
import { checkHistory } from './checker';
import { networkNamespace } from '../test-kit/network-namespace';
import { ChaosHistory, ChaosHost, runChaos } from './orchestrator';
import { PoolMode, poolModes, startPgBouncer } from '../test-kit/pgbouncer';
import { startPostgresServer } from '../test-kit/postgres-server';
import { SteppedClock } from '../test-kit/stepped-clock';
import { formatSummary, summarize } from './report';
import { JournalMode, journalModes } from '../test-kit/worker-database';

interface Arguments {
  processes: number;
  duration: number;
  lease: number;
  seed: number;
  slots: number;
  slack: number;
  originalWorker: boolean;
  journal: JournalMode;
  report?: string;
  check?: string;
  /** `true`: a server started for the run (or the one of OBSERVE_LEADERSHIP_TEST_DATABASE_URL). */
  postgres?: string | true;
  hosts?: number;
  pgbouncer?: PoolMode;
  clockSteps: boolean;
}

const numeric: Record<string, [min: number, max: number]> = {
  processes: [1, 64],
  duration: [1, 24 * 3600],
  lease: [10, 600_000],
  seed: [0, 2 ** 32 - 1],
  slots: [1, 64],
  slack: [0, 600_000],
  hosts: [2, 16],
};

export function parseArguments(argv: string[]): Arguments {
  const parsed: Arguments = {
    processes: 4,
    duration: 30,
    lease: 600,
    seed: Math.floor(Math.random() * 2 ** 32),
    slots: 1,
    slack: 1_000,
    originalWorker: true,
    journal: 'delete',
    clockSteps: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--/, '');
    if (name === 'no-original-worker') parsed.originalWorker = false;
    else if (name === 'clock-steps') parsed.clockSteps = true;
    else if (name === 'postgres') parsed.postgres = argv[i + 1] === undefined || argv[i + 1].startsWith('--') ? true : argv[++i];
    else if (name === 'report' || name === 'check') parsed[name] = expectValue(name, argv[++i]);
    else if (name === 'pgbouncer') {
      const mode = expectValue(name, argv[++i]);
      if (!(poolModes as readonly string[]).includes(mode))
        throw new RangeError(`Expected --pgbouncer to be one of ${poolModes.join(', ')}, got ${mode}`);
      parsed.pgbouncer = mode as PoolMode;
    } else if (name === 'journal') {
      const mode = expectValue(name, argv[++i]);
      if (!(journalModes as readonly string[]).includes(mode))
        throw new RangeError(`Expected --journal to be one of ${journalModes.join(', ')}, got ${mode}`);
      parsed.journal = mode as JournalMode;
    } else if (name in numeric) {
      const value = Number(expectValue(name, argv[++i]));
      const [min, max] = numeric[name];
      if (!Number.isInteger(value) || value < min || value > max) {
        throw new RangeError(`Expected --${name} to be an integer from ${min} to ${max}, got ${argv[i]}`);
      }
      (parsed as unknown as Record<string, number>)[name] = value;
    } else throw new RangeError(`Unknown option ${argv[i]}; see chaos/main.ts for the options`);
  }
  if ((parsed.hosts !== undefined || parsed.pgbouncer !== undefined) && parsed.postgres === undefined) {
    throw new RangeError('--hosts and --pgbouncer are for PostgreSQL: add --postgres');
  }
  if (parsed.hosts !== undefined && parsed.postgres !== true)
    throw new RangeError('--hosts needs a server of its own: give --postgres without a URL');
  if (parsed.hosts !== undefined && parsed.pgbouncer !== undefined) throw new RangeError('--hosts and --pgbouncer do not go together');
  if (parsed.clockSteps && typeof parsed.postgres === 'string')
    throw new RangeError("--clock-steps steps a server's clock of its own: give --postgres without a URL");
  // The original worker's statements judge leases by the wall clock: a step fools them.
  if (parsed.clockSteps) parsed.originalWorker = false;
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
    const { processes, lease, seed, slots, originalWorker, journal, clockSteps } = args;
    const cleanups: Array<() => void> = [];
    try {
      const clock = clockSteps ? new SteppedClock() : undefined;
      if (clock) cleanups.push(() => clock.remove());
      const server =
        args.postgres === true
          ? await startPostgresServer({
              ...(args.hosts && { fromNamespaces: true, own: true }),
              ...(clock && args.postgres && { environment: clock.environment }),
            })
          : undefined;
      if (server) cleanups.push(() => server.stop());
      const url = server?.url ?? (args.postgres as string | undefined);
      const postgres = url === undefined ? undefined : { url, schema: `chaos_${Date.now()}_${seed}` };
      const hosts = Array.from({ length: args.hosts ?? 0 }, (_, index): ChaosHost => {
        const namespace = networkNamespace(index);
        cleanups.push(() => namespace.remove());
        return { launcher: namespace.launcher, url: onHost(url!, namespace.hostAddress), cut: namespace.cut, heal: namespace.heal };
      });
      const pgbouncer = args.pgbouncer ? await startPgBouncer(url!) : undefined;
      if (pgbouncer) cleanups.push(() => pgbouncer.stop());
      const through = args.pgbouncer && { workerUrl: pgbouncer!.url(args.pgbouncer), through: `PgBouncer (${args.pgbouncer} mode)` };
      history = await runChaos(
        { processes, duration: args.duration * 1000, lease, seed, slots, originalWorker, postgres, journal, hosts, ...through, clockSteps },
        (line) => console.log(line),
        { clock },
      );
    } finally {
      for (const cleanup of cleanups.reverse()) cleanup();
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

/** `url` with its host replaced: the server as a host on the other side of a link reaches it. */
function onHost(url: string, host: string): string {
  const parsed = new URL(url);
  parsed.hostname = host;
  return parsed.toString();
}

if (require.main === module) runCommand(main);

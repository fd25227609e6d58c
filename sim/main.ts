/**
 * npm run simulate -- [--seconds S] [--seed N] [--candidates N] [--slots N]
 *
 * Simulated runs, one per seed from N on, for S seconds of this machine's time: each run is
 * a minute of simulated time with faults, then a quiet time, checked (check.ts). Stops at
 * the first violation and prints it with the run's timeline near it; `--seed` then replays
 * that run exactly. Last line: `simulated: F failovers, X faults, V violations in S s (seed N)`.
 * Exits 1 on a violation, 2 on bad arguments.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkRun, ms, SimViolation } from './check';
import { SimHistory, SimOptions, World } from './world';

interface Arguments {
  seconds: number;
  seed: number;
  candidates: number;
  slots: number;
  /** Simulated ms of faults per run. */
  duration: number;
}

export function parseArguments(argv: string[]): Arguments {
  const args: Arguments = { seconds: 10, seed: 1, candidates: 3, slots: 1, duration: 60_000 };
  const limits: Record<string, [keyof Arguments, number, number]> = {
    '--seconds': ['seconds', 0.1, 86_400],
    '--seed': ['seed', 0, 2 ** 31],
    '--candidates': ['candidates', 1, 64],
    '--slots': ['slots', 1, 16],
    '--duration': ['duration', 1_000, 3_600_000],
  };
  for (let i = 0; i < argv.length; i += 2) {
    const limit = limits[argv[i]];
    if (limit === undefined) throw new Error(`unknown option ${argv[i]} (options: ${Object.keys(limits).join(', ')})`);
    const [name, min, max] = limit;
    const value = Number(argv[i + 1]);
    if (!Number.isFinite(value) || value < min || value > max)
      throw new Error(`${argv[i]} must be a number from ${min} to ${max}, got ${argv[i + 1]}`);
    args[name] = value;
  }
  return args;
}

/** One run of `seed`, on a database of its own, checked. */
export function simulate(
  seed: number,
  options: Omit<SimOptions, 'seed' | 'file'>,
): { history: SimHistory; violations: SimViolation[]; failovers: number } {
  const folder = mkdtempSync(join(existsShm() ? '/dev/shm' : tmpdir(), 'observe-leadership-sim-'));
  try {
    const history = new World({ ...options, seed, file: join(folder, 'sim.db') }).run();
    return { history, ...checkRun(history) };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function existsShm(): boolean {
  try {
    rmSync(mkdtempSync('/dev/shm/observe-leadership-probe-'), { recursive: true });
    return true;
  } catch {
    return false;
  }
}

/** What happened in the second before a violation, and until it. */
export function timelineNear(history: SimHistory, violation: SimViolation): string[] {
  return history.records
    .filter((r) => r.at >= violation.at - 1_000 && r.at <= violation.at + 1)
    .map(
      (r) =>
        `${ms(r.at).padStart(12)}  ${r.process.padEnd(5)} ${r.kind === 'fault' ? 'FAULT ' : ''}${r.type}` +
        `${r.slot === undefined ? '' : ` slot ${r.slot}`}${r.term === undefined ? '' : ` term ${r.term}`}` +
        `${r.deadline === undefined ? '' : ` until ${ms(r.deadline)}`}${r.detail ? ` (${r.detail})` : ''}`,
    );
}

function main(): number {
  let args: Arguments;
  try {
    args = parseArguments(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  const timing = { renewEvery: 200, expiresAfter: 600, retryEvery: 120 };
  const started = performance.now();
  let [failovers, faults, runs] = [0, 0, 0];
  let seed = args.seed;
  for (; performance.now() - started < args.seconds * 1_000; seed++) {
    const run = simulate(seed, { candidates: args.candidates, slots: args.slots, duration: args.duration, ...timing });
    runs++;
    failovers += run.failovers;
    faults += run.history.faults;
    if (run.violations.length > 0) {
      const [first] = run.violations;
      console.log(`seed ${seed}: ${run.violations.length} violation(s); the first, ${first.check}: ${first.detail}`);
      console.log(timelineNear(run.history, first).join('\n'));
      console.log(`replay: npm run simulate -- --seed ${seed} --seconds 0.1 --candidates ${args.candidates} --slots ${args.slots}`);
      const seconds = ((performance.now() - started) / 1_000).toFixed(1);
      console.log(
        `simulated: ${failovers} failovers, ${faults} faults, ${run.violations.length} violations in ${seconds} s (seed ${seed})`,
      );
      return 1;
    }
  }
  const seconds = ((performance.now() - started) / 1_000).toFixed(1);
  console.log(`${runs} runs of ${args.duration / 1_000} simulated s, seeds ${args.seed} to ${seed - 1}`);
  console.log(`simulated: ${failovers} failovers, ${faults} faults, 0 violations in ${seconds} s (seed ${args.seed})`);
  return 0;
}

if (require.main === module) process.exitCode = main();

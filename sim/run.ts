/**
 * A scenario run on a database of its own and checked, and its timeline as a reader wants it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkRun, ms, SimViolation } from './check';
import type { Scenario } from './scenario';
import { engineOfThread, PgEngine } from './postgres/sim-server';
import { SimHistory, SimRecord, World } from './world';

export interface SimOutcome {
  history: SimHistory;
  violations: SimViolation[];
  failovers: number;
}

/** Runs `scenario` (with every operation recorded too, if `trace`), and checks it. */
export function simulate(scenario: Scenario, { trace = false } = {}): SimOutcome {
  const folder = mkdtempSync(join(inMemory ? '/dev/shm' : tmpdir(), 'observe-leadership-sim-'));
  try {
    const history = new World(scenario, { file: join(folder, 'sim.db') }, trace).run();
    return { history, ...checkRun(history) };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** Runs `scenario` on PostgreSQL: on `engine`, a PGlite of this thread's (see `PgEngine`). */
async function simulateOnPostgres(scenario: Scenario, engine: PgEngine, { trace = false } = {}): Promise<SimOutcome> {
  const history = await new World(scenario, { engine }, trace).runOnPostgres();
  return { history, ...checkRun(history) };
}

/** Runs `scenario` on its store: SQLite at once, PostgreSQL on this thread's engine. */
export async function simulateOnItsStore(scenario: Scenario, options: { trace?: boolean } = {}): Promise<SimOutcome> {
  return scenario.store === 'postgres' ? simulateOnPostgres(scenario, await engineOfThread(), options) : simulate(scenario, options);
}

/** Whether files can live in memory here (/dev/shm): a run then never waits for a disk. */
const inMemory = ((): boolean => {
  try {
    rmSync(mkdtempSync('/dev/shm/observe-leadership-probe-'), { recursive: true });
    return true;
  } catch {
    return false;
  }
})();

/**
 * The records from `from` to `to` (true ms), one a line: true time, process and holder, its wall
 * clock's distance from true time where it stepped, and what happened.
 */
export function timelineOf(records: SimRecord[], from = -Infinity, to = Infinity): string[] {
  return records.filter((r) => r.at >= from && r.at <= to).map(line);
}

/** What happened in the second before a violation, and until it. */
export function timelineNear(history: SimHistory, violation: SimViolation): string[] {
  return timelineOf(history.records, violation.at - 1_000, violation.at + 1);
}

function line(r: SimRecord): string {
  const wall = r.wall === undefined ? '' : `wall ${r.wall > 0 ? '+' : ''}${r.wall} ms`;
  const what =
    r.kind === 'operation'
      ? `${r.type} -> ${r.detail}`
      : `${r.kind === 'fault' ? 'FAULT ' : ''}${r.type}` +
        `${r.slot === undefined ? '' : ` slot ${r.slot}`}${r.term === undefined ? '' : ` term ${r.term}`}` +
        `${r.deadline === undefined ? '' : ` until ${ms(r.deadline)}`}${r.detail ? ` (${r.detail})` : ''}` +
        `${r.tenure === undefined ? '' : ` (the slot: ${r.tenure.holder} term ${r.tenure.term}, ${ms(r.tenure.left)} left)`}`;
  return `${ms(r.at).padStart(12)}  ${`${r.process} ${r.holder}`.padEnd(8)} ${wall.padEnd(17)} ${r.kind === 'operation' ? '  ' : ''}${what}`;
}

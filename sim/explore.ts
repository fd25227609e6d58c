/**
 * Runs seed after seed for a while and stops at the first violation; and replays a scenario,
 * with its timeline. What `npm run simulate` does (with explore-threads.ts to run on every
 * core, and shrink.ts), as functions the specs call.
 */
import type { SimViolation } from './check';
import { simulateOnItsStore, timelineOf } from './run';
import { Scenario, scenarioOf } from './scenario';

export interface Shape {
  candidates: number;
  slots: number;
  duration: number;
  plant?: string;
  journal?: 'wal' | 'delete';
  store?: 'postgres';
}

export interface Exploration {
  runs: number;
  failovers: number;
  faults: number;
  /** The lowest seed run and the highest. */
  seeds: [number, number];
  /** The first run that failed: its scenario and its first violation. */
  found?: { scenario: Scenario; violation: SimViolation };
}

export interface ExploreOptions {
  /** The first seed, */
  seed: number;
  /** then every `stride`th (one thread of several runs seed, seed + stride, ...). */
  stride?: number;
  /** For how long (this machine's seconds); one run at least. */
  seconds: number;
  /** For how many runs at most, whatever the time left (the same seeds on any machine). */
  runs?: number;
  /** Asked between runs: whether to stop now (another thread found a violation). */
  stop?: () => boolean;
}

export async function explore(
  shape: Shape,
  { seed, stride = 1, seconds, runs = Infinity, stop = () => false }: ExploreOptions,
): Promise<Exploration> {
  const until = performance.now() + seconds * 1_000;
  const exploration: Exploration = { runs: 0, failovers: 0, faults: 0, seeds: [seed, seed] };
  const goOn = () => exploration.runs === 0 || (exploration.runs < runs && performance.now() < until && !stop());
  for (let next = seed; goOn(); next += stride) {
    const scenario = scenarioOf(next, shape);
    const outcome = await simulateOnItsStore(scenario);
    exploration.runs++;
    exploration.failovers += outcome.failovers;
    exploration.faults += outcome.history.faults;
    exploration.seeds[1] = next;
    const [violation] = outcome.violations;
    if (violation !== undefined) return { ...exploration, found: { scenario, violation } };
  }
  return exploration;
}

/**
 * A scenario's run told for a reader: its violation, the faults it planned, and every
 * event and operation from a lease and a half before the violation to it.
 */
export async function story(scenario: Scenario): Promise<{ violation?: SimViolation; lines: string[] }> {
  const outcome = await simulateOnItsStore(scenario, { trace: true });
  const [violation] = outcome.violations;
  const { timing } = scenario;
  const lines = [
    `${scenario.candidates} candidate(s), ${scenario.slots} slot(s), ${scenario.duration} ms of faults, seed ${scenario.seed}` +
      `${scenario.journal === 'delete' ? ', rollback journal' : ''}${scenario.store === 'postgres' ? ', PostgreSQL' : ''}` +
      `${scenario.plant === undefined ? '' : `, planted: ${scenario.plant}`}; noise: ` +
      (Object.entries(scenario.noise)
        .filter(([, on]) => on)
        .map(([kind]) => kind)
        .join(', ') || 'none'),
    ...(scenario.found === undefined ? [] : [`found: ${scenario.found}`]),
    `faults: ${scenario.faults.map((f) => `${f.kind} at ${f.at} ms${f.atLeader ? ' (a leader)' : ''}`).join('; ') || 'none'}`,
  ];
  if (violation === undefined) return { lines: [...lines, 'no violation'] };
  return {
    violation,
    lines: [
      ...lines,
      `violation, ${violation.check}: ${violation.detail}`,
      ...timelineOf(
        // The leader's fenced writes that committed, a line every 150 ms, only where they are the finding.
        outcome.history.records.filter((r) => violation.check === 'fenced' || r.kind !== 'write' || r.type !== 'fenced'),
        violation.at - 1.5 * timing.expiresAfter,
        violation.at + 1,
      ),
    ],
  };
}

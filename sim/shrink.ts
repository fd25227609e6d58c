/**
 * Cuts a failing scenario down to what still fails the same check: the faults after the
 * violation, then those more than 2, 4, 8, ... leases before it, then as many of the others
 * as it can (delta debugging: halves, quarters, ..., one at a time), then each kind of
 * noise, then candidates and slots. Each step keeps a change only if a run of the result
 * still shows first a violation of the same check; the runs are exact, so the result
 * replays as it was found, and shows that violation first.
 */
import type { SimViolation } from './check';
import { simulateOnItsStore } from './run';
import type { SimHistory } from './world';
import type { Noise, Scenario } from './scenario';

export interface Shrunk {
  scenario: Scenario;
  violation: SimViolation;
  /** Runs it took. */
  runs: number;
}

export interface ShrinkOptions {
  /** For how long to go on (this machine's seconds); what it has then is the result. */
  seconds?: number;
  /** How many runs it may make: a limit that, unlike time, gives the same result on any machine. */
  runs?: number;
  /** What a scenario shows: the simulator's verdict, unless a spec judges otherwise. */
  judge?: (scenario: Scenario) => SimViolation[] | Promise<SimViolation[]>;
}

export async function shrink(
  scenario: Scenario,
  found: SimViolation,
  { seconds = 60, runs = Infinity, judge = async (s) => (await simulateOnItsStore(s)).violations }: ShrinkOptions = {},
): Promise<Shrunk> {
  const deadline = performance.now() + seconds * 1_000;
  let best: Shrunk = { scenario, violation: found, runs: 0 };
  /** Keeps `candidate` if its first violation is of the same check (within the time given): what its replay shows first. */
  const fails = async (candidate: Scenario): Promise<boolean> => {
    if (performance.now() > deadline || best.runs >= runs) return false;
    best.runs++;
    const [violation] = await judge(candidate);
    if (violation?.check !== found.check) return false;
    best = { scenario: candidate, violation, runs: best.runs };
    return true;
  };
  await fails(cut(scenario, found));
  // Each fault aimed at the process it hit: a fault removed then sends no later one elsewhere.
  if (performance.now() < deadline && best.runs < runs)
    await fails(pinned(best.scenario, (await simulateOnItsStore(best.scenario)).history));
  // Most violations need only the last few faults before them: tried first, the run is short.
  const lease = scenario.timing.expiresAfter;
  for (let leases = 2; leases * lease < best.violation.at; leases *= 2) {
    const from = best.violation.at - leases * lease;
    if (await fails({ ...best.scenario, faults: best.scenario.faults.filter((fault) => fault.at >= from) })) break;
  }
  // Each kind of noise off, before the faults too: a run with less noise cuts down better (a
  // run the noise never touched shifts less when a fault goes), and trying costs a run a kind.
  const quieter = async (): Promise<boolean> => {
    let progress = false;
    for (const kind of Object.keys(best.scenario.noise) as Array<keyof Noise>) {
      if (best.scenario.noise[kind])
        progress = (await fails({ ...best.scenario, noise: { ...best.scenario.noise, [kind]: false } })) || progress;
    }
    return progress;
  };
  await quieter();
  for (let progress = true; progress && performance.now() < deadline && best.runs < runs;) {
    progress = false;
    progress = (await removeFaults(() => best.scenario, fails)) || progress;
    progress = (await quieter()) || progress;
    while (best.scenario.candidates > 1 && (await fails({ ...best.scenario, candidates: best.scenario.candidates - 1 }))) progress = true;
    while (best.scenario.slots > 1 && (await fails({ ...best.scenario, slots: best.scenario.slots - 1 }))) progress = true;
    const trimmed = cut(best.scenario, best.violation);
    if (trimmed.duration < best.scenario.duration || trimmed.faults.length < best.scenario.faults.length)
      progress = (await fails(trimmed)) || progress;
  }
  return best;
}

/**
 * Without what comes after the violation: the faults after it, and the fault time past the
 * last fault kept. A liveness violation shows only once the faults stop: nothing is cut then.
 */
function cut(scenario: Scenario, violation: SimViolation): Scenario {
  if (violation.check === 'liveness') return scenario;
  const faults = scenario.faults.filter((fault) => fault.at <= violation.at);
  const duration = Math.min(scenario.duration, Math.ceil(Math.max(violation.at, ...faults.map((fault) => fault.at))) + 1);
  return { ...scenario, faults, duration };
}

/** `scenario` with each fault pinned to the process it was aimed at in `history`, its run (the same run: see `PlannedFault.target`). */
function pinned(scenario: Scenario, history: SimHistory): Scenario {
  return {
    ...scenario,
    faults: scenario.faults.map((fault, index) => {
      const target = history.aimed[index];
      return target === undefined ? fault : { ...fault, target };
    }),
  };
}

/** Delta debugging over the faults: removes chunks of them, smaller and smaller, while the run still fails. */
async function removeFaults(current: () => Scenario, fails: (candidate: Scenario) => Promise<boolean>): Promise<boolean> {
  let removed = false;
  for (let chunks = 2; current().faults.length > 0;) {
    const scenario = current();
    const { faults } = scenario;
    const size = Math.ceil(faults.length / Math.min(chunks, faults.length));
    let shrunk = false;
    for (let from = 0; from < faults.length; from += size) {
      if (await fails({ ...scenario, faults: [...faults.slice(0, from), ...faults.slice(from + size)] })) {
        shrunk = removed = true;
        break;
      }
    }
    if (shrunk) chunks = Math.max(chunks - 1, 2);
    else if (size === 1) break;
    else chunks *= 2;
  }
  return removed;
}

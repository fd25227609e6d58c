/**
 * `npm run simulate -- --exhaustive`: for 2 or 3 candidates, every order of the events that
 * are due at one instant in different processes, and every way up to `delays` operations
 * may answer late (a ms, or a lease), within a horizon of two leases and a third, under each
 * of a few fault plans (none, and each kind of fault once, at the leader): not a sample, every
 * schedule, each a run of the real campaign and statements, checked as any other run. A
 * depth-first search over the choices (chooser.ts), each schedule run again from its start.
 */
import type { SimViolation } from './check';
import type { Choice } from './chooser';
import { simulate } from './run';
import { defaultTiming, FaultKind, PlannedFault, Scenario } from './scenario';

export interface ExhaustiveShape {
  candidates: number;
  /** How many operations of a run may answer late. */
  delays: number;
  plant?: string;
}

export interface ExhaustiveResult {
  plans: number;
  schedules: number;
  failovers: number;
  /** Whether every schedule of every plan ran (not if `seconds` ran out, or a violation stopped it). */
  complete: boolean;
  found?: { scenario: Scenario; violation: SimViolation };
}

/** The true ms within which runs branch: the faults come at 700 ms, then a lease and more. */
export const horizon = 1_400;

/** No fault, then each kind once at the leader, at 700 ms (a pause of 1.3 leases; handoffs by name and to anybody). */
function faultPlans(): PlannedFault[][] {
  const kinds: Array<[FaultKind, number]> = [
    ['kill', 0.5],
    ['restart', 0.5],
    ['pause', 0.4],
    ['unsubscribe', 0.5],
    ['step-down', 0.5],
    ['handoff', 0.25],
    ['handoff', 0.6],
    ['wall-step', 0.9],
  ];
  return [[], ...kinds.map(([kind, size]): PlannedFault[] => [{ at: 700, kind, atLeader: true, pick: 0, size }])];
}

export function exhaust(
  { candidates, delays, plant }: ExhaustiveShape,
  {
    seconds = Infinity,
    plans = faultPlans(),
    seen,
  }: { seconds?: number; plans?: PlannedFault[][]; seen?: (choices: number[]) => void } = {},
): ExhaustiveResult {
  const until = performance.now() + seconds * 1_000;
  const result: ExhaustiveResult = { plans: plans.length, schedules: 0, failovers: 0, complete: false };
  for (const faults of plans) {
    const base: Scenario = {
      seed: 1,
      candidates,
      slots: 1,
      duration: horizon,
      timing: defaultTiming,
      noise: { latency: false, failures: false, lateness: false, options: false, channels: false, early: false },
      faults,
      ...(plant !== undefined && { plant }),
      exhaustive: { delays, horizon, choices: [] },
    };
    let path: Choice[] = [];
    for (;;) {
      const scenario: Scenario = { ...base, exhaustive: { delays, horizon, choices: path.map((choice) => choice.chosen) } };
      const outcome = simulate(scenario);
      seen?.((outcome.history.choices ?? []).map((choice) => choice.chosen));
      result.schedules++;
      result.failovers += outcome.failovers;
      const [violation] = outcome.violations;
      if (violation !== undefined) return { ...result, found: { scenario, violation } };
      path = nextPath(outcome.history.choices ?? []);
      if (path.length === 0) break;
      if (performance.now() > until) return result;
    }
  }
  return { ...result, complete: true };
}

/** The next schedule depth first: the last choice that has another way left, taken that way. */
function nextPath(made: Choice[]): Choice[] {
  const path = [...made];
  while (path.length > 0 && path[path.length - 1].chosen + 1 >= path[path.length - 1].of) path.pop();
  if (path.length > 0) path[path.length - 1] = { ...path[path.length - 1], chosen: path[path.length - 1].chosen + 1 };
  return path;
}

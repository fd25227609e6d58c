import { FaultKind } from '../test-kit/history';
import { mulberry32 } from '../test-kit/seeded-random';

/** A fault to inject `at` ms after the run starts; targets are chosen when it comes. */
export interface PlannedFault {
  at: number;
  kind: FaultKind;
  slot: number;
  /** How long it lasts (pause, lock), in ms. */
  duration: number;
  /** A number in [0, 1) to choose among possible targets, so that a seed fixes the choice. */
  pick: number;
  /** For `priority`: the candidate's new priority (with `preempt` on). */
  priority?: number;
  /**
   * For `clock-step`: the seconds the wall clock moves (back if negative); with a
   * `duration`, a strobe that moves it that far forward and back every 150 ms meanwhile.
   */
  step?: number;
}

export interface PlanOptions {
  seed: number;
  /** Run length, ms. */
  duration: number;
  /** expiresAfter, ms. */
  lease: number;
  slots: number;
  /** Whether the processes run on several hosts, whose links can be cut (`cut-host`). @default false */
  hosts?: boolean;
  /** Whether the wall clock can be stepped (`clock-step`). @default false */
  clockSteps?: boolean;
}

/** How often each kind comes, relative to the others. */
const weights: Array<[FaultKind, number]> = [
  ['kill', 3],
  ['kill-in-fenced', 2],
  ['kill-with-standbys', 2],
  ['pause', 3],
  ['stop', 2],
  ['resubscribe', 2],
  ['step-down', 2],
  ['lock', 2],
  ['burst', 1],
  ['cut-host', 3],
  ['clock-step', 4],
];

/** The longest step: four hours, as a host corrected after a long suspend. */
const longestStep = 4 * 3600;

/**
 * The faults of a run, from its seed alone: the same seed, duration, lease and slots give
 * the same schedule. Faults start after a warm-up of two leases and stop two leases before
 * the end; on average one comes every two leases, so that most find a leader to hit.
 */
export function planFaults({ seed, duration, lease, slots, hosts = false, clockSteps = false }: PlanOptions): PlannedFault[] {
  const random = mulberry32(seed);
  const kinds = weights.filter(([kind]) => (hosts || kind !== 'cut-host') && (clockSteps || kind !== 'clock-step'));
  const total = kinds.reduce((sum, [, weight]) => sum + weight, 0);
  const faults: PlannedFault[] = [];
  for (let at = 2 * lease + random() * lease; at < duration - 2 * lease; at += lease * (1 + 2 * random())) {
    let roll = random() * total;
    const [kind] = kinds.find(([, weight]) => (roll -= weight) < 0) ?? kinds[0];
    // A pause or a cut link outlasts the lease; a lock may or may not.
    const duration =
      kind === 'pause' || kind === 'cut-host' ? lease * (1.5 + 1.5 * random()) : kind === 'lock' ? lease * (0.2 + 1.8 * random()) : 0;
    const fault: PlannedFault = {
      at: Math.round(at),
      kind,
      slot: Math.floor(random() * slots),
      duration: Math.round(duration),
      pick: random(),
    };
    if (kind === 'clock-step') Object.assign(fault, clockStep(random, lease));
    faults.push(fault);
  }
  return [...faults, ...planHandoffs(seed, duration, lease, slots), ...planPriorities(seed, duration, lease, slots)].sort(
    (a, b) => a.at - b.at,
  );
}

/**
 * Handoffs to a named follower, one every two to six leases, from a random stream of their
 * own: adding them left every other fault of every seed where it was (the chaos spec's seeds
 * were chosen for those).
 */
function planHandoffs(seed: number, duration: number, lease: number, slots: number): PlannedFault[] {
  const random = mulberry32(seed ^ 0x68616e64);
  const handoffs: PlannedFault[] = [];
  for (let at = 2 * lease + 2 * random() * lease; at < duration - 2 * lease; at += lease * (2 + 4 * random())) {
    handoffs.push({ at: Math.round(at), kind: 'handoff', slot: Math.floor(random() * slots), duration: 0, pick: random() });
  }
  return handoffs;
}

/**
 * Priority changes, one every three to seven leases: a candidate campaigns again with a
 * priority from 0 to 3 and `preempt` on. From a stream of their own, as the handoffs.
 */
function planPriorities(seed: number, duration: number, lease: number, slots: number): PlannedFault[] {
  const random = mulberry32(seed ^ 0x7072696f);
  const changes: PlannedFault[] = [];
  for (let at = 2 * lease + 3 * random() * lease; at < duration - 2 * lease; at += lease * (3 + 4 * random())) {
    const slot = Math.floor(random() * slots);
    changes.push({ at: Math.round(at), kind: 'priority', slot, duration: 0, pick: random(), priority: Math.floor(random() * 4) });
  }
  return changes;
}

/**
 * A step of the wall clock: one in four a strobe (200 s forward and back every 150 ms for one
 * to three leases), else one step, forward or back, of a second to four hours, spread evenly
 * over the orders of magnitude.
 */
function clockStep(random: () => number, lease: number): Pick<PlannedFault, 'step' | 'duration'> {
  if (random() < 0.25) return { step: 200, duration: Math.round(lease * (1 + 2 * random())) };
  const seconds = Math.round(Math.exp(random() * Math.log(longestStep)));
  return { step: random() < 0.5 ? -seconds : seconds, duration: 0 };
}

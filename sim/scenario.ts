/**
 * What a simulated run is made of, as data: the candidates, their timing, the faults planned
 * on true time, and which kinds of noise run beside them (statements answered late, failed
 * operations, late timers). A seed draws a scenario (`scenarioOf`); the shrinker cuts one
 * down; a scenario written to a file (`--out`) runs again exactly (`--replay`): the noise is
 * drawn from its seed as the run goes, so the same scenario always makes the same run.
 */
import { mulberry32 } from '../test-kit/seeded-random';

/**
 * - `kill`: no release; its sockets close as the kernel closes them; a new process with the
 *   same holder starts later (a supervisor restarting the service).
 * - `restart`: the same, the new process with a new holder.
 * - `close`: its connection closed under it: its candidates end with `DATABASE_CLOSED`, then
 *   it is restarted as after a kill.
 * - `pause`: SIGSTOP for `size` × 3 leases, then SIGCONT.
 * - `unsubscribe`: its candidates unsubscribe (the lease released), and subscribe again with
 *   a new priority and lock-delay.
 * - `wall-step`: its wall clock steps by up to ten minutes, forward or back (`size` 0 to 1);
 *   on PostgreSQL, one in two (`pick` below 0.5) steps the server's instead.
 * - `step-down`: each of its candidates that leads steps down (`stepDown`).
 * - `handoff`: a process (`pick`) asks the leader of a slot to hand over, as `handOff` does
 *   once its checks passed: to a live candidate by name (`size` below 0.5), to anybody
 *   (below 0.75), or to a holder nobody stands as (a request written by hand).
 */
export type FaultKind = 'kill' | 'restart' | 'close' | 'pause' | 'unsubscribe' | 'wall-step' | 'step-down' | 'handoff';
export const faultKinds: readonly FaultKind[] = ['kill', 'restart', 'close', 'pause', 'unsubscribe', 'wall-step', 'step-down', 'handoff'];

export interface PlannedFault {
  /** True ms from the run's start. */
  at: number;
  kind: FaultKind;
  /** Aimed at a process that leads a slot, if one does; else at the live process at `pick` (0 to 1) of the list. */
  atLeader: boolean;
  pick: number;
  /** The fault's size, 0 to 1 (a pause's length, a step's). */
  size: number;
  /**
   * The birth of the process it is aimed at, while that one lives, in place of `atLeader` and
   * `pick`: the shrinker pins each fault to the process it hit (see `pinned`), so that a fault
   * it removes does not send a later one at another process.
   */
  target?: number;
}

export interface Noise {
  /** 30% of operations answered later (a store across a network), 5% of those late by up to a lease. */
  latency: boolean;
  /** 1% of operations fail: a lock taken or an I/O error, before or after the statement ran. */
  failures: boolean;
  /** 20% of timers fire up to 3 ms late, as on a busy event loop; side channels take up to 2 ms. */
  lateness: boolean;
  /** Now and then a subscription with a priority (preempting or not) or a lock-delay. */
  options: boolean;
  /**
   * The side channels misbehave: 2% of signals, messages and proofs of a tenure's end lost, 2%
   * delivered twice, 5% late by up to a lease. (Absent in scenarios written before it: off.)
   */
  channels?: boolean;
  /**
   * 10% of timers fire up to 2 ms early by their process's clock, as Node.js's do: it times a
   * timer from the event loop's time, taken at the start of its turn, so one set late in a
   * long turn fires that much before its delay has passed. (Absent in scenarios written
   * before it: off.)
   */
  early?: boolean;
}

export interface Timing {
  renewEvery: number;
  expiresAfter: number;
  retryEvery: number;
}

export interface Scenario {
  /** Draws the noise, and the candidates' options, as the run goes. */
  seed: number;
  /** Candidate processes at any time (each killed one is restarted). */
  candidates: number;
  slots: number;
  /** Simulated ms of faults; a quiet time follows for the slots to settle. */
  duration: number;
  /**
   * The database's journal: `wal` unless told (`delete`, better-sqlite3's default, costs
   * about twice the time a run, and answers the same: the simulator runs one statement at a
   * time, so no lock is ever met but those it injects).
   */
  journal?: 'wal' | 'delete';
  /** The store: SQLite unless told (`postgres`: the real statements on PGlite, see sim/postgres/sim-server.ts). */
  store?: 'postgres';
  timing: Timing;
  noise: Noise;
  faults: PlannedFault[];
  /**
   * A run of an exhaustive search (exhaustive.ts): how many operations may answer late, the
   * horizon of its choices, and the choices it made (see chooser.ts), replayed as they were.
   */
  exhaustive?: { delays: number; horizon: number; choices: number[] };
  /** A planted bug the run was made with (plants.ts), recorded so that a replay plants it too. */
  plant?: string;
  /** Why a scenario is kept (spec/sim/corpus): what it found, and what fixed it. */
  found?: string;
}

export const defaultTiming: Timing = { renewEvery: 200, expiresAfter: 600, retryEvery: 120 };
const allNoise: Noise = { latency: true, failures: true, lateness: true, options: true, channels: true, early: true };

/** The faults of `seed`: one every 0.05 to 0.35 of a lease, eight in ten aimed at a leader. */
export function scenarioOf(
  seed: number,
  shape: {
    candidates: number;
    slots: number;
    duration: number;
    timing?: Timing;
    plant?: string;
    journal?: 'wal' | 'delete';
    store?: 'postgres';
  },
): Scenario {
  const timing = shape.timing ?? defaultTiming;
  // A stream of its own (not the noise's), so that a seed's faults do not depend on its noise.
  const random = mulberry32(seed ^ 0x5eed_fa17);
  const round = (value: number) => Math.round(value * 1_000) / 1_000;
  const faults: PlannedFault[] = [];
  for (let at = timing.expiresAfter; at < shape.duration; at += Math.round(timing.expiresAfter * (0.05 + 0.3 * random()))) {
    const kind = faultKinds[pickKind(random())];
    faults.push({ at, kind, atLeader: random() < 0.8, pick: round(random()), size: round(random()) });
  }
  return {
    seed,
    candidates: shape.candidates,
    slots: shape.slots,
    duration: shape.duration,
    timing,
    noise: allNoise,
    faults,
    ...(shape.journal === 'delete' && { journal: shape.journal }),
    ...(shape.store === 'postgres' && { store: shape.store }),
    ...(shape.plant !== undefined && { plant: shape.plant }),
  };
}

/** Kill 20%, restart 8%, close 2%, pause 20%, unsubscribe 15%, wall-step 15%, step-down 10%, handoff 10%. */
function pickKind(draw: number): number {
  const weights = [0.2, 0.08, 0.02, 0.2, 0.15, 0.15, 0.1, 0.1];
  let sum = 0;
  for (let i = 0; i < weights.length; i++) if (draw < (sum += weights[i])) return i;
  return weights.length - 1;
}

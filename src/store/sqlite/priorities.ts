import type { ClockReading, Priorities } from '../lease-store';
import { deadlineOf, Operate } from './sqlite-prepared';

/**
 * The `priorities` capability on SQLite: declarations are rows of `worker_leadership_candidate`,
 * timed on the host's monotonic clock, as leases are: a declaration that outlived its
 * candidate (killed) holds the others back for its length, and no longer. On the wall clock,
 * the declaration of a candidate whose clock had stepped forward held every lower one back
 * for the step's length, the slot free meanwhile (the simulator found a slot without a
 * leader until its run ended, after a candidate's clock stepped 216 s).
 */
export class SqlitePriorities implements Priorities {
  /** @internal Made by its store. */
  constructor(private readonly operate: Operate) {}

  declare(slot: number, holder: string, priority: number, now: ClockReading, expiresAfter: number): void {
    this.operate((statements) =>
      priority > 0
        ? statements.declare.run({ slot, holder, priority, clock: now.clock, expiresAt: deadlineOf(now, expiresAfter) })
        : statements.undeclare.run({ slot, holder }),
    );
  }

  highest(slot: number, holder: string, now: ClockReading): number {
    return Number(this.operate((statements) => statements.highest.get({ slot, holder, ...now })));
  }
}

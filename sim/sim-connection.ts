/**
 * A simulated process's database, as the world uses it (world.ts): on SQLite
 * (sqlite-connection.ts) or on PostgreSQL (postgres/postgres-connection.ts).
 */
import type { Lease } from '../src/core/leadership-event';
import type { LeaseStore } from '../src/store/lease-store';
import type { SimRecord } from './world';

export type FencedOutcome = { tenure: SimRecord['tenure'] } | { refused: string };

export interface SimConnection {
  /** The store as the process's campaigns see it. */
  readonly store: LeaseStore;
  /** Whether it can still be used (a closed SQLite connection cannot). */
  readonly open: boolean;
  /**
   * The `close` fault: `closed` if the connection is gone for good (its candidates end with
   * `DATABASE_CLOSED`, and the process is restarted), `cut` if the process connects again.
   */
  close(): 'closed' | 'cut';
  /** Its process died, or the run ended: no release, its connections closed as the kernel closes them. */
  kill(): void;
  /**
   * A leader's job's write through `fenced`, with the slot's tenure read inside the same
   * transaction by a statement of the simulator's own; `done` once it committed or was refused.
   */
  write(lease: Lease, done: (outcome: FencedOutcome) => void): void;
}

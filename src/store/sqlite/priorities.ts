import type { Database, Statement } from 'better-sqlite3';
import type { ClockReading, Priorities } from '../lease-store';
import { deadlineOf, Operate, perConnection, SqliteTable } from './sqlite-capability';

/**
 * The priorities candidates declared (the `priority` option), each a small lease of its own
 * on the host's monotonic clock that `clock` names, as a tenure's deadline is: it only
 * decides who takes a free slot first, never who leads. An earlier version wrote the wall
 * clock's ms with no `clock`: such a row is judged by the wall clock.
 */
export const candidateTable: SqliteTable = {
  name: 'worker_leadership_candidate',
  create: `CREATE TABLE IF NOT EXISTS worker_leadership_candidate (
    slot INTEGER NOT NULL,
    holder TEXT NOT NULL,
    priority INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    clock TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (slot, holder)
  )`,
  columns: { slot: 'INTEGER', holder: 'TEXT', priority: 'INTEGER', expires_at: 'INTEGER', clock: 'TEXT' },
  key: ['slot', 'holder'],
  addedLater: { clock: `TEXT NOT NULL DEFAULT ''` },
};

interface Candidate {
  slot: number;
  holder: string;
}

interface PriorityStatements {
  declare: Statement<[Candidate & { priority: number; clock: string; expiresAt: number }]>;
  undeclare: Statement<[Candidate]>;
  /** The highest priority another candidate declared that still stands at the reading; 0 for none. */
  highest: Statement<[Candidate & ClockReading], number>;
}

/** The statements of priorities on a connection, prepared at its first declaration. */
export const priorityStatements = perConnection((db: Database): PriorityStatements => ({
  declare: db.prepare(`INSERT INTO worker_leadership_candidate (slot, holder, priority, clock, expires_at)
      VALUES (@slot, @holder, @priority, @clock, @expiresAt)
      ON CONFLICT (slot, holder) DO UPDATE SET priority = excluded.priority, clock = excluded.clock, expires_at = excluded.expires_at`),
  undeclare: db.prepare(`DELETE FROM worker_leadership_candidate WHERE slot = @slot AND holder = @holder`),
  highest: db
    .prepare<[Candidate & ClockReading], number>(
      `SELECT coalesce(max(priority), 0) FROM worker_leadership_candidate WHERE slot = @slot AND holder <> @holder
          AND CASE WHEN clock = @clock THEN expires_at >= @now ELSE expires_at >= @wall END`,
    )
    .pluck(),
}));

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
  constructor(private readonly operate: Operate<PriorityStatements>) {}

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

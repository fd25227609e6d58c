/*
 * What the home of each capability of the SQLite store (priorities.ts, standby.ts, ...) is
 * made of: its tables, its statements on a connection, and the store's way to run them.
 */
import type { Database } from 'better-sqlite3';
import type { ClockReading } from '../lease-store';

/** A table of the schema, declared where its statements are: how it is made, and the shape they rely on. */
export interface SqliteTable {
  readonly name: string;
  /** Its `CREATE TABLE IF NOT EXISTS`, run with the rest of the schema when any of it is missing. */
  readonly create: string;
  /** The affinity of each column the statements use, checked at a candidate's first operation. */
  readonly columns: Readonly<Record<string, 'INTEGER' | 'TEXT'>>;
  readonly key: readonly string[];
  /** Columns an earlier version made the table without, each with its definition: added once, under the write lock. */
  readonly addedLater?: Readonly<Record<string, string>>;
}

/** How the store runs an operation on `statements`: on the checked connection, with the schema made (see `SqliteLeaseStore.operate`). */
export type Operate<S> = <T>(operation: (statements: S) => T) => T;

/**
 * A capability's statements on each connection, prepared at their first use there and kept:
 * every store made on the connection shares them, as it shares the store's own (see `Prepared`).
 */
export function perConnection<S>(prepare: (db: Database) => S): (db: Database) => S {
  const prepared = new WeakMap<Database, S>();
  return (db) => {
    let statements = prepared.get(db);
    if (statements === undefined) prepared.set(db, (statements = prepare(db)));
    return statements;
  };
}

/**
 * The end of a lease written at `now` on the reading's clock, rounded up: a follower may
 * take the slot only once its own reading is past it, and so past the holder's belief,
 * which counts from when it sent the write, before this reading.
 */
export function deadlineOf(now: ClockReading, expiresAfter: number): number {
  return Math.ceil(now.now + expiresAfter);
}

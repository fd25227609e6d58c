import type { Database, Statement } from 'better-sqlite3';
import type { ClockReading, StandbyPlaces } from '../lease-store';
import { Operate, perConnection, SqliteTable } from './sqlite-capability';

/** The standby places of each slot: the few followers that watch for releases, each place a small lease of its own. */
export const standbyTable: SqliteTable = {
  name: 'worker_leadership_standby',
  create: `CREATE TABLE IF NOT EXISTS worker_leadership_standby (
    slot INTEGER NOT NULL,
    place INTEGER NOT NULL,
    holder TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (slot, place)
  )`,
  columns: { slot: 'INTEGER', place: 'INTEGER', holder: 'TEXT', expires_at: 'INTEGER' },
  key: ['slot', 'place'],
};

interface StandbyPlace {
  place: number;
  holder: string;
  expiresAt: number;
}

interface StandbyStatements {
  read: Statement<[number], StandbyPlace>;
  /** Takes a place that is free, expired at `now`, or the holder's own. */
  claim: Statement<[{ slot: number; place: number; holder: string; now: number; expiresAt: number }]>;
  leave: Statement<[{ slot: number; holder: string }]>;
}

/** The statements of standby places on a connection, prepared at its first claim. */
export const standbyStatements = perConnection((db: Database): StandbyStatements => ({
  read: db.prepare(`SELECT place, holder, expires_at AS expiresAt FROM worker_leadership_standby WHERE slot = ?`),
  claim: db.prepare(`INSERT INTO worker_leadership_standby (slot, place, holder, expires_at)
      VALUES (@slot, @place, @holder, @expiresAt)
      ON CONFLICT (slot, place) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE expires_at < @now OR holder = @holder`),
  leave: db.prepare(`DELETE FROM worker_leadership_standby WHERE slot = @slot AND holder = @holder`),
}));

/**
 * The `standby` capability on SQLite: places are rows of `worker_leadership_standby`, timed by
 * the wall clock: they only decide who is woken first, never who leads, and a step costs at
 * most a place held for its length by a follower gone.
 */
export class SqliteStandby implements StandbyPlaces {
  /** @internal Made by its store. */
  constructor(private readonly operate: Operate<StandbyStatements>) {}

  standBy(slot: number, holder: string, { wall: now }: ClockReading, expiresAfter: number, places: number): boolean {
    const expiresAt = now + expiresAfter;
    return this.operate((statements) => {
      const taken = statements.read.all(slot);
      const own = taken.find((place) => place.holder === holder);
      const live = new Set(taken.filter((place) => place.expiresAt >= now).map((place) => place.place));
      const place = own?.place ?? Array.from({ length: places }, (_, index) => index).find((index) => !live.has(index));
      if (place === undefined) return false;
      return statements.claim.run({ slot, place, holder, now, expiresAt }).changes === 1;
    });
  }

  leaveStandby(slot: number, holder: string): void {
    this.operate((statements) => statements.leave.run({ slot, holder }));
  }
}

import type { Database } from 'better-sqlite3';

/** What the original worker does, one method per statement group (shared/seed/leader.rs.txt). */
export interface OriginalStatements {
  /** try_acquire: INSERT OR IGNORE, then the take-over UPDATE; true if it now leads. */
  tryAcquire(now: number): boolean;
  /** renew: UPDATE expires_at WHERE holder = self; true if it still leads. */
  renew(now: number): boolean;
  /** release: DELETE WHERE holder = self (on every slot: the original forgot the slot). */
  release(): void;
}

/**
 * The original Rust worker's three statements, unchanged, on slot 0. Time is an argument
 * so that callers choose it (the original reads the system clock).
 */
export function originalStatements(db: Database, holder: string, expiresAfter: number): OriginalStatements {
  const insert = db.prepare('INSERT OR IGNORE INTO worker_leadership (slot, holder, expires_at) VALUES (0, ?, ?)');
  const take = db.prepare(`UPDATE worker_leadership
             SET holder = ?, expires_at = ?
             WHERE slot = 0 AND (expires_at < ? OR holder = ?)`);
  const renew = db.prepare('UPDATE worker_leadership SET expires_at = ? WHERE slot = 0 AND holder = ?');
  const release = db.prepare('DELETE FROM worker_leadership WHERE holder = ?');
  return {
    tryAcquire(now) {
      const expires = now + expiresAfter;
      if (insert.run(holder, expires).changes === 1) return true;
      return take.run(holder, expires, now, holder).changes === 1;
    },
    renew: (now) => renew.run(now + expiresAfter, holder).changes === 1,
    release: () => void release.run(holder),
  };
}

/** The original worker's table, which it expects to exist (its SCHEMA_V1). */
export const originalTable = `CREATE TABLE IF NOT EXISTS worker_leadership (
  slot INTEGER PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL)`;

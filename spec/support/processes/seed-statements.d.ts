import type { Database } from 'better-sqlite3';

export interface SeedStatements {
  /** try_acquire: INSERT OR IGNORE, then the take-over UPDATE; true if it now leads. */
  tryAcquire(now: number): boolean;
  /** renew: UPDATE expires_at WHERE holder = self. */
  renew(now: number): boolean;
  /** release: DELETE WHERE holder = self (every slot). */
  release(): void;
}

export function seedStatements(db: Database, holder: string, expiresAfter: number): SeedStatements;

import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JournalMode } from '../../test-kit/worker-database';

/** A fresh database file in its own folder, opened in one journal mode. */
export interface TemporaryDatabase {
  readonly file: string;
  readonly journal: JournalMode;
  /** Opens another connection to the file (closed by `remove`). */
  open(options?: Database.Options): Database.Database;
  /** Closes every connection opened here and deletes the folder. */
  remove(): void;
}

/**
 * `journal` as README advises (`wal`, with synchronous NORMAL) by default, or any other
 * journal mode SQLite offers for shared files, otherwise with better-sqlite3's defaults.
 */
export function temporaryDatabase(journal: JournalMode = 'wal'): TemporaryDatabase {
  const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-'));
  const file = join(folder, 'leader.db');
  const connections: Database.Database[] = [];
  const open = (options: Database.Options = { timeout: 0 }): Database.Database => {
    // Setting the mode may wait for other connections' locks for a moment; then the timeout asked for.
    const db = new Database(file, { ...options, timeout: 5_000 });
    if (!options.readonly) {
      db.pragma(`journal_mode = ${journal}`);
      if (journal === 'wal') db.pragma('synchronous = NORMAL');
    }
    db.pragma(`busy_timeout = ${options.timeout ?? 5_000}`);
    connections.push(db);
    return db;
  };
  const remove = (): void => {
    for (const db of connections) if (db.open) db.close();
    rmSync(folder, { recursive: true, force: true });
  };
  return { file, journal, open, remove };
}

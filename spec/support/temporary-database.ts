import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh database file in WAL mode, as the README advises, in its own folder. */
export interface TemporaryDatabase {
  readonly file: string;
  /** Opens another connection to the file (closed by `remove`). */
  open(options?: Database.Options): Database.Database;
  /** Closes every connection opened here and deletes the folder. */
  remove(): void;
}

export function temporaryDatabase(): TemporaryDatabase {
  const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-'));
  const file = join(folder, 'leader.db');
  const connections: Database.Database[] = [];
  const open = (options: Database.Options = { timeout: 0 }): Database.Database => {
    const db = new Database(file, options);
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    connections.push(db);
    return db;
  };
  const remove = (): void => {
    for (const db of connections) if (db.open) db.close();
    rmSync(folder, { recursive: true, force: true });
  };
  return { file, open, remove };
}

import type { Database, Statement } from 'better-sqlite3';
import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { LeadershipError } from '../../core/leadership-error';
import { toLeadershipError } from './sqlite-error';

/** The identity (device, inode) of the file at `path`, or `undefined` if there is none. */
function fileIdentity(path: string): { dev: number; ino: number } | undefined {
  try {
    const { dev, ino } = statSync(path);
    return { dev, ino };
  } catch {
    return undefined;
  }
}

/** One path for one file, however it was opened (relative, through a link), so that every process signals through the same file. */
export function canonicalPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * A better-sqlite3 connection as the library's own statements use it: each operation first
 * checks the connection and its file (settings that would stop the election for every other
 * process or damage the file, a file deleted or replaced under it), and runs without the
 * busy wait. The user's statements on the same connection are left as they are.
 */
export class SqliteConnection {
  /** The file this connection opened, as the file system knew it then. */
  private file: { dev: number; ino: number } | undefined;
  /** The connection's settings that `checkConnection` asks for, prepared once. */
  private settings: { lockingMode: Statement<[], string>; journalMode: Statement<[], string> } | undefined;
  private busyPragmas: { read: Statement<[], number>; set: (ms: number) => Statement } | undefined;

  constructor(private readonly db: Database) {}

  /** Runs `operation` once the connection and its file passed their checks, without the busy wait (see `withoutBusyWait`). */
  run<T>(operation: () => T): T {
    // Asked first: bun:sqlite runs the statements prepared before its close() (the store's own) as if still open.
    if (!this.db.open) throw new LeadershipError('DATABASE_CLOSED', 'The database connection is closed');
    return this.withoutBusyWait(() => {
      if (this.file === undefined && !this.db.memory) this.file = fileIdentity(this.db.name);
      this.checkConnection();
      this.checkFile();
      return operation();
    });
  }

  /**
   * Runs one of the library's own operations with the connection's busy timeout at 0, then
   * puts the user's back, whatever happens: better-sqlite3 is synchronous, and SQLite's busy
   * wait (sleeps of 1 to 100 ms, whatever frees meanwhile) would stop the host's event loop,
   * its timers and the lease's own deadline with it, for up to the busy timeout. A lock met
   * is `LockTaken` at once, tried again on the campaign's timers. The user's statements, on
   * the same connection, keep the timeout they set (a microsecond's worth of pragmas).
   */
  private withoutBusyWait<T>(operation: () => T): T {
    let pragmas: ReturnType<SqliteConnection['busyTimeout']> | undefined;
    let timeout = 0;
    try {
      pragmas = this.busyTimeout();
      timeout = pragmas.read.get() as number;
      if (timeout !== 0) pragmas.set(0).get();
      return operation();
    } catch (error) {
      throw toLeadershipError(error, this.db, { waited: false });
    } finally {
      // Asked only when putting the timeout back fails: a connection closed by the operation has nothing to put back.
      if (timeout !== 0) {
        try {
          pragmas?.set(timeout).get();
        } catch (error) {
          // eslint-disable-next-line no-unsafe-finally -- as before this change: failing to put the timeout back on an open connection must be seen
          if (this.db.open) throw error; // a closed connection has nothing to put back
        }
      }
    }
  }

  /** The pragmas that read and set the busy timeout, prepared once (one statement per value set). */
  private busyTimeout(): { read: Statement<[], number>; set: (ms: number) => Statement } {
    if (this.busyPragmas) return this.busyPragmas;
    const read = this.db.prepare<[], number>('PRAGMA busy_timeout').pluck();
    const setters = new Map<number, Statement>();
    const set = (ms: number): Statement => {
      let statement = setters.get(ms);
      if (statement === undefined) setters.set(ms, (statement = this.db.prepare(`PRAGMA busy_timeout = ${Math.trunc(ms)}`)));
      return statement;
    };
    return (this.busyPragmas = { read, set });
  }

  /**
   * Refuses, before it touches the file, a connection that would stop the election for every
   * other process, or leave the file damaged when this one is killed. Both settings belong
   * to the connection and can change at any time, so every operation asks (a microsecond).
   * A database in memory has no other process to share it with: anything goes.
   */
  private checkConnection(): void {
    if (this.db.memory) return;
    this.settings ??= {
      lockingMode: this.db.prepare<[], string>('PRAGMA locking_mode').pluck(),
      journalMode: this.db.prepare<[], string>('PRAGMA journal_mode').pluck(),
    };
    if (this.settings.lockingMode.get() === 'exclusive') {
      throw new LeadershipError(
        'EXCLUSIVE_LOCKING',
        'The connection is in locking_mode = EXCLUSIVE: once it has read the file it keeps it locked, and no ' +
          'other process can take part in the election; use the default (NORMAL) on this connection',
      );
    }
    const journalMode = this.settings.journalMode.get();
    if (journalMode === 'memory' || journalMode === 'off') {
      throw new LeadershipError(
        'UNSAFE_JOURNAL',
        `The connection's journal_mode is ${journalMode.toUpperCase()}: a process killed while it commits can leave ` +
          'the file damaged, and the election with it; use DELETE (the default), TRUNCATE, PERSIST or WAL on this connection',
      );
    }
  }

  /**
   * A connection keeps using its file after the file is deleted or replaced (WAL mode does not
   * notice), while every process that opens the path from then on gets another database: two
   * elections, two leaders. So each operation first checks that the path still leads to the
   * file this connection opened.
   */
  private checkFile(): void {
    if (this.file === undefined) return;
    const now = fileIdentity(this.db.name);
    if (now?.dev !== this.file.dev || now.ino !== this.file.ino) {
      throw new LeadershipError(
        'DATABASE_MOVED',
        `The file ${this.db.name} was deleted or replaced since this connection opened it; ` +
          'candidates that open it now use another database',
      );
    }
  }
}

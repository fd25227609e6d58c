import { closeSync, constants, fchmodSync, fchownSync, FSWatcher, openSync, readFileSync, watch, writeSync } from 'node:fs';

import { accessOf, grant } from './sidecar-access';

const oneByte = Buffer.from('\n');

/**
 * The length of every word a signal says (see `signal`), padded with spaces: one write of
 * one length, never a truncation, which a process that another delayed between its write
 * and its truncation would make after a later word, extending that one with zeros. The
 * longest word (two holders of 256 characters, 4 bytes each at most) fits.
 */
const wordLength = 4096;

/**
 * The file beside a database (`<database>-leadership`) through which releases and elections
 * are signalled to standbys and observers in other processes.
 *
 * It is a file of its own because nothing but a signal may touch it. SQLite writes its own
 * files on every commit (the database itself outside WAL mode, the WAL in WAL mode): a
 * watch on any of them wakes followers on every renewal, on every standby's claim of its
 * place (which wakes the others, who claim theirs: a loop) and on every commit of the
 * application's own tables. Only the store writes this one, and only after a release or an
 * election has committed, so whoever it wakes reads the new state.
 *
 * It is made as SQLite makes a journal: with the database file's permissions, and by root
 * for the database file's owner, so that every process that may write the database may
 * signal through it. Everything here is best effort: a follower that misses a signal has
 * its timer.
 */
export class SignalFile {
  readonly path: string;

  /** `suffix` names the file: `<database>-<suffix>` (the handoffs' messages have a file of their own). */
  constructor(
    private readonly database: string,
    suffix = 'leadership',
  ) {
    this.path = `${database}-${suffix}`;
  }

  /** Creates the file if it is missing. */
  create(): void {
    try {
      closeSync(this.open());
    } catch {
      // Not allowed to: watchers wait for a candidate that may, and poll meanwhile.
    }
  }

  /**
   * Wakes every watcher, in this process and in others, creating the file if it is missing;
   * with `content`, the file then says it (see `read`), padded with spaces to one length:
   * a watcher reads it once the write that woke it is done, and the last word written wins.
   */
  signal(content?: string): void {
    const bytes = content === undefined ? oneByte : Buffer.alloc(wordLength, ' ');
    if (content !== undefined && bytes.write(content) < Buffer.byteLength(content)) return; // never: see wordLength
    try {
      const fd = this.open();
      try {
        writeSync(fd, bytes, 0, bytes.length, 0);
      } finally {
        closeSync(fd);
      }
    } catch {
      // Not allowed to, or the folder is gone: followers find out at their timers.
    }
  }

  /** What the file says now, or `undefined` if it cannot be read. */
  read(): string | undefined {
    try {
      return readFileSync(this.path, 'utf8');
    } catch {
      return undefined;
    }
  }

  /**
   * Calls `onSignal` at each signal, and `onGone` (once, with the watch closed) if the file is
   * deleted or renamed, or the watch fails. `undefined` when the file cannot be watched
   * (missing, or no file watches here).
   */
  watch(onSignal: () => void, onGone: () => void): FSWatcher | undefined {
    try {
      const watcher = watch(this.path, { persistent: false }, (event) => {
        if (event === 'rename') {
          watcher.close();
          return onGone();
        }
        onSignal();
      });
      watcher.on('error', () => {
        watcher.close();
        onGone();
      });
      return watcher;
    } catch {
      return undefined;
    }
  }

  private open(): number {
    try {
      return openSync(this.path, constants.O_WRONLY);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const access = accessOf(this.database);
    try {
      const fd = openSync(this.path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, access.mode);
      try {
        grant(
          access,
          (mode) => fchmodSync(fd, mode),
          (uid, gid) => fchownSync(fd, uid, gid),
        );
      } catch {
        // A file system without owners or modes: the file works as it is for this process.
      }
      return fd;
    } catch (error) {
      // Another process made it first.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return openSync(this.path, constants.O_WRONLY);
      throw error;
    }
  }
}

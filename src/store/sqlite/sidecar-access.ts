import { statSync } from 'node:fs';

/**
 * What a file beside the database (the signal file, a tenure's endpoint socket) takes from
 * the database file, so that every process that can open the database can use it too: its
 * read and write bits, and its owner.
 */
export interface SidecarAccess {
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

/** The database file's access, as its sidecar files take it. */
export function accessOf(database: string): SidecarAccess {
  const { mode, uid, gid } = statSync(database);
  return { mode: mode & 0o666, uid, gid };
}

/**
 * Gives a sidecar file `access`: its mode (what the umask took away), and its owner where
 * this process may change owners (root; otherwise the file is this process's, like the
 * database it could open).
 */
export function grant(access: SidecarAccess, setMode: (mode: number) => void, setOwner: (uid: number, gid: number) => void): void {
  setMode(access.mode);
  if (process.getuid?.() === 0) setOwner(access.uid, access.gid);
}

import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's `faketime` package puts libfaketime (its multi-threaded build, which Node needs). */
const libraryPaths = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/faketime/libfaketimeMT.so.1',
];

/** libfaketime's path, or `undefined` where it is not installed. */
function findLibfaketime(): string | undefined {
  return libraryPaths.find((path) => existsSync(path));
}

/** Where libfaketime keeps the shared memory and semaphore that each process on it makes. */
const sharedMemory = '/dev/shm';
const libfaketimeObject = /^(?:faketime_shm_|sem\.faketime_sem_)(\d+)$/;

/** Whether process `pid` is there (a zombie included: its parent may yet reap it). */
function exists(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/**
 * Removes what libfaketime left of processes that are gone. Each process it runs in makes a
 * shared memory object and a semaphore named after its pid, and removes them only when it
 * exits by itself: a process killed outright (SIGKILL, as the specs and the chaos harness
 * kill) leaves them, and a later process on the clock that gets the same pid (pids wrap at
 * 32,768 here) fails to start ("sem_open failed"), as a faketime'd `initdb` did.
 */
function removeStaleLibfaketimeObjects(): void {
  let names: string[];
  try {
    names = readdirSync(sharedMemory);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = libfaketimeObject.exec(name)?.[1];
    if (pid !== undefined && !exists(Number(pid))) rmSync(join(sharedMemory, name), { force: true });
  }
}

/**
 * A wall clock that steps, for every process started with its `environment`: libfaketime
 * reads the offset from one file at each call (`FAKETIME_NO_CACHE`), so that every process
 * sees a step at the same moment, as all processes of a host see NTP step the clock. The
 * monotonic clock stays real (`FAKETIME_DONT_FAKE_MONOTONIC`), as it does under a real step.
 */
export class SteppedClock {
  private readonly folder = mkdtempSync(join(tmpdir(), 'observe-leadership-clock-'));
  readonly file = join(this.folder, 'offset');
  /** Seconds the wall clock is off now. */
  private offset = 0;

  constructor(private readonly library = findLibfaketime()) {
    if (library === undefined) throw new Error('libfaketime is not installed (Debian: apt-get install faketime)');
    chmodSync(this.folder, 0o755); // a server run as another user (PostgreSQL's) reads it too
    this.write();
  }

  /** The variables that put a process on this clock (asked for as each is started: what dead ones left goes first). */
  get environment(): Record<string, string> {
    removeStaleLibfaketimeObjects();
    return {
      LD_PRELOAD: this.library as string,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }

  /** A command prefix that runs a program on this clock (for `launcher` options). */
  get launcher(): string[] {
    return ['env', ...Object.entries(this.environment).map(([name, value]) => `${name}=${value}`)];
  }

  /** Moves the wall clock by `seconds` (back if negative), for every process on it at once. */
  step(seconds: number): void {
    this.offset += seconds;
    this.write();
  }

  /** Back to the real time. */
  reset(): void {
    this.offset = 0;
    this.write();
  }

  remove(): void {
    rmSync(this.folder, { recursive: true, force: true });
    removeStaleLibfaketimeObjects();
  }

  private write(): void {
    writeFileSync(this.file, `${this.offset >= 0 ? '+' : ''}${this.offset}\n`, { mode: 0o644 });
  }
}

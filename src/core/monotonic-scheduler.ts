import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { asyncScheduler, SchedulerLike } from 'rxjs';
import { ulid } from 'ulid';

/**
 * One reading of the clocks that time leases, taken when an operation is sent. Stores whose
 * server keeps the time (PostgreSQL) ignore it.
 */
export interface ClockReading {
  /**
   * Which clock `now` is on. Readings of clocks with the same name can be compared, in any
   * process: the default's is the host's monotonic clock, named by its boot.
   */
  readonly clock: string;
  /** Ms on that clock, which never jumps. */
  readonly now: number;
  /** Unix ms by the wall clock, which may step: what the original worker writes and compares. */
  readonly wall: number;
}

/**
 * This process's clock that never jumps, in ms since it started counted from the wall clock
 * of that moment (so that its readings read as Unix ms): `monotonicScheduler`'s `now()`.
 */
export const processNow = (): number => performance.timeOrigin + performance.now();

/**
 * `asyncScheduler`'s timers on a clock that never jumps: milliseconds since the process
 * started, counted from the wall clock of that moment (so that the times in events read as
 * Unix ms). Timers already run on a monotonic clock; this makes `now()` agree with them, so
 * that a wall clock stepped by NTP, a resumed VM or `date -s` can neither stretch nor cut
 * a candidate's belief. It is the default of every candidate and observer.
 */
export const monotonicScheduler: SchedulerLike = {
  now: processNow,
  schedule: asyncScheduler.schedule.bind(asyncScheduler) as SchedulerLike['schedule'],
};

/**
 * CLOCK_MONOTONIC of this host, which every process of the host shares, named by the boot it
 * counts from: readings with the same name can be compared across processes, and a reading
 * written before a reboot is never mistaken for one of this boot. A process in a time
 * namespace of its own (a container made with CLONE_NEWTIME) sees that clock shifted by its
 * namespace's offset, which /proc/self/timens_offsets tells and which is taken off. Where
 * the boot cannot be named (no /proc), or the runtime cannot read that clock, the clock is
 * this process's own: others judge its leases by the wall clock, as the original worker does.
 */
const hostClock = (() => {
  const bootId = readText('/proc/sys/kernel/random/boot_id')?.trim();
  const offset = /^monotonic\s+(-?\d+)\s+(-?\d+)/m.exec(readText('/proc/self/timens_offsets') ?? '');
  const offsetMs = offset === null ? 0 : Number(offset[1]) * 1_000 + Number(offset[2]) / 1e6;
  const monotonic = hostMonotonic();
  if (bootId === undefined || monotonic === undefined) {
    return { name: `process ${ulid()}`, now: processNow };
  }
  return { name: `monotonic ${bootId}`, now: () => monotonic() - offsetMs };
})();

/**
 * A reader of the host's CLOCK_MONOTONIC in ms, or `undefined` if this runtime has none.
 * Node.js's `process.hrtime` is that clock (libuv's `uv_hrtime`). Bun's counts from the
 * process's start instead, which another process cannot compare with its own: two
 * processes that took one another's readings for the host's would misjudge every lease.
 * There the clock is read from the C library through `bun:ffi` (a tenth of a microsecond).
 */
function hostMonotonic(): (() => number) | undefined {
  if (!('Bun' in globalThis)) return () => Number(process.hrtime.bigint()) / 1e6;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- Bun's own module, only under Bun
    const { dlopen, FFIType, ptr } = require('bun:ffi') as BunFfi;
    const libc = dlopen(process.platform === 'linux' ? 'libc.so.6' : 'libc.dylib', {
      clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    });
    const time = new BigInt64Array(2); // struct timespec: seconds, nanoseconds
    const at = ptr(time);
    const clockMonotonic = process.platform === 'linux' ? 1 : 6;
    const read = () => {
      if (libc.symbols.clock_gettime(clockMonotonic, at) !== 0) throw new Error('clock_gettime failed');
      return Number(time[0]) * 1_000 + Number(time[1]) / 1e6;
    };
    read();
    return read;
  } catch {
    return undefined;
  }
}

/** What `hostMonotonic` uses of `bun:ffi`. */
interface BunFfi {
  FFIType: { i32: unknown; ptr: unknown };
  ptr(view: ArrayBufferView): unknown;
  dlopen(
    library: string,
    symbols: Record<string, { args: unknown[]; returns: unknown }>,
  ): { symbols: { clock_gettime(clock: number, at: unknown): number } };
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Other schedulers, each a clock of its own (a test's virtual time), named once. */
const clockNames = new WeakMap<SchedulerLike, string>();

/**
 * The clocks a lease is timed by, read now through `scheduler`: what a store's operations
 * take. With the default scheduler: the host's monotonic clock (every process of the host
 * shares it, named by its boot), and the wall clock for what the original worker reads. With
 * any other (virtual time in tests, a user's own), its `now()` serves as both, and only
 * readers of that same scheduler can compare what it wrote.
 *
 * @example
 * ```ts
 * import { readClocks } from 'observe-leadership';
 *
 * const { clock, now } = readClocks(); // e.g. 'monotonic 6f1c…', 123456789.123
 * ```
 */
export function readClocks(scheduler: SchedulerLike = monotonicScheduler): ClockReading {
  if (scheduler === monotonicScheduler) return { clock: hostClock.name, now: hostClock.now(), wall: Date.now() };
  if (isClocked(scheduler)) return scheduler.readClocks();
  let clock = clockNames.get(scheduler);
  if (clock === undefined) clockNames.set(scheduler, (clock = `scheduler ${ulid()}`));
  const now = scheduler.now();
  return { clock, now, wall: now };
}

/**
 * @internal A scheduler that reads clocks of its own, as the simulator's processes do: `now()`
 * on a host's monotonic clock that its other processes share (named in `readClocks().clock`),
 * and a wall clock of the process's own, which may step. Any other scheduler's `now()`
 * serves as both, under a name of its own (see {@link readClocks}).
 */
export interface ClockedScheduler extends SchedulerLike {
  /** Both clocks, read at once; `now` is `now()`. */
  readClocks(): ClockReading;
}

function isClocked(scheduler: SchedulerLike): scheduler is ClockedScheduler {
  return typeof (scheduler as Partial<ClockedScheduler>).readClocks === 'function';
}

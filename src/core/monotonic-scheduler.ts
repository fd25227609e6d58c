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
 * `asyncScheduler`'s timers on a clock that never jumps: milliseconds since the process
 * started, counted from the wall clock of that moment (so that the times in events read as
 * Unix ms). Timers already run on a monotonic clock; this makes `now()` agree with them, so
 * that a wall clock stepped by NTP, a resumed VM or `date -s` can neither stretch nor cut
 * a candidate's belief. It is the default of every candidate and observer.
 */
export const monotonicScheduler: SchedulerLike = {
  now: () => performance.timeOrigin + performance.now(),
  schedule: asyncScheduler.schedule.bind(asyncScheduler) as SchedulerLike['schedule'],
};

/**
 * CLOCK_MONOTONIC of this host (what `process.hrtime` reads), which every process of the host
 * shares, named by the boot it counts from: readings with the same name can be compared
 * across processes, and a reading written before a reboot is never mistaken for one of this
 * boot. A process in a time namespace of its own (a container made with CLONE_NEWTIME) sees
 * that clock shifted by its namespace's offset, which /proc/self/timens_offsets tells and
 * which is taken off. Where the boot cannot be named (no /proc), the clock is this
 * process's own: others judge its leases by the wall clock, as the original worker does.
 */
const hostClock = (() => {
  const bootId = readText('/proc/sys/kernel/random/boot_id')?.trim();
  const offset = /^monotonic\s+(-?\d+)\s+(-?\d+)/m.exec(readText('/proc/self/timens_offsets') ?? '');
  const offsetMs = offset === null ? 0 : Number(offset[1]) * 1_000 + Number(offset[2]) / 1e6;
  return {
    name: bootId ? `monotonic ${bootId}` : `process ${ulid()}`,
    now: () => Number(process.hrtime.bigint()) / 1e6 - offsetMs,
  };
})();

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
 * The clocks a lease is timed by, read now through `scheduler`. With the default scheduler:
 * the host's monotonic clock, and the wall clock for what the original worker reads. With
 * any other (virtual time in tests, a user's own), its `now()` serves as both, and only
 * readers of that same scheduler can compare what it wrote.
 */
export function readClocks(scheduler: SchedulerLike): ClockReading {
  if (scheduler === monotonicScheduler) return { clock: hostClock.name, now: hostClock.now(), wall: Date.now() };
  let clock = clockNames.get(scheduler);
  if (clock === undefined) clockNames.set(scheduler, (clock = `scheduler ${ulid()}`));
  const now = scheduler.now();
  return { clock, now, wall: now };
}

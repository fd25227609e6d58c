import { asyncScheduler, SchedulerLike } from 'rxjs';
import { performance } from 'node:perf_hooks';

/**
 * `asyncScheduler`'s timers on a clock that never jumps: milliseconds since the process
 * started, counted from the wall clock of that moment. A candidate whose leases the database
 * server times compares only its own instants with each other (when it sent a write, when its
 * belief ends), so a wall clock set back by NTP or by hand must not stretch that belief.
 */
export const monotonicScheduler: SchedulerLike = {
  now: () => performance.timeOrigin + performance.now(),
  schedule: asyncScheduler.schedule.bind(asyncScheduler) as SchedulerLike['schedule'],
};

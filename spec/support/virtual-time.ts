import { SchedulerLike } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';

/** A TestScheduler whose assertions are Jest's, so that asymmetric matchers work in values. */
export function virtualTime(): TestScheduler {
  return new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
}

/**
 * A clock that runs with `scheduler` but can jump ahead, as a paused process sees time when
 * it resumes: timers fire in virtual order, while `now()` has moved on by `pause`.
 */
export function pausableClock(scheduler: TestScheduler): SchedulerLike & { pause(ms: number): void } {
  let paused = 0;
  return {
    now: () => scheduler.now() + paused,
    schedule: scheduler.schedule.bind(scheduler) as SchedulerLike['schedule'],
    pause: (ms: number) => {
      paused += ms;
    },
  };
}

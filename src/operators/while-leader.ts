import { EMPTY, filter, from, ObservableInput, OperatorFunction, switchMap } from 'rxjs';
import { ElectedEvent, LeadershipEvent, LostEvent } from '../leadership-event';

/**
 * Runs `project(lease)` for each tenure: subscribes to it on `elected`, unsubscribes it on
 * `lost` and on teardown. `renewed` and `error` events leave it running.
 *
 * @example
 * ```ts
 * observeLeadership(db).pipe(
 *   whileLeader((lease) => interval(1_000).pipe(map(() => dispatchJobs(lease)))),
 *   takeUntil(fromEvent(process, 'SIGTERM')), // ends the subscription: releases the lease
 * ).subscribe();
 * ```
 */
export function whileLeader<R>(project: (lease: ElectedEvent) => ObservableInput<R>): OperatorFunction<LeadershipEvent, R> {
  return (events) =>
    events.pipe(
      filter((event): event is ElectedEvent | LostEvent => event.type === 'elected' || event.type === 'lost'),
      switchMap((event) => (event.type === 'elected' ? from(project(event)) : EMPTY)),
    );
}

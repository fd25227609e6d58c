import { EMPTY, filter, from, ObservableInput, OperatorFunction, switchMap, takeWhile } from 'rxjs';
import { argumentError } from '../../core/argument-check';
import { beliefOf } from '../candidate-registry';
import { ElectedEvent, LeadershipEvent, LostEvent } from '../../core/leadership-event';

/**
 * Runs `project(lease)` for each tenure: subscribes to it on `elected`, unsubscribes it on
 * `lost` and on teardown. `renewed` and `error` events leave it running.
 *
 * Before it passes a value of `project` on, it checks that the tenure still stands at that
 * moment ({@link holdsLease}): a process resumed from a pause runs its due timers in the
 * order they were set, so a job's tick may come before the timer that ends the tenure. Such
 * a tick is dropped, the tenure ends there (`lost`), and nothing of it reaches what follows
 * `whileLeader`. Do side effects after `whileLeader`, or check `holdsLease` right before
 * them: a side effect inside `project`, before its value comes out, is not covered.
 *
 * @example
 * ```ts
 * observeLeadership(db).pipe(
 *   whileLeader((lease) => interval(1_000).pipe(map(() => lease))),
 *   takeUntil(fromEvent(process, 'SIGTERM')), // ends the subscription: releases the lease
 * ).subscribe((lease) => dispatchJobs(lease));
 * ```
 */
export function whileLeader<R>(project: (lease: ElectedEvent) => ObservableInput<R>): OperatorFunction<LeadershipEvent, R> {
  if (typeof project !== 'function') throw argumentError(TypeError, 'project', 'a function of the lease', project);
  return (events) =>
    events.pipe(
      filter((event): event is ElectedEvent | LostEvent => event.type === 'elected' || event.type === 'lost'),
      switchMap((event) =>
        // Events that no candidate of this process emitted (a test's, say) cannot be checked.
        event.type === 'elected' ? from(project(event)).pipe(takeWhile(() => beliefOf(event) !== false)) : EMPTY,
      ),
    );
}

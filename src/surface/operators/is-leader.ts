import { distinctUntilChanged, filter, map, OperatorFunction, startWith } from 'rxjs';
import { LeadershipEvent } from '../../core/leadership-event';

/**
 * Whether this candidate leads, as a boolean stream without repeats: `false` at once on
 * subscription, `true` on `elected`, `false` on `lost`. `error` events change nothing: a
 * leader leads until its tenure ends.
 *
 * @example
 * ```ts
 * observeLeadership(db).pipe(isLeader()).subscribe((leading) => metrics.set('leader', leading ? 1 : 0));
 * ```
 */
export function isLeader(): OperatorFunction<LeadershipEvent, boolean> {
  return (events) =>
    events.pipe(
      filter((event) => event.type !== 'error'),
      map((event) => event.type !== 'lost'),
      startWith(false),
      distinctUntilChanged(),
    );
}

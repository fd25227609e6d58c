import { beliefOf } from './candidate-registry';
import { expectLease } from './leadership-config';
import { Lease } from '../core/leadership-event';

/**
 * Whether this process's candidate still believes, at this very moment, that it holds
 * `lease` (an `elected` or `renewed` event will do): a synchronous check of its own clock,
 * no database, for right before a side effect that `fenced` cannot cover (an e-mail, an
 * HTTP call). `false` once the tenure ended, and for a lease of no live candidate of this
 * process. An event the library emitted is answered by its own election; a copy, or a lease
 * written by hand, only while one election of this process campaigns for that slot as that
 * holder (with two, on two databases say, it throws `RangeError`: pass the event itself).
 *
 * It is more than reading the last event: a process resumed from a pause (a stop, a long
 * garbage collection, a VM frozen) runs the timers that fell due in the order they were set,
 * so a job's timer may run before the one that would end the tenure. This check looks at the
 * clock itself, and a lease found run out ends the tenure here and now: `lost` is emitted
 * before it returns `false`. `whileLeader` makes the same check before each job it starts and each value it passes
 * on.
 *
 * @example
 * ```ts
 * observeLeadership(db).pipe(
 *   whileLeader((lease, job) => interval(60_000).pipe(
 *     exhaustMap(() => job(async () => {
 *       const report = await buildReport(); // a while: the tenure may end meanwhile
 *       if (holdsLease(lease)) await sendReport(report);
 *     })),
 *   )),
 * ).subscribe();
 * ```
 */
export function holdsLease(lease: Lease): boolean {
  expectLease(lease);
  return beliefOf(lease) === true;
}

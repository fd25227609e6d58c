/**
 * An answer that comes later (a store across a network), on the simulated timeline: the
 * simulator's stand-in for the promise a PostgreSQL store returns. Like a promise, its
 * statement runs whether or not anyone waits for it, each `then` gets the outcome once and
 * gives a new answer of its handler's result, and a failure that no handler takes is an
 * unhandled rejection (which ends a real Node.js process): `onUnhandled` hears of it. Unlike
 * one, it never touches the real event loop, so that the run stays on simulated time.
 */
import type { SimProcessClock, Timeline } from './timeline';

type Outcome<T> = { value: T } | { error: unknown };

export class SimAnswer<T> implements PromiseLike<T> {
  private outcome: Outcome<T> | undefined;
  private readonly waiting: Array<(outcome: Outcome<T>) => void> = [];

  constructor(
    private readonly timeline: Timeline,
    private readonly owner: SimProcessClock,
    private readonly onUnhandled: (error: unknown) => void,
  ) {}

  settle(outcome: Outcome<T>): void {
    if (this.outcome !== undefined) return;
    this.outcome = outcome;
    if ('error' in outcome && this.waiting.length === 0) this.onUnhandled(outcome.error);
    for (const handle of this.waiting.splice(0)) handle(outcome);
  }

  then<A = T, B = never>(
    onResult?: ((value: T) => A | PromiseLike<A>) | null,
    onError?: ((error: unknown) => B | PromiseLike<B>) | null,
  ): SimAnswer<A | B> {
    const next = new SimAnswer<A | B>(this.timeline, this.owner, this.onUnhandled);
    const handle = (outcome: Outcome<T>) => {
      try {
        if ('value' in outcome) next.adopt(onResult ? onResult(outcome.value) : (outcome.value as unknown as A));
        else if (onError) next.adopt(onError(outcome.error));
        else next.settle(outcome); // passed on: the next answer's handlers take it, or nobody does
      } catch (error) {
        next.settle({ error });
      }
    };
    const { outcome } = this;
    if (outcome === undefined) this.waiting.push(handle);
    else this.timeline.at(0, () => handle(outcome), this.owner); // a settled promise's handlers run later, never at once
    return next;
  }

  private adopt(result: T | PromiseLike<T>): void {
    const thenable = result as { then?: unknown } | null | undefined;
    if (typeof thenable?.then === 'function') {
      (result as PromiseLike<T>).then(
        (value) => this.settle({ value }),
        (error: unknown) => this.settle({ error }),
      );
    } else this.settle({ value: result as T });
  }
}

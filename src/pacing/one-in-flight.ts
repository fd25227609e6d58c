import { Eventually, isPromiseLike } from '../core/eventually';

/**
 * Runs a store's operations one at a time: an answer that comes at once is handled at once;
 * one still to come counts as in flight until it has been handled, and whatever falls due
 * meanwhile (an attempt, a look, the release at the end) waits for it, then runs in its
 * place. The campaign and `observeLeader` both drive their store through one.
 */
export class OneInFlight {
  /** The operation in flight, until its answer has been handled. */
  private flight: object | undefined;
  /** What runs once the operation in flight settles, instead of at its own time. */
  private queued: (() => void) | undefined;

  /**
   * @param onUnexpected gets what a handler threw: it ends the caller's stream, never as an
   * unhandled rejection.
   */
  constructor(private readonly onUnexpected: (error: unknown) => void) {}

  /** Whether an answer is still to come. */
  get busy(): boolean {
    return this.flight !== undefined;
  }

  /** Whether something waits for the operation in flight: its answer is likely stale by then. */
  get hasQueued(): boolean {
    return this.queued !== undefined;
  }

  /**
   * Runs `operation` and hands its outcome on: at once if the store answered at once, else
   * when the answer comes; then runs what was queued meanwhile.
   */
  run<T>(operation: () => Eventually<T>, onResult: (value: T) => void, onError: (error: unknown) => void): void {
    let answer: Eventually<T>;
    try {
      answer = operation();
    } catch (error) {
      return onError(error);
    }
    if (!isPromiseLike(answer)) return onResult(answer);
    const flight = {};
    this.flight = flight;
    const land = (handle: () => void) => {
      try {
        handle();
      } catch (error) {
        this.onUnexpected(error);
      }
      if (this.flight === flight) this.flight = undefined;
      const next = this.queued;
      this.queued = undefined;
      next?.();
    };
    answer.then(
      (value) => land(() => onResult(value)),
      (error: unknown) => land(() => onError(error)),
    );
  }

  /** Runs `action` now, or once the operation in flight settles, in place of whatever was queued. */
  whenSettled(action: () => void): void {
    if (this.flight === undefined) action();
    else this.queued = action;
  }

  /** Drops what was queued: something else is due instead. */
  cancelQueued(): void {
    this.queued = undefined;
  }
}

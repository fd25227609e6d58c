import { EMPTY, from, isObservable, Observable, of, Subscriber, Subscription } from 'rxjs';
import { isPromiseLike } from '../../core/eventually';

/**
 * One job's work: what runs when the job starts. It gets an `AbortSignal` that aborts when
 * the job is cut (the tenure lost, a drain's bound reached, a second shutdown signal), for
 * work an unsubscription cannot stop (a promise, a `fetch`). What it returns is what the job
 * emits: an Observable's values, a promise's value once it settles, any other value at once;
 * nothing for `undefined`. The job ends when that does.
 */
export type JobWork<T> = (signal: AbortSignal) => Observable<T> | PromiseLike<T> | T;

/**
 * Starts a job of the tenure that `whileLeader` gave it: the job's Observable runs `work`
 * when subscribed, unless the tenure is over or draining, in which case it completes at
 * once and `work` never runs. Every job a drain must wait for is started through it.
 */
export type StartJob = <T>(work: JobWork<T>) => Observable<T>;

/** One job that started: how to cut it, and whether it still has a listener. */
interface Run {
  readonly subscription: Subscription;
  readonly abort: AbortController;
  /** Who hears its values; `undefined` once its subscriber left during a drain, which took it over. */
  listener: Subscriber<unknown> | undefined;
}

/**
 * The jobs of one tenure: whether a new one may start (`open`), which are in flight, and
 * whose they are. While open, a job's subscriber owns it: unsubscribing cuts it (as
 * `switchMap` does). Once draining, no new job starts, and the drain owns those in flight:
 * a subscriber that leaves (a `switchMap` that switched) no longer cuts its job, which
 * finishes for the drain; `idle` is called when the last one does. Once closed, nothing
 * runs: every job still in flight was cut.
 */
export class TenureJobs {
  private state: 'open' | 'draining' | 'closed' = 'open';
  private readonly running = new Set<Run>();

  /**
   * @param mayStart whether the tenure still holds right now, asked before each job starts
   * @param idle called once draining, when no job is in flight
   * @param failed what an error of a job whose subscriber left becomes
   */
  constructor(
    private readonly mayStart: () => boolean,
    private readonly idle: () => void,
    private readonly failed: (error: unknown) => void,
  ) {}

  readonly start: StartJob = <T>(work: JobWork<T>) =>
    new Observable<T>((subscriber) => {
      // `mayStart` may end the tenure (a lease found run out), which closes this.
      if (this.state !== 'open' || !this.mayStart() || this.state !== 'open') return subscriber.complete();
      const run: Run = { subscription: new Subscription(), abort: new AbortController(), listener: subscriber };
      this.running.add(run);
      let output: Observable<T>;
      try {
        output = emitted(work(run.abort.signal));
      } catch (error) {
        // Thrown by `work`: the job fails at once.
        this.running.delete(run);
        return subscriber.error(error);
      }
      run.subscription.add(
        output.subscribe({
          next: (value) => run.listener?.next(value),
          error: (error: unknown) => this.finished(run, (listener) => (listener ? listener.error(error) : this.failed(error))),
          complete: () => this.finished(run, (listener) => listener?.complete()),
        }),
      );
      return () => {
        if (!this.running.has(run)) return;
        if (this.state === 'draining') run.listener = undefined;
        else this.cut(run);
      };
    });

  /** No new job starts from now on; `idle` is called once those in flight finished (at once if none is). */
  drain(): void {
    if (this.state !== 'open') return;
    this.state = 'draining';
    this.idleIfDrained();
  }

  /** No new job starts, and every job in flight is cut: its work unsubscribed, its signal aborted. */
  close(): void {
    this.state = 'closed';
    for (const run of this.running) this.cut(run);
  }

  /**
   * A job's work ended: it leaves the jobs in flight, its subscriber hears it (an operator
   * that buffers moves on to its next value, whose job a drain refuses), and only then may a
   * drain be over.
   */
  private finished(run: Run, tell: (listener: Subscriber<unknown> | undefined) => void): void {
    if (!this.running.delete(run)) return;
    const { listener } = run;
    run.listener = undefined;
    tell(listener);
    this.idleIfDrained();
  }

  /** Once draining with no job in flight: closed, and `idle` told, once. */
  private idleIfDrained(): void {
    if (this.state !== 'draining' || this.running.size > 0) return;
    this.state = 'closed';
    this.idle();
  }

  private cut(run: Run): void {
    this.running.delete(run);
    run.subscription.unsubscribe();
    run.abort.abort();
  }
}

/** What a job emits for what its work returned (see `JobWork`). */
function emitted<T>(result: Observable<T> | PromiseLike<T> | T): Observable<T> {
  if (isObservable(result) || isPromiseLike(result)) return from(result);
  return result === undefined ? EMPTY : of(result);
}

import { from, isObservable, Observable, ObservableInput, OperatorFunction, SchedulerLike, Subscriber, Subscription } from 'rxjs';
import { argumentError, expectConfig, expectInteger, expectScheduler, MAX_DELAY } from '../../core/argument-check';
import { ElectedEvent, LeadershipEvent } from '../../core/leadership-event';
import { monotonicScheduler } from '../../core/monotonic-scheduler';
import { beliefOf } from '../candidate-registry';
import { StartJob, TenureJobs } from './tenure-jobs';

/** Options of {@link whileLeader}: how it drains on shutdown. Durations are in milliseconds. */
export interface WhileLeaderConfig {
  /**
   * Drains, then ends the stream. At its first value, no new job starts (jobs are what
   * `project` starts through its `job` argument), the jobs in flight finish, and only then
   * does the stream complete: the subscription ends, and with it the campaign, which
   * releases the lease before `complete` is called. The project's values keep coming
   * meanwhile. A drain is cut at once, its jobs unsubscribed and their signals aborted, by
   * a `lost` (a leader never acts past its belief), by a second value (Ctrl-C twice), and
   * after `drainFor`. While this candidate does not lead, the first value ends the stream at
   * once. Its error ends the stream with that error; its completion changes nothing.
   * @default none: the stream ends only as your pipeline ends it
   */
  drainOn?: Observable<unknown>;
  /**
   * The longest a drain waits for the jobs in flight, from `drainOn`'s first value; then it
   * cuts them and ends. Keep it under what your supervisor allows before it kills the
   * process (Kubernetes: `terminationGracePeriodSeconds`, 30 s by default; systemd:
   * `TimeoutStopSec`, 90 s), so that the lease is still released on the way out.
   * @default 10_000
   */
  drainFor?: number;
  /**
   * Where the drain's bound is timed.
   * @default asyncScheduler's timers on a monotonic clock
   */
  scheduler?: SchedulerLike;
}

/**
 * Runs `project(lease, job)` for each tenure: subscribes to it on `elected`, unsubscribes it
 * on `lost`, when the events end, and on teardown. `renewed` and `error` events leave it
 * running.
 *
 * Start each unit of work through `job(() => work)`: a job starts only while the tenure
 * holds (checked on the clock at that moment), is cut when it ends, and is what a drain
 * (`drainOn`) waits for. Whatever operator starts the jobs (`concatMap`, `mergeMap`,
 * `exhaustMap`, `switchMap`) and however it buffers, no job starts once the tenure is over
 * or a drain began, so none after the lease is released. Work done elsewhere in `project`
 * (in a `tap`, say) is not a job: a drain does not wait for it, nor keep it from running
 * while it waits.
 *
 * Before it passes a value of `project` on, it checks that the tenure still stands at that
 * moment ({@link holdsLease}): a process resumed from a pause runs its due timers in the
 * order they were set, so a job's tick may come before the timer that ends the tenure. Such
 * a value is dropped, the tenure ends there (`lost`), and nothing of it reaches what follows
 * `whileLeader`.
 *
 * @example
 * ```ts
 * observeLeadership(db).pipe(
 *   whileLeader((lease, job) => interval(1_000).pipe(exhaustMap(() => job(() => dispatchJobs(lease)))), {
 *     drainOn: merge(fromEvent(process, 'SIGTERM'), fromEvent(process, 'SIGINT')),
 *   }),
 * ).subscribe({ complete: () => console.log('released') });
 * ```
 */
export function whileLeader<R>(
  project: (lease: ElectedEvent, job: StartJob) => ObservableInput<R>,
  config?: WhileLeaderConfig,
): OperatorFunction<LeadershipEvent, R> {
  if (typeof project !== 'function') throw argumentError(TypeError, 'project', 'a function of the lease', project);
  const drain = resolveWhileLeaderConfig(config);
  return (events) => new Observable<R>((subscriber) => new LeaderWork(project, drain, subscriber).follow(events));
}

const knownOptions = ['drainOn', 'drainFor', 'scheduler'];

function resolveWhileLeaderConfig(config: WhileLeaderConfig = {}): Required<WhileLeaderConfig> | undefined {
  expectConfig(config, knownOptions);
  const { drainOn, drainFor = 10_000, scheduler = monotonicScheduler } = config;
  if (drainOn !== undefined && !isObservable(drainOn)) throw argumentError(TypeError, 'drainOn', 'an Observable', drainOn);
  expectInteger('drainFor', drainFor, 0, MAX_DELAY);
  expectScheduler('scheduler', scheduler);
  return drainOn === undefined ? undefined : { drainOn, drainFor, scheduler };
}

/** One tenure's project and jobs. */
interface Tenure {
  readonly jobs: TenureJobs;
  readonly project: Subscription;
}

/** One subscription of `whileLeader`: the tenure at hand, and the drain once asked. */
class LeaderWork<R> {
  private tenure: Tenure | undefined;
  private draining = false;
  private ended = false;
  /** The events, the drain's notifier and its bound. */
  private readonly listening = new Subscription();

  constructor(
    private readonly project: (lease: ElectedEvent, job: StartJob) => ObservableInput<R>,
    private readonly drain: Required<WhileLeaderConfig> | undefined,
    private readonly subscriber: Subscriber<R>,
  ) {}

  /** Listens to `events` (and to the drain's notifier first, as `takeUntil` does), and returns the teardown. */
  follow(events: Observable<LeadershipEvent>): () => void {
    if (this.drain) {
      this.listening.add(
        this.drain.drainOn.subscribe({ next: () => this.drainOrCut(), error: (error: unknown) => this.end('error', error) }),
      );
    }
    if (!this.ended) {
      this.listening.add(
        events.subscribe({
          next: (event) => this.onEvent(event),
          error: (error: unknown) => this.end('error', error),
          complete: () => this.end('complete'),
        }),
      );
    }
    return () => this.end('unsubscribed');
  }

  private onEvent(event: LeadershipEvent): void {
    if (event.type === 'elected') {
      this.endTenure();
      this.begin(event);
    } else if (event.type === 'lost' && this.tenure !== undefined) {
      this.endTenure();
      // A drain's tenure is over: what it waited for was cut, and there is nothing to release.
      if (this.draining) this.end('complete');
    }
  }

  private begin(lease: ElectedEvent): void {
    const jobs = new TenureJobs(
      () => beliefOf(lease) !== false,
      () => this.end('complete'),
      (error) => this.end('error', error),
    );
    const tenure: Tenure = { jobs, project: new Subscription() };
    this.tenure = tenure;
    let values: Observable<R>;
    try {
      values = from(this.project(lease, jobs.start));
    } catch (error) {
      return this.end('error', error);
    }
    tenure.project.add(
      values.subscribe({
        next: (value) => {
          // Events that no candidate of this process emitted (a test's, say) cannot be checked.
          if (beliefOf(lease) === false) return this.tenure === tenure ? this.endTenure() : undefined;
          this.subscriber.next(value);
        },
        error: (error: unknown) => this.end('error', error),
      }),
    );
  }

  /** The drain's notifier spoke: the first time, drain (at once if nothing runs); the second, cut. */
  private drainOrCut(): void {
    const { drain } = this;
    if (drain === undefined || this.draining || this.tenure === undefined) return this.end('complete');
    this.draining = true;
    this.listening.add(drain.scheduler.schedule(() => this.end('complete'), drain.drainFor));
    this.tenure.jobs.drain();
  }

  /** Ends the tenure at hand: no job starts from here on, those in flight are cut, and the project is unsubscribed. */
  private endTenure(): void {
    const { tenure } = this;
    this.tenure = undefined;
    tenure?.jobs.close();
    tenure?.project.unsubscribe();
  }

  /**
   * Ends it all, once, in this order: the work (no job runs past this), the events (which
   * releases the lease), then what follows hears how it ended.
   */
  private end(how: 'complete' | 'error' | 'unsubscribed', error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.endTenure();
    this.listening.unsubscribe();
    if (how === 'complete') this.subscriber.complete();
    else if (how === 'error') this.subscriber.error(error);
  }
}

import {
  concat,
  concatMap,
  exhaustMap,
  firstValueFrom,
  NEVER,
  finalize,
  map,
  mergeMap,
  Observable,
  of,
  OperatorFunction,
  switchMap,
  takeUntil,
  timer,
} from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { LeadershipEvent, StartJob, whileLeader, WhileLeaderConfig } from '../../src';
import { virtualTime } from '../support/virtual-time';

const events: Record<string, LeadershipEvent> = {
  e: { type: 'elected', slot: 0, holder: 'a', term: 1, expiresAt: 100 },
  r: { type: 'renewed', slot: 0, holder: 'a', term: 1, expiresAt: 100 },
  l: { type: 'lost', slot: 0, holder: 'a', term: 1, reason: 'expired' },
  f: { type: 'elected', slot: 0, holder: 'a', term: 2, expiresAt: 100 },
};

type Starter = (start: (tick: string) => Observable<number>) => OperatorFunction<string, number>;

/** The four ways users start jobs from a trigger, as the project's operator. */
const operators: Array<[string, Starter]> = [
  ['concatMap', (start) => concatMap(start)],
  ['mergeMap', (start) => mergeMap(start)],
  ['exhaustMap', (start) => exhaustMap(start)],
  ['switchMap', (start) => switchMap(start)],
];
const by = Object.fromEntries(operators);

/**
 * A worker in virtual time: triggers at frames 1, 4, 7, 10, ... each start a job of `jobFrames`
 * through `operator`; each job emits its number when it ends. It records when each job's work
 * began (`started`), when a job ended or was cut (`ended`), and the order of what happened
 * (`log`: job starts and ends, the lease's release, the stream's end).
 */
function worker(scheduler: TestScheduler, helpers: TestScheduler['run'] extends (cb: (h: infer H) => unknown) => unknown ? H : never) {
  const { hot } = helpers;
  const started: number[] = [];
  const ended: Array<[number, 'finished' | 'cut']> = [];
  const signals: AbortSignal[] = [];
  const log: string[] = [];
  let count = 0;
  const triggers = hot('-t--t--t--t--t--t--t--t--t');
  const jobOf = (job: StartJob, jobFrames: number) => (): Observable<number> =>
    job((signal) => {
      const number = ++count;
      started.push(scheduler.now());
      signals.push(signal);
      log.push(`job ${number} started`);
      let done = false;
      const end = (how: 'finished' | 'cut') => {
        ended.push([scheduler.now(), how]);
        log.push(`job ${number} ${how}`);
      };
      return timer(jobFrames).pipe(
        map(() => {
          done = true;
          end('finished');
          return number;
        }),
        finalize(() => done || end('cut')),
      );
    });
  /** `events` piped through `whileLeader` whose project starts the jobs through `operator`, with `config`. */
  const run = (source: Observable<LeadershipEvent>, operator: Starter, config: WhileLeaderConfig, jobFrames = 5) =>
    source.pipe(
      finalize(() => log.push('released')),
      whileLeader((_, job) => triggers.pipe(operator(jobOf(job, jobFrames))), { scheduler, ...config }),
      finalize(() => log.push('ended')),
    );
  return { started, ended, signals, log, run };
}

describe('whileLeader drains', () => {
  describe.each(operators)('jobs started by %s', (name, operator) => {
    // Triggers at 1, 4, 7, 10, ...; jobs of 5 frames; the drain asked at 8.
    const expected: Record<string, { output: string; values: Record<string, number>; started: number[]; end: number }> = {
      concatMap: { output: '------a----(b|)', values: { a: 1, b: 2 }, started: [1, 6], end: 11 },
      mergeMap: { output: '------a--b--(c|)', values: { a: 1, b: 2, c: 3 }, started: [1, 4, 7], end: 12 },
      exhaustMap: { output: '------a-----(b|)', values: { a: 1, b: 2 }, started: [1, 7], end: 12 },
      // Each trigger switches to a new job and cuts the last; once draining, a switch no longer
      // cuts the job in flight (the drain waits for it), but its value has nobody to go to.
      switchMap: { output: '------------|', values: {}, started: [1, 4, 7], end: 12 },
    };

    it('starts no job once asked, lets the jobs in flight finish, and only then releases and completes', () => {
      const scheduler = virtualTime();
      const { output, values, started: startedAt, end } = expected[name];
      let state: ReturnType<typeof worker> | undefined;
      scheduler.run((helpers) => {
        const { hot, expectObservable, expectSubscriptions } = helpers;
        state = worker(scheduler, helpers);
        const source = hot('e', events);
        const drainOn = hot('--------s');
        expectObservable(state.run(source, operator, { drainOn })).toBe(output, values);
        expectSubscriptions(source.subscriptions).toBe(`^${'-'.repeat(end - 1)}!`);
      });
      const { started, ended, log } = state!;
      expect(started).toEqual(startedAt);
      expect(started.every((frame) => frame < 8)).toBe(true);
      // Every job that started before the drain and was still running at 8 finished.
      expect(ended.filter(([frame]) => frame >= 8).every(([, how]) => how === 'finished')).toBe(true);
      expect(log.slice(-2)).toEqual(['released', 'ended']);
    });

    it('never starts a job after the release, however many triggers it buffered', () => {
      const scheduler = virtualTime();
      let state: ReturnType<typeof worker> | undefined;
      scheduler.run((helpers) => {
        state = worker(scheduler, helpers);
        // Jobs of 20 frames: concatMap buffers every trigger of the drain.
        state.run(helpers.hot('e', events), operator, { drainOn: helpers.hot('-----------s') }, 20).subscribe();
      });
      const { log } = state!;
      expect(log.indexOf('released')).toBeGreaterThan(0);
      expect(log.slice(log.indexOf('released')).some((line) => line.includes('started'))).toBe(false);
    });
  });

  it('cuts the jobs in flight once drainFor has passed, aborting their signals, and then releases', () => {
    const scheduler = virtualTime();
    let state: ReturnType<typeof worker> | undefined;
    scheduler.run((helpers) => {
      const { hot, expectObservable, expectSubscriptions } = helpers;
      state = worker(scheduler, helpers);
      const source = hot('e', events);
      // Jobs at 1-6, 4-9 and 7-12; asked at 8, cut at 10.
      expectObservable(state.run(source, by.mergeMap, { drainOn: hot('--------s'), drainFor: 2 })).toBe('------a--b|', { a: 1, b: 2 });
      expectSubscriptions(source.subscriptions).toBe('^---------!');
    });
    const { ended, signals, log } = state!;
    expect(ended).toEqual([
      [6, 'finished'],
      [9, 'finished'],
      [10, 'cut'],
    ]);
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false, true]);
    expect(log.slice(-3)).toEqual(['job 3 cut', 'released', 'ended']);
  });

  it.each([
    ['a second signal (Ctrl-C twice)', 'e', '--------s-s'],
    ['lost: a leader never acts past its belief', 'e---------l', '--------s'],
  ])('cuts the jobs in flight at %s, and ends', (_, eventMarbles, drainMarbles) => {
    const scheduler = virtualTime();
    let state: ReturnType<typeof worker> | undefined;
    scheduler.run((helpers) => {
      const { hot, expectObservable, expectSubscriptions } = helpers;
      state = worker(scheduler, helpers);
      const source = hot(eventMarbles, events);
      expectObservable(state.run(source, by.concatMap, { drainOn: hot(drainMarbles) })).toBe('------a---|', { a: 1 });
      expectSubscriptions(source.subscriptions).toBe('^---------!');
    });
    expect(state!.ended).toEqual([
      [6, 'finished'],
      [10, 'cut'],
    ]);
    expect(state!.signals.map((signal) => signal.aborted)).toEqual([false, true]);
    expect(state!.log.slice(-3)).toEqual(['job 2 cut', 'released', 'ended']);
  });

  it('ends at once when asked while nothing runs: a follower, or a leader between jobs', () => {
    const scheduler = virtualTime();
    scheduler.run((helpers) => {
      const { hot, expectObservable, expectSubscriptions } = helpers;
      const follower = hot<LeadershipEvent>('-r-r-r-r');
      expectObservable(worker(scheduler, helpers).run(follower, by.concatMap, { drainOn: hot('---s') })).toBe('---|');
      expectSubscriptions(follower.subscriptions).toBe('^--!');
      const leader = hot('e', events);
      // Jobs of 2 frames: the first ends at 3, the next starts at 4.
      expectObservable(worker(scheduler, helpers).run(leader, by.concatMap, { drainOn: hot('---s') }, 2)).toBe('---(a|)', { a: 1 });
    });
  });

  it('without a drain, cuts the jobs at lost, starts none after it, and starts them again at the next elected', () => {
    const scheduler = virtualTime();
    let state: ReturnType<typeof worker> | undefined;
    scheduler.run((helpers) => {
      const { hot, expectObservable } = helpers;
      state = worker(scheduler, helpers);
      const source = hot('e-----l----f', events);
      expectObservable(state.run(source, by.exhaustMap, {}, 2), '^ 16ms !').toBe('---a-----------b', { a: 1, b: 3 });
    });
    expect(state!.started).toEqual([1, 4, 13, 16]);
    expect(state!.ended).toEqual([
      [3, 'finished'],
      [6, 'cut'],
      [15, 'finished'],
      [17, 'cut'],
    ]);
  });

  it('cuts the jobs before the release when the subscription ends downstream (takeUntil after whileLeader: no drain)', () => {
    const scheduler = virtualTime();
    let state: ReturnType<typeof worker> | undefined;
    scheduler.run((helpers) => {
      const { hot, expectObservable } = helpers;
      state = worker(scheduler, helpers);
      expectObservable(state.run(hot('e', events), by.concatMap, {}).pipe(takeUntil(hot('--------s')))).toBe('------a-|', { a: 1 });
    });
    expect(state!.log.slice(-3)).toEqual(['job 2 cut', 'released', 'ended']);
  });

  it('cuts the jobs when the events end (takeUntil before whileLeader ends the campaign: the lease is gone)', () => {
    const scheduler = virtualTime();
    let state: ReturnType<typeof worker> | undefined;
    scheduler.run((helpers) => {
      const { hot, expectObservable } = helpers;
      state = worker(scheduler, helpers);
      expectObservable(state.run(hot('e-------|', events), by.concatMap, {})).toBe('------a-|', { a: 1 });
    });
    expect(state!.ended).toEqual([
      [6, 'finished'],
      [8, 'cut'],
    ]);
  });

  it('ends with the error of a job that a switch left to the drain', () => {
    const scheduler = virtualTime();
    scheduler.run(({ hot, cold, expectObservable }) => {
      const failing = cold('---#', {}, new Error('job failed'));
      const triggers = hot('-t-t');
      const jobs = (job: StartJob) => triggers.pipe(switchMap(() => job(() => failing)));
      const result = hot('e', events).pipe(whileLeader((_, job) => jobs(job), { drainOn: hot('--s'), scheduler }));
      expectObservable(result).toBe('----#', {}, new Error('job failed'));
    });
  });

  it("emits what the work returns: an Observable's values, a promise's value, any other value at once, nothing for undefined", async () => {
    const scheduler = virtualTime();
    scheduler.run(({ hot, cold, expectObservable }) => {
      const result = (work: () => unknown) => hot('e', events).pipe(whileLeader((_, job) => job(work), { scheduler }));
      expectObservable(result(() => cold('-a-b|'))).toBe('-a-b');
      expectObservable(result(() => 42)).toBe('a', { a: 42 });
      expectObservable(result(() => [1, 2])).toBe('a', { a: [1, 2] });
      expectObservable(result(() => undefined)).toBe('');
    });
    const fromPromise = concat(of(events.e), NEVER).pipe(whileLeader((_, job) => job(async () => 7)));
    expect(await firstValueFrom(fromPromise)).toBe(7);
  });

  it('fails a job whose work throws, without counting it in flight', () => {
    const scheduler = virtualTime();
    scheduler.run(({ hot, expectObservable }) => {
      const failing = () => {
        throw new Error('bad job');
      };
      expectObservable(hot('e', events).pipe(whileLeader((_, job) => job(failing), { drainOn: hot('--s'), scheduler }))).toBe(
        '#',
        {},
        new Error('bad job'),
      );
    });
  });

  it('refuses bad options at once, naming them', () => {
    const project = () => timer(1);
    expect(() => whileLeader(project, { drainOn: 'SIGTERM' as never })).toThrow(
      new TypeError('Expected `drainOn` to be an Observable, got `"SIGTERM"` (string)'),
    );
    expect(() => whileLeader(project, { drainFor: -1 })).toThrow(
      new RangeError('Expected `drainFor` to be an integer from 0 to 2147483647, got `-1` (number)'),
    );
    expect(() => whileLeader(project, { drainsOn: timer(1) } as never)).toThrow(
      new TypeError('Expected `config` to be an object with only drainOn, drainFor, scheduler, got `"drainsOn"` (string)'),
    );
  });
});

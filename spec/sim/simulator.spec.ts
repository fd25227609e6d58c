import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkRun } from '../../sim/check';
import { timelineNear, simulate } from '../../sim/run';
import { defaultTiming, faultKinds, Scenario, scenarioOf } from '../../sim/scenario';
import { exhaust } from '../../sim/exhaustive';
import { shrink } from '../../sim/shrink';
import { SimAnswer } from '../../sim/sim-answer';
import { SimScheduler, Timeline } from '../../sim/timeline';
import { SimHistory, SimRecord, World } from '../../sim/world';
import { simCorpus } from '../support/sim-corpus';

/** Its corpus of findings on SQLite; those on PostgreSQL replay in spec/sim/postgres.processes.spec.ts. */
const corpus = simCorpus(undefined);

/** Its first violation with the second before it, for a failure to show. */
function firstViolation(outcome: ReturnType<typeof simulate>): string[] | undefined {
  const [first] = outcome.violations;
  return first && [`${first.check}: ${first.detail}`, ...timelineNear(outcome.history, first)];
}

describe('the simulator (npm run simulate)', () => {
  it('replays a scenario exactly: the same events, faults and times', () => {
    const scenario = scenarioOf(7, { candidates: 3, slots: 2, duration: 20_000 });
    const [first, again] = [simulate(scenario), simulate(JSON.parse(JSON.stringify(scenario)) as Scenario)];
    expect(first.history.records.length).toBeGreaterThan(100);
    expect(again.history.records).toEqual(first.history.records);
    expect(simulate(scenarioOf(8, { candidates: 3, slots: 2, duration: 20_000 })).history.records).not.toEqual(first.history.records);
  });

  it('runs the real campaign and statements through faults of every kind, and finds no violation in fresh seeds, in WAL and in a rollback journal', () => {
    const seed = Date.now() % 100_000;
    let failovers = 0;
    let writes = 0;
    const kinds = new Set<string>();
    for (let run = 0; run < 8; run++) {
      const journal = run % 4 === 3 ? 'delete' : 'wal';
      const outcome = simulate(scenarioOf(seed + run, { candidates: 3 + (run % 3), slots: 1 + (run % 2), duration: 30_000, journal }));
      // A violation shows with its seed: `npm run simulate -- --seed N --candidates C --slots S --duration 30000 --journal J` finds and shrinks it.
      expect({ seed: seed + run, journal, violation: firstViolation(outcome) }).toEqual({
        seed: seed + run,
        journal,
        violation: undefined,
      });
      failovers += outcome.failovers;
      for (const r of outcome.history.records) if (r.kind === 'fault') kinds.add(r.type);
      writes += outcome.history.records.filter((r) => r.kind === 'write' && r.type === 'fenced').length;
    }
    const noise = ['busy-after', 'busy-before', 'io-error-after', 'io-error-before', 'lost', 'twice', 'late', 'slow'];
    expect([...kinds].sort()).toEqual([...faultKinds, ...noise].sort());
    expect(writes).toBeGreaterThan(100); // fenced writes the checker judged
    expect(failovers).toBeGreaterThan(200);
  });

  it("fires a process's timer early by what its lateness says when negative, as Node.js's can, never before it was set", () => {
    const timeline = new Timeline(() => undefined);
    const owner = { alive: true, paused: false, held: [], wallOffset: 0 };
    const offsets = [-2, -10, 1];
    const scheduler = new SimScheduler(timeline, { name: 'host', offset: 0 }, owner, () => offsets.shift() ?? 0);
    const fired: number[] = [];
    timeline.runUntil(4);
    for (const delay of [5, 5, 5]) scheduler.schedule(() => void fired.push(timeline.now), delay);
    timeline.runUntil(100);
    expect(fired).toEqual([4, 7, 10]); // each due at 9: 10 early (so at once, not before 4), 2 early, 1 late
  });

  it('never fires a timer unsubscribed once its paused process resumed, before the timer ran', () => {
    const timeline = new Timeline(() => undefined);
    const owner = { alive: true, paused: true, held: [], wallOffset: 0 };
    const scheduler = new SimScheduler(timeline, { name: 'host', offset: 0 }, owner, () => 0);
    const fired: string[] = [];
    const second = scheduler.schedule(() => void fired.push('second'), 6);
    scheduler.schedule(() => {
      fired.push('first');
      second.unsubscribe();
    }, 5);
    timeline.runUntil(10); // both held by the pause
    owner.paused = false;
    timeline.resume(owner);
    timeline.runUntil(20);
    expect(fired).toEqual(['first']);
  });

  it.each(corpus)('replays $file of its corpus of findings (spec/sim/corpus) with no violation', ({ scenario }) => {
    expect(firstViolation(simulate(scenario))).toBeUndefined();
  });

  it('runs every schedule of an exhaustive search once, each a different way, and finds a planted-free run clean', () => {
    const schedules: string[] = [];
    const result = exhaust({ candidates: 2, delays: 0 }, { plans: [[]], seen: (choices) => schedules.push(choices.join()) });
    expect(result).toMatchObject({ plans: 1, complete: true });
    expect(result.found).toBeUndefined();
    expect(result.schedules).toBeGreaterThan(10);
    expect(new Set(schedules).size).toBe(result.schedules);
  });

  it('shrinks a failing scenario to the faults it needs: no other fault, noise, candidate or slot', async () => {
    // A judge that sees a violation wherever a wall clock stepped and a process was paused:
    // shrunk, two faults of a long run are left, and nothing else the run held.
    const scenario = scenarioOf(3, { candidates: 3, slots: 1, duration: 30_000 });
    const needs = (candidate: Scenario) =>
      candidate.faults.some((f) => f.kind === 'wall-step') && candidate.faults.some((f) => f.kind === 'pause');
    expect(needs(scenario)).toBe(true);
    const violation = (candidate: Scenario) => ({ check: 'overlap' as const, at: candidate.duration, detail: '' });
    const shrunk = await shrink(scenario, violation(scenario), {
      seconds: 30,
      judge: (candidate) => (needs(candidate) ? [violation(candidate)] : []),
    });
    expect(shrunk.scenario.faults.map((f) => f.kind).sort()).toEqual(['pause', 'wall-step']);
    expect(shrunk.scenario).toMatchObject({
      candidates: 1,
      slots: 1,
      noise: { latency: false, failures: false, lateness: false, options: false, channels: false },
    });
  });

  describe('its checker', () => {
    const history = (records: SimRecord[]): SimHistory => ({
      scenario: { seed: 1, candidates: 2, slots: 1, duration: 1_000, timing: defaultTiming, noise: noNoise, faults: [] },
      records,
      quietFrom: 0,
      endedAt: 5_000,
      faults: 0,
      aimed: [],
    });
    const noNoise = { latency: false, failures: false, lateness: false, options: false };
    const elected = (process: string, term: number, at: number, deadline: number): SimRecord => ({
      at,
      process,
      holder: process,
      kind: 'event',
      slot: 0,
      type: 'elected',
      term,
      deadline,
    });
    const event = (process: string, at: number, type: string, term?: number): SimRecord => ({
      at,
      process,
      holder: process,
      kind: 'event',
      slot: 0,
      type,
      ...(term !== undefined && { term }),
    });
    const checks = (records: SimRecord[]) => checkRun(history(records)).violations.map((v) => v.check);

    it('finds two beliefs at one instant, counted to each deadline', () => {
      expect(checks([elected('a', 1, 0, 600), elected('b', 2, 500, 5_000)])).toEqual(['overlap']);
    });

    it('ends a belief at a kill, and at a deadline passed without a renewal', () => {
      const killed = [elected('a', 1, 0, 600), { ...event('a', 100, 'kill'), kind: 'fault' as const }, elected('b', 2, 200, 5_000)];
      expect(checks(killed)).toEqual([]);
      expect(checks([elected('a', 1, 0, 600), elected('b', 2, 601, 5_000)])).toEqual([]);
    });

    it('finds a term that went back, and a slot left without a leader for longer than a late answer, a lease and a retry explain', () => {
      expect(checks([elected('b', 2, 0, 600), elected('a', 1, 700, 1_300)])).toEqual(['term-order', 'liveness']);
    });

    it("finds a candidate's events out of the order the campaign promises", () => {
      const renewedUnled = [elected('a', 1, 0, 600), event('a', 100, 'lost'), event('a', 200, 'renewed', 1), elected('a', 2, 300, 5_000)];
      expect(checks(renewedUnled)).toEqual(['malformed']);
      expect(checks([elected('a', 1, 0, 600), elected('a', 2, 100, 5_000)])).toEqual(['malformed']);
    });

    it("finds a stream that ended, unless the fault closed the process's connection under it", () => {
      const ended: SimRecord = {
        at: 100,
        process: 'a',
        holder: 'a',
        kind: 'error',
        slot: 0,
        type: 'terminated',
        detail: 'DATABASE_CLOSED: closed',
      };
      const closed: SimRecord = { at: 50, process: 'a', holder: 'a', kind: 'fault', type: 'close' };
      expect(checks([elected('b', 1, 0, 5_000), ended])).toEqual(['terminated']);
      expect(checks([elected('b', 1, 0, 5_000), closed, ended])).toEqual([]);
    });

    it('finds a fenced write that committed outside its tenure, or once its lease ran out', () => {
      const write = (term: number, tenure: SimRecord['tenure']): SimRecord => ({
        ...event('b', 300, 'fenced', term),
        kind: 'write',
        tenure,
      });
      const led = [elected('a', 1, 0, 600), elected('b', 2, 601, 5_000)];
      expect(checks([...led, write(2, { holder: 'b', term: 2, left: 300 })])).toEqual([]);
      expect(checks([...led, write(2, { holder: 'b', term: 2, left: -1 })])).toEqual(['fenced']);
      expect(checks([...led, write(2, { holder: 'a', term: 3, left: 300 })])).toEqual(['fenced']);
      expect(checks([...led, write(2, undefined)])).toEqual(['fenced']);
    });

    it('finds a tenure taken from a holder that still believed announced within the lock-delay, unless that holder died or said lost first', () => {
      const take: SimRecord = {
        ...event('b', 700, 'unproven', 2),
        kind: 'take',
        lockDelay: 100,
        believer: 'a',
        detail: 'from a term 1 (a)',
      };
      const led = elected('a', 1, 0, 600);
      expect(checks([led, take, elected('b', 2, 800, 5_000)])).toEqual([]);
      expect(checks([led, take, elected('b', 2, 799, 5_000)])).toEqual(['lock-delay']);
      expect(checks([led, take, { ...event('a', 750, 'kill'), kind: 'fault' }, elected('b', 2, 760, 5_000)])).toEqual([]);
      expect(checks([led, take, event('a', 750, 'lost', 1), elected('b', 2, 760, 5_000)])).toEqual([]);
      expect(checks([led, { ...take, lockDelay: 0 }, elected('b', 2, 701, 5_000)])).toEqual([]);
    });

    it('finds a handoff to a live candidate by name taken by another, unless something else went on meanwhile', () => {
      const asked: SimRecord = { ...event('a', 100, 'handoff'), kind: 'fault', detail: 'slot 0 term 1 to h2, asked by c' };
      const handedOff: SimRecord = { ...event('a', 101, 'lost', 1), detail: 'handed-off' };
      const next = (holder: string): SimRecord => ({ ...elected(holder, 2, 102, 5_000), holder });
      const led = [elected('a', 1, 0, 600), asked, handedOff];
      expect(checks([...led, next('h2')])).toEqual([]);
      expect(checks([...led, next('h3')])).toEqual(['handoff']);
      const lost: SimRecord = { ...event('h2', 101, 'lost'), kind: 'fault', detail: 'word handed' };
      expect(checks([...led, lost, next('h3')])).toEqual([]);
      const slow: SimRecord = { ...event('h2', 50, 'slow'), kind: 'fault', detail: 'renew, 300.0 ms', until: 350 };
      expect(checks([elected('a', 1, 0, 600), slow, asked, handedOff, next('h3')])).toEqual([]);
    });

    it('finds an exception out of a timer, a rejection nobody handled, and anything started on the real event loop', () => {
      const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-sim-spec-'));
      try {
        const scenario: Scenario = { ...scenarioOf(1, { candidates: 1, slots: 1, duration: 1_000 }), noise: noNoise, faults: [] };
        const world = new World(scenario, { file: join(folder, 'sim.db') });
        const owner = { alive: true, paused: false, held: [] };
        world.timeline.at(100, () => {
          throw new Error('thrown by a timer');
        });
        const rejected = new SimAnswer<number>(world.timeline, owner, (error) => world.unhandled(undefined, `rejected: ${error}`));
        const handled = new SimAnswer<number>(world.timeline, owner, () => world.unhandled(undefined, 'handled, yet reported'));
        handled.then(undefined, () => undefined);
        world.timeline.at(200, () => (rejected.settle({ error: 'nobody' }), handled.settle({ error: 'somebody' })));
        world.timeline.at(300, () => void Promise.resolve());
        world.timeline.at(400, () => void setTimeout(() => undefined, 0));
        const found = checkRun(world.run()).violations.filter((v) => v.check === 'unhandled');
        expect(found.map((v) => [v.at, v.detail])).toEqual([
          [100, '-: uncaught ERROR: thrown by a timer'],
          [200, '-: rejected: nobody'],
          [300, expect.stringMatching(/^-: a real PROMISE started/)],
          [400, expect.stringMatching(/^-: a real Timeout started/)],
        ]);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    });
  });
});

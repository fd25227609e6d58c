import { checkRun } from '../../sim/check';
import { simulate, timelineNear } from '../../sim/main';
import type { SimHistory } from '../../sim/world';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const timing = { renewEvery: 200, expiresAfter: 600, retryEvery: 120 };
/** Every run the simulator found a violation in, kept with what it found and what fixed it. */
const corpus = JSON.parse(readFileSync(join(__dirname, 'corpus.json'), 'utf8')) as Array<{
  seed: number;
  candidates: number;
  slots: number;
  duration: number;
  found: string;
}>;

describe('the simulator (npm run simulate)', () => {
  it('replays a seed exactly: the same events, faults and times', () => {
    const options = { candidates: 3, slots: 2, duration: 20_000, ...timing };
    const [first, again] = [simulate(7, options), simulate(7, options)];
    expect(first.history.records.length).toBeGreaterThan(100);
    expect(again.history.records).toEqual(first.history.records);
    expect(simulate(8, options).history.records).not.toEqual(first.history.records);
  });

  it('runs the real campaign and statements through faults of every kind, and finds no violation in fresh seeds', () => {
    const seed = Date.now() % 100_000;
    let [failovers, faults] = [0, 0];
    const kinds = new Set<string>();
    for (let run = 0; run < 8; run++) {
      const outcome = simulate(seed + run, { candidates: 3 + (run % 3), slots: 1 + (run % 2), duration: 30_000, ...timing });
      const first = outcome.violations[0];
      // A violation shows with its seed and timeline: `npm run simulate -- --seed N` replays it.
      expect({ seed: seed + run, violation: first && [first.detail, ...timelineNear(outcome.history, first)] }).toEqual({
        seed: seed + run,
        violation: undefined,
      });
      failovers += outcome.failovers;
      faults += outcome.history.faults;
      for (const r of outcome.history.records) if (r.kind === 'fault') kinds.add(r.type);
    }
    expect([...kinds].sort()).toEqual(
      ['busy-after', 'busy-before', 'io-error-after', 'io-error-before', 'kill', 'pause', 'unsubscribe', 'wall-step'].sort(),
    );
    expect(failovers).toBeGreaterThan(100);
    expect(faults).toBeGreaterThan(100);
  });

  it.each(corpus)(
    'replays seed $seed of its corpus of findings (corpus.json) with no violation',
    ({ seed, candidates, slots, duration }) => {
      const outcome = simulate(seed, { candidates, slots, duration, ...timing });
      const first = outcome.violations[0];
      expect(first && [first.detail, ...timelineNear(outcome.history, first)]).toBeUndefined();
    },
  );

  describe('its checker', () => {
    const history = (records: SimHistory['records']): SimHistory => ({
      options: { seed: 1, candidates: 2, slots: 1, duration: 1_000, file: '', ...timing },
      records,
      quietFrom: 0,
      endedAt: 5_000,
      live: [{ process: 'b', holders: ['b'] }],
      faults: 0,
    });
    const elected = (process: string, term: number, at: number, deadline: number) =>
      ({ at, process, kind: 'event', slot: 0, holder: process, type: 'elected', term, deadline }) as const;

    it('finds two beliefs at one instant, counted to each deadline', () => {
      const outcome = checkRun(history([elected('a', 1, 0, 600), elected('b', 2, 500, 5_000)]));
      expect(outcome.violations.map((v) => v.check)).toEqual(['overlap']);
    });

    it('ends a belief at a kill, and at a deadline passed without a renewal', () => {
      const killed = checkRun(
        history([elected('a', 1, 0, 600), { at: 100, process: 'a', kind: 'fault', type: 'kill' }, elected('b', 2, 200, 5_000)]),
      );
      const expired = checkRun(history([elected('a', 1, 0, 600), elected('b', 2, 601, 5_000)]));
      expect([killed.violations, expired.violations]).toEqual([[], []]);
    });

    it('finds a term that went back, and a slot left without a leader for longer than a late answer, a lease and a retry explain', () => {
      const outcome = checkRun(history([elected('b', 2, 0, 600), elected('a', 1, 700, 1_300)]));
      expect(outcome.violations.map((v) => v.check)).toEqual(['term-order', 'liveness']);
    });
  });
});

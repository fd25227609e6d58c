import { planFaults } from '../../chaos/fault-plan';

describe('planFaults', () => {
  const options = { seed: 2, duration: 20_000, lease: 600, slots: 2 };

  it('gives the same schedule for the same seed, and another for another seed', () => {
    expect(planFaults(options)).toEqual(planFaults(options));
    expect(planFaults({ ...options, seed: 3 })).not.toEqual(planFaults(options));
  });

  it('keeps faults between the warm-up and the quiet end, on existing slots, with lasting faults given a duration', () => {
    const faults = planFaults({ ...options, duration: 300_000, slots: 3 });
    expect(faults.length).toBeGreaterThan(100);
    for (const fault of faults) {
      expect(fault.at).toBeGreaterThanOrEqual(2 * options.lease);
      expect(fault.at).toBeLessThan(300_000 - 2 * options.lease);
      expect([0, 1, 2]).toContain(fault.slot);
      if (fault.kind === 'pause') expect(fault.duration).toBeGreaterThan(options.lease);
      if (fault.kind === 'lock') expect(fault.duration).toBeGreaterThan(0);
    }
    expect(new Set(faults.map((f) => f.kind))).toEqual(
      new Set([
        'kill',
        'kill-in-fenced',
        'kill-with-standbys',
        'pause',
        'stop',
        'resubscribe',
        'step-down',
        'handoff',
        'priority',
        'lock',
        'burst',
      ]),
    );
  });

  it('adds handoffs and priority changes from streams of their own: every other fault of a seed stays where it was', () => {
    const faults = planFaults({ ...options, duration: 300_000 });
    const handoffs = faults.filter((f) => f.kind === 'handoff');
    expect(handoffs.length).toBeGreaterThan(30);
    expect(faults.map((f) => f.at)).toEqual([...faults.map((f) => f.at)].sort((a, b) => a - b));
    // Seed 2's faults, as they were planned before handoffs came: as many, the first ones the same.
    const priorities = faults.filter((f) => f.kind === 'priority');
    expect(priorities.length).toBeGreaterThan(20);
    expect(new Set(priorities.map((f) => f.priority))).toEqual(new Set([0, 1, 2, 3]));
    const others = faults.filter((f) => f.kind !== 'handoff' && f.kind !== 'priority');
    expect(others).toHaveLength(250);
    expect(others.slice(0, 3).map((f) => f.kind)).toEqual(['kill-with-standbys', 'stop', 'kill']);
  });

  it('cuts hosts off for longer than a lease only when the processes run on several', () => {
    const cuts = planFaults({ ...options, duration: 300_000, hosts: true }).filter((f) => f.kind === 'cut-host');
    expect(cuts.length).toBeGreaterThan(10);
    for (const cut of cuts) expect(cut.duration).toBeGreaterThan(options.lease);
  });
});

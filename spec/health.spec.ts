import { LeadershipError, leadershipHealth } from '../src';

const until = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The health check as a probe reads it, fed with events as a campaign emits them.
describe('leadershipHealth', () => {
  const candidate = { slot: 0, holder: 'a', renewEvery: 50, expiresAfter: 300, retryEvery: 50 };
  const error = () => ({ type: 'error' as const, slot: 0, holder: 'a', error: new LeadershipError('DATABASE_BUSY', 'locked') });

  it('calls a candidate that follows, or leads with a lease that stands, healthy; one past its lease stale', () => {
    const health = leadershipHealth();
    const recording = health.begin(candidate);
    expect(health.check()).toEqual({ healthy: true, leading: false, candidates: [{ slot: 0, holder: 'a', status: 'following', healthy: true }] });
    const expiresAt = Date.now() + 300;
    recording.record({ type: 'elected', slot: 0, holder: 'a', term: 1, expiresAt });
    expect(health.check()).toMatchObject({ healthy: true, leading: true, candidates: [{ status: 'leading' }] });
    expect(health.check(expiresAt + 50)).toMatchObject({ healthy: false, leading: false, candidates: [{ status: 'stale', reason: 'its lease ended 50 ms ago' }] });
    recording.record({ type: 'lost', slot: 0, holder: 'a', term: 1, reason: 'expired' });
    expect(health.check(expiresAt + 50)).toMatchObject({ healthy: true, candidates: [{ status: 'following' }] });
    recording.end();
    expect(health.check()).toEqual({ healthy: true, leading: false, candidates: [] });
  });

  it('calls a candidate failing once its calls failed in a row for longer than failingAfter, and healthy again once they stop', async () => {
    const health = leadershipHealth({ failingAfter: 200 });
    const recording = health.begin(candidate);
    for (let i = 0; i < 6; i++, await until(20)) recording.record(error());
    expect(health.check()).toMatchObject({ healthy: true }); // a short streak is ridden out
    for (let i = 0; i < 6; i++, await until(20)) recording.record(error());
    expect(health.check()).toMatchObject({ healthy: false, candidates: [{ status: 'failing', reason: 'DATABASE_BUSY: locked' }] });
    await until(150); // longer than two calls of a healthy campaign: the database answers again
    expect(health.check()).toMatchObject({ healthy: true, candidates: [{ status: 'following' }] });
  });

  it('keeps a candidate whose stream ended with an error unhealthy', () => {
    const health = leadershipHealth();
    const recording = health.begin(candidate);
    recording.error?.(new LeadershipError('SCHEMA_MISMATCH', 'no such column'));
    recording.end();
    expect(health.check()).toMatchObject({ healthy: false, candidates: [{ status: 'ended', reason: 'SCHEMA_MISMATCH: no such column' }] });
  });

  it('judges a lease on the candidate’s own clock: a wall clock stepped ten minutes ahead leaves a leader leading', () => {
    const health = leadershipHealth();
    let clock = 1_000;
    const recording = health.begin({ ...candidate, now: () => clock });
    recording.record({ type: 'elected', slot: 0, holder: 'a', term: 1, expiresAt: 1_300 });
    const wall = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 600_000);
    try {
      expect(health.check()).toMatchObject({ healthy: true, leading: true });
      clock = 1_301;
      expect(health.check()).toMatchObject({ healthy: false, candidates: [{ status: 'stale', reason: 'its lease ended 1 ms ago' }] });
    } finally {
      wall.mockRestore();
    }
  });

  it('refuses a bad threshold at once', () => {
    expect(() => leadershipHealth({ failingAfter: 0 })).toThrow('Expected `failingAfter` to be');
  });
});

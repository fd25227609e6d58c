import Database from 'better-sqlite3';
import { LeadershipError, leaderHealth, leadershipHealth, observeLeader, observeLeadership } from '../src';
import { leaderMetrics, leadershipMetrics } from '../src/surface/metrics';
import { eventually } from '../test-kit/eventually';
import { temporaryDatabase, TemporaryDatabase } from './support/temporary-database';

// The health check as a probe reads it, fed with events as a campaign emits them.
describe('leadershipHealth', () => {
  const candidate = { slot: 0, holder: 'a', renewEvery: 50, expiresAfter: 300, retryEvery: 50 };
  const error = () => ({ type: 'error' as const, slot: 0, holder: 'a', error: new LeadershipError('DATABASE_BUSY', 'locked') });

  it('calls a candidate that follows, or leads with a lease that stands, healthy; one past its lease stale', () => {
    const health = leadershipHealth();
    const recording = health.begin(candidate);
    expect(health.check()).toEqual({
      healthy: true,
      leading: false,
      candidates: [{ slot: 0, holder: 'a', status: 'following', healthy: true }],
    });
    const expiresAt = Date.now() + 300;
    recording.record({ type: 'elected', slot: 0, holder: 'a', term: 1, expiresAt });
    expect(health.check()).toMatchObject({ healthy: true, leading: true, candidates: [{ status: 'leading' }] });
    expect(health.check(expiresAt + 50)).toMatchObject({
      healthy: false,
      leading: false,
      candidates: [{ status: 'stale', reason: 'its lease ended 50 ms ago' }],
    });
    recording.record({ type: 'lost', slot: 0, holder: 'a', term: 1, reason: 'expired' });
    expect(health.check(expiresAt + 50)).toMatchObject({ healthy: true, candidates: [{ status: 'following' }] });
    recording.end();
    expect(health.check()).toEqual({ healthy: true, leading: false, candidates: [] });
  });

  it('calls a candidate failing once its calls failed, with no answer between, for longer than failingAfter, and healthy once one answers', () => {
    const health = leadershipHealth({ failingAfter: 200 });
    // The candidate's clock, as its scheduler's now(): moved by hand, so that a busy machine cannot stretch a streak.
    let now = 0;
    const recording = health.begin({ ...candidate, now: () => now });
    // As observeLeadership tells it: each failed call, then its `error` event.
    const fail = () => {
      const event = error();
      recording.failed?.(event.error);
      recording.record(event);
    };
    for (let i = 0; i < 6; i++, now += 20) fail();
    expect(health.check()).toMatchObject({ healthy: true }); // a short streak (100 ms) is ridden out
    for (let i = 0; i < 6; i++, now += 20) fail();
    expect(health.check()).toMatchObject({ healthy: false, candidates: [{ status: 'failing', reason: 'DATABASE_BUSY: locked' }] });
    recording.answered?.(); // the database answered an attempt
    expect(health.check()).toMatchObject({ healthy: true, candidates: [{ status: 'following' }] });
    fail();
    expect(health.check()).toMatchObject({ healthy: true }); // a new streak starts from there
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

// A follower that only watches, as its probe reads it, fed by a real observeLeader.
describe('leaderHealth', () => {
  let file: TemporaryDatabase;
  beforeEach(() => {
    file = temporaryDatabase('delete'); // where a lock keeps readers out too
    file.open(); // the file exists before a read-only connection opens it
  });
  afterEach(() => file.remove());

  it('calls a watch healthy while its reads succeed, and says who leads and since when', async () => {
    const health = leaderHealth();
    expect(health.check()).toEqual({ healthy: true, led: false, watches: [] });
    const watching = observeLeader(file.open({ readonly: true }), { instrument: health, pollEvery: 20 }).subscribe();
    try {
      const before = Date.now();
      expect(health.check()).toEqual({
        healthy: true,
        led: false,
        watches: [{ slot: 0, status: 'watching', healthy: true, holder: null, term: null, since: expect.any(Number) }],
      });
      const candidate = observeLeadership(file.open(), { holder: 'a' }).subscribe();
      try {
        const led = await eventually('the leader seen', () => (health.check().led ? health.check() : undefined));
        expect(led).toEqual({
          healthy: true,
          led: true,
          watches: [{ slot: 0, status: 'watching', healthy: true, holder: 'a', term: 1, since: expect.any(Number) }],
        });
        expect(led.watches[0].since).toBeGreaterThanOrEqual(before - 5);
        const since = led.watches[0].since;
        await new Promise((resolve) => setTimeout(resolve, 100)); // reads go on, the leader stays
        expect(health.check().watches[0]).toMatchObject({ holder: 'a', term: 1, since });
      } finally {
        candidate.unsubscribe();
      }
      await eventually('the release seen', () => (health.check().led ? undefined : true));
      expect(health.check().watches[0]).toMatchObject({ holder: null, term: null, status: 'watching' });
    } finally {
      watching.unsubscribe();
    }
    expect(health.check()).toEqual({ healthy: true, led: false, watches: [] });
  });

  it('calls a watch failing once its reads failed in a row for longer than failingAfter, and healthy once one answers', async () => {
    const health = leaderHealth({ failingAfter: 200 });
    const watching = observeLeader(file.open({ readonly: true }), { instrument: health, pollEvery: 20 }).subscribe();
    const other = file.open();
    try {
      await eventually('a first read', () => health.check().watches[0]?.since !== null || undefined);
      other.exec('BEGIN EXCLUSIVE');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(health.check()).toMatchObject({ healthy: true }); // a short streak is ridden out
      const failing = await eventually('the watch failing', () => (health.check().healthy ? undefined : health.check()));
      expect(failing.watches[0]).toMatchObject({ status: 'failing', healthy: false, reason: expect.stringMatching(/^DATABASE_BUSY: /) });
      other.exec('COMMIT');
      await eventually('the watch healthy again', () => health.check().healthy || undefined);
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      watching.unsubscribe();
    }
  });

  it('keeps a watch whose stream ended with an error unhealthy', async () => {
    const health = leaderHealth();
    const db = new Database(':memory:');
    const failed = new Promise((resolve) => observeLeader(db, { instrument: health, pollEvery: 5 }).subscribe({ error: resolve }));
    db.close();
    await failed;
    expect(health.check()).toMatchObject({
      healthy: false,
      watches: [{ status: 'ended', reason: expect.stringMatching(/^DATABASE_CLOSED: /) }],
    });
  });

  it('refuses, at once and in types, an instrument made for the other stream', () => {
    const db = new Database(':memory:');
    try {
      // @ts-expect-error: a candidate's health check cannot read what a watch emits
      expect(() => observeLeader(db, { instrument: leadershipHealth() })).toThrow(
        new TypeError(
          'Expected `instrument` to be an instrument for observeLeader (leaderHealth() or leaderMetrics()), got one for observeLeadership (leadershipHealth() or leadershipMetrics())',
        ),
      );
      // @ts-expect-error: nor the other way round
      expect(() => observeLeadership(db, { instrument: leaderHealth() })).toThrow(
        new TypeError(
          'Expected `instrument` to be an instrument for observeLeadership (leadershipHealth() or leadershipMetrics()), got one for observeLeader (leaderHealth() or leaderMetrics())',
        ),
      );
      // @ts-expect-error: in a list too
      expect(() => observeLeader(db, { instrument: [leaderMetrics(), leadershipMetrics()] })).toThrow(/got one for observeLeadership/);
      // @ts-expect-error: and for the metrics
      expect(() => observeLeadership(db, { instrument: leaderMetrics() })).toThrow(/got one for observeLeader /);
      // An instrument of your own that does not say which stream it is for is taken as it is.
      expect(() => observeLeader(db, { instrument: { begin: () => ({ record: () => undefined, end: () => undefined }) } })).not.toThrow();
    } finally {
      db.close();
    }
  });

  it('refuses a bad threshold at once', () => {
    expect(() => leaderHealth({ failingAfter: 0 })).toThrow('Expected `failingAfter` to be');
    expect(() => leaderHealth({ failing: 1 } as never)).toThrow('Expected `config` to be an object with only failingAfter');
  });
});

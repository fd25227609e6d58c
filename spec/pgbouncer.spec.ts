import { Pool } from 'pg';
import { Subscription } from 'rxjs';
import { eventually } from '../test-kit/eventually';
import { pgbouncerUrlVariable, PoolMode, pgbouncerUrl } from '../test-kit/pgbouncer';
import { fenced, handOff, LeadershipEvent, observeLeadership } from '../src';
import { postgresLeaseStore } from '../src/postgres';
import { testSchema, TestSchema } from './support/postgres-database';

/** The PgBouncer of this run (see postgres-global-setup.ts), in `mode`. */
function bouncerUrl(mode: PoolMode): string {
  const base = process.env[pgbouncerUrlVariable];
  if (!base) throw new Error(`${pgbouncerUrlVariable} is not set: Jest's global setup starts PgBouncer and sets it`);
  return pgbouncerUrl(base, mode);
}

// Candidates that reach the server through a real PgBouncer (Debian's package), each with a
// pool of its own as separate processes would have, in both of its pooling modes.
describe.each(['transaction', 'session'] as const)('observeLeadership through PgBouncer in %s mode', (mode) => {
  const timing = { renewEvery: 100, expiresAfter: 1_000, retryEvery: 100 };
  let test: TestSchema;
  let pools: Pool[];
  let subscriptions: Subscription[];
  let warn: jest.SpyInstance;

  beforeEach(async () => {
    test = testSchema();
    await test.pool.query(`CREATE SCHEMA "${test.schema}"`);
    await test.pool.query(`CREATE TABLE "${test.schema}".ledger (term bigint NOT NULL)`);
    pools = [];
    subscriptions = [];
    // Jest's process is the test's own: the warnings the store emits are seen where they are sent.
    warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    warn.mockRestore();
    subscriptions.forEach((subscription) => subscription.unsubscribe());
    for (const pool of pools)
      await postgresLeaseStore(pool, { schema: test.schema })
        .settled()
        .catch(() => undefined);
    await Promise.all(pools.map((pool) => pool.end()));
    await test.drop();
  });

  /** A candidate with a pool of its own through PgBouncer, and what it emitted. */
  const candidate = (holder: string) => {
    const pool = new Pool({ connectionString: bouncerUrl(mode) }); // pg's defaults, as a new user has them
    pools.push(pool);
    const store = postgresLeaseStore(pool, { schema: test.schema });
    const events: LeadershipEvent[] = [];
    const subscription = observeLeadership(store, { ...timing, holder }).subscribe((event) => events.push(event));
    subscriptions.push(subscription);
    return { holder, store, events, subscription, leads: () => leads(events) };
  };
  const leads = (events: LeadershipEvent[]) => {
    const last = events.filter(({ type }) => type === 'elected' || type === 'lost').at(-1);
    return last?.type === 'elected' ? last : undefined;
  };
  const ownWarnings = () =>
    warn.mock.calls
      .filter(([, options]) => (options as { code?: string } | undefined)?.code === 'OBSERVE_LEADERSHIP_NO_NOTIFICATIONS')
      .map(([message]) => String(message));

  it('elects one leader, hands over with a larger term, and fences the deposed leader out', async () => {
    const candidates = ['a', 'b', 'c'].map(candidate);
    const first = await eventually('a leader', () => candidates.find((c) => c.leads()));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(candidates.filter((c) => c.leads())).toEqual([first]);
    const lease = first.leads() as LeadershipEvent & { type: 'elected' };
    await fenced(first.store, lease, (client) => client.query(`INSERT INTO "${test.schema}".ledger VALUES ($1)`, [lease.term]));

    first.subscription.unsubscribe();
    await first.store.settled();
    const next = await eventually('the next leader', () => candidates.find((c) => c !== first && c.leads()));
    const nextLease = next.leads() as LeadershipEvent & { type: 'elected' };
    expect(nextLease.term).toBeGreaterThan(lease.term);
    await expect(
      fenced(first.store, lease, (client) => client.query(`INSERT INTO "${test.schema}".ledger VALUES ($1)`, [lease.term])),
    ).rejects.toMatchObject({
      code: 'LEASE_LOST',
    });
    const { rows } = await test.pool.query(`SELECT term FROM "${test.schema}".ledger`);
    expect(rows.map((row) => Number(row.term))).toEqual([lease.term]);
    expect(candidates.flatMap((c) => c.events.filter(({ type }) => type === 'error'))).toEqual([]);
  });

  if (mode === 'transaction') {
    it('finds that notifications cannot reach it, says so once for each store, its followers poll instead, and a handoff changes nothing', async () => {
      const candidates = ['a', 'b'].map(candidate);
      const first = await eventually('a leader', () => candidates.find((c) => c.leads()));
      const follower = candidates.find((c) => c !== first) as (typeof candidates)[number];
      // Both stores listen: the follower's for releases, the leader's for handoff requests.
      await eventually('the warnings', () => ownWarnings().length >= 2);
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // many polls later
      expect(ownWarnings()).toHaveLength(2);
      expect(ownWarnings()[0]).toContain('poll instead');
      expect(follower.store.capabilities.changes.isWatching()).toBe(false);
      // No message arrives: the named follower cannot answer that it stands by, nor the leader
      // hear a request. Nothing moves, and handOff says which.
      await expect(handOff(follower.store, { to: follower.holder, within: 1_000 })).rejects.toMatchObject({
        code: 'HANDOFF_NOT_STANDING',
        message: expect.stringContaining('No other standing candidate answered'),
      });
      await expect(handOff(follower.store, { within: 1_000 })).rejects.toMatchObject({ code: 'HANDOFF_UNANSWERED' });
      expect(first.leads()).toBeDefined();
      first.subscription.unsubscribe();
      await eventually('the follower leads', () => follower.leads());
      expect(ownWarnings()).toHaveLength(2);
    });
    it('finds that out for every store, while other clients keep the pooled server connections busy', async () => {
      // The other backends that once listened deliver notifications to whichever client they
      // serve at that instant: before each probe had to be heard on the backend that listened,
      // about 1 store in 100 believed, from such a chance delivery, that notifications reach it.
      const busy = new Pool({ connectionString: bouncerUrl(mode) });
      pools.push(busy);
      let running = true;
      const traffic = (async () => {
        while (running) await busy.query('SELECT pg_sleep(0.002)');
      })();
      const stores = 300;
      try {
        for (let made = 1; made <= stores; made += 1) {
          const pool = new Pool({ connectionString: bouncerUrl(mode) });
          pools.push(pool);
          const { changes } = postgresLeaseStore(pool, { schema: test.schema }).capabilities;
          const stop = changes.watch(() => undefined);
          await eventually(`store ${made} finds out`, () => ownWarnings().length === made || changes.isWatching());
          expect({ made, watching: changes.isWatching() }).toEqual({ made, watching: false });
          stop();
        }
      } finally {
        running = false;
        await traffic;
      }
      expect(ownWarnings()).toHaveLength(stores);
    });
  } else {
    it('listens for releases as on a direct connection, and says nothing', async () => {
      const candidates = ['a', 'b'].map(candidate);
      const first = await eventually('a leader', () => candidates.find((c) => c.leads()));
      const follower = candidates.find((c) => c !== first) as (typeof candidates)[number];
      await eventually('the watch', () => follower.store.capabilities.changes.isWatching());
      first.subscription.unsubscribe();
      await eventually('the follower leads', () => follower.leads());
      expect(ownWarnings()).toEqual([]);
    });
  }
});

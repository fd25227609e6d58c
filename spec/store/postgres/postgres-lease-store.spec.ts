import { Pool } from 'pg';
import { asyncScheduler, lastValueFrom, Subscription, tap, toArray } from 'rxjs';
import { fenced, LeaderState, LeadershipEvent, observeLeader, observeLeadership } from '../../../src';
import { postgresLeaseStore, PostgresLeaseStore } from '../../../src/postgres';
import { eventually } from '../../../test-kit/eventually';
import { testDatabaseUrl, testSchema, TestSchema } from '../../support/postgres-database';
import { at } from '../../support/clock-reading';

const until = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('postgresLeaseStore', () => {
  let test: TestSchema;
  let pool: Pool;
  let store: PostgresLeaseStore;
  let subscriptions: Subscription[];
  beforeEach(() => {
    test = testSchema({ application_name: 'observe-leadership-spec' });
    pool = test.pool;
    store = postgresLeaseStore(pool, { schema: test.schema });
    subscriptions = [];
  });
  afterEach(async () => {
    subscriptions.forEach((subscription) => subscription.unsubscribe());
    await store.settled().catch(() => undefined);
    await test.drop();
  });

  const acquire = (holder: string, expiresAfter = 60_000, now = Date.now()) => store.acquire(0, holder, at(now), expiresAfter);
  /** Makes the schema, leaving the slot free. */
  const makeSchema = async () => {
    const { lease } = await acquire('setup');
    await store.release({ slot: 0, ...lease });
  };

  describe('config', () => {
    it('is one store per pool and table', () => {
      expect(postgresLeaseStore(pool, { schema: test.schema })).toBe(store);
      expect(postgresLeaseStore(pool, { schema: test.schema, table: 'other' })).not.toBe(store);
    });

    it.each([
      [() => postgresLeaseStore({} as Pool), TypeError, 'Expected `pool` to be a pg Pool'],
      [() => postgresLeaseStore(pool, { tabel: 'x' } as never), TypeError, 'got `"tabel"`'],
      [() => postgresLeaseStore(pool, { table: 'x'.repeat(59) }), RangeError, 'Expected `table` to be a non-empty string of at most 58'],
      [() => postgresLeaseStore(pool, { queryTimeout: 0 }), RangeError, 'Expected `queryTimeout` to be an integer from 1'],
    ])('throws at once for bad arguments (%#)', (call, kind, message) => {
      expect(call).toThrow(kind);
      expect(call).toThrow(message);
    });
  });

  describe('schema', () => {
    it('creates the table and its term sequence in the schema and under the name given', async () => {
      const named = postgresLeaseStore(pool, { schema: test.schema, table: 'Leases "of" jobs' });
      await named.acquire(0, 'a', at(Date.now()), 1_000);
      const { rows } = await pool.query(
        `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1
         UNION ALL SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = $1 ORDER BY name`,
        [test.schema],
      );
      expect(rows.map(({ name }) => name)).toEqual(['Leases "of" jobs', 'Leases "of" jobs_term']);
    });

    it('refuses a table of another shape, and a campaign on it ends with SCHEMA_MISMATCH', async () => {
      await pool.query(
        `CREATE SCHEMA "${test.schema}"; CREATE TABLE "${test.schema}".worker_leadership (slot int, holder text, expires_at text)`,
      );
      await expect(acquire('a')).rejects.toMatchObject({ code: 'SCHEMA_MISMATCH' });
      const events = lastValueFrom(observeLeadership(store).pipe(toArray()));
      await expect(events).rejects.toMatchObject({ code: 'SCHEMA_MISMATCH' });
    });

    it('is created once when many candidates start together', async () => {
      const attempts = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((holder) => acquire(holder)));
      expect(attempts.filter(({ acquired }) => acquired)).toHaveLength(1);
    });
  });

  describe("the server's clock", () => {
    it.each([
      ['ten seconds ahead', 10_000],
      ['ten seconds behind', -10_000],
    ])('times every lease, whatever the clock of a candidate %s says', async (_, skew) => {
      await acquire('a', 2_000);
      const follower = await acquire('b', 2_000, Date.now() + skew);
      expect(follower.acquired).toBe(false);
      expect(follower.expiresIn).toBeGreaterThan(1_000);
      expect(follower.expiresIn).toBeLessThanOrEqual(2_000);
    });

    it('lets candidates whose clocks are ten seconds apart elect one leader', async () => {
      const skewed = (skew: number) => ({ now: () => Date.now() + skew, schedule: asyncScheduler.schedule.bind(asyncScheduler) });
      const timing = { renewEvery: 100, expiresAfter: 600, retryEvery: 100 };
      const events: Array<[string, LeadershipEvent['type']]> = [];
      for (const [holder, skew] of [
        ['ahead', 10_000],
        ['behind', -10_000],
        ['true', 0],
      ] as const) {
        subscriptions.push(
          observeLeadership(store, { ...timing, holder, scheduler: skewed(skew) as never }).subscribe((event) =>
            events.push([holder, event.type]),
          ),
        );
      }
      // Two leases' worth of renewals by whoever leads, while the others follow.
      await eventually('ten renewals', () => events.filter(([, type]) => type === 'renewed').length >= 10);
      expect(events.filter(([, type]) => type === 'elected')).toHaveLength(1);
      expect(events.filter(([, type]) => type === 'lost' || type === 'error')).toEqual([]);
    });
  });

  describe('faults', () => {
    const timing = { renewEvery: 100, expiresAfter: 800, retryEvery: 100 };

    it('answers DATABASE_BUSY, not an endless loop, when the slot is freed again between each take that found it held and the read after it', async () => {
      await makeSchema();
      // What a crowd taking and releasing it as fast as this store reads would do, three times.
      const oneTry = jest.spyOn(store as unknown as { tryToTake(): Promise<undefined> }, 'tryToTake').mockResolvedValue(undefined);
      await expect(acquire('b')).rejects.toMatchObject({ code: 'DATABASE_BUSY', message: expect.stringContaining('3 takes') });
      expect(oneTry).toHaveBeenCalledTimes(3);
      oneTry.mockRestore();
      expect((await acquire('b')).acquired).toBe(true);
    });

    it('ends the stream with DATABASE_CLOSED once the pool is ended', async () => {
      let elected = false;
      const events = lastValueFrom(
        observeLeadership(store, timing).pipe(
          tap(({ type }) => (elected ||= type === 'elected')),
          toArray(),
        ),
      );
      await eventually('an election', () => elected);
      // pool.end() resolves once every connection given out is back: the session's comes back
      // at the store's next statement, which meets the ended pool, so the stream may end first.
      const closed = expect(events).rejects.toMatchObject({ code: 'DATABASE_CLOSED' });
      await pool.end();
      await closed;
      test = { ...test, drop: async () => undefined };
    });

    it('ends the stream with ACCESS_DENIED when the database does not exist', async () => {
      const wrong = new Pool({ connectionString: testDatabaseUrl().replace(/\/[^/]*$/, '/no_such_database') });
      try {
        const events = lastValueFrom(observeLeadership(postgresLeaseStore(wrong), timing).pipe(toArray()));
        await expect(events).rejects.toMatchObject({ code: 'ACCESS_DENIED' });
      } finally {
        await wrong.end();
      }
    });

    it('goes on leading when the server kills its connections, each call taking another one', async () => {
      const events: LeadershipEvent[] = [];
      subscriptions.push(observeLeadership(store, timing).subscribe((event) => events.push(event)));
      await eventually('an election', () => events.some(({ type }) => type === 'elected'));
      const killed = await killConnections();
      expect(killed).toBeGreaterThan(0);
      const renewals = () => events.filter(({ type }) => type === 'renewed').length;
      const before = renewals();
      await eventually('three more renewals', () => renewals() >= before + 3);
      expect(events.filter(({ type }) => type === 'elected' || type === 'lost')).toHaveLength(1);
    });

    it('listens again for releases after its listening connection was killed', async () => {
      const unwatch = store.capabilities.changes.watch(() => undefined);
      try {
        await eventually('the watch', () => store.capabilities.changes.isWatching());
        await killConnections();
        await eventually('the watch to stop', () => !store.capabilities.changes.isWatching());
        await acquire('a').catch(() => acquire('a')); // any operation tries again (the first may meet a killed connection)
        await eventually('the watch', () => store.capabilities.changes.isWatching());
      } finally {
        unwatch();
      }
    });

    it('makes a call that gets no answer in time an error event, and steps down at the end of its lease', async () => {
      const slow = postgresLeaseStore(pool, { schema: test.schema, queryTimeout: 150 });
      const events: Array<LeadershipEvent & { at: number }> = [];
      subscriptions.push(observeLeadership(slow, timing).subscribe((event) => events.push({ ...event, at: Date.now() })));
      await eventually('an election', () => events.some(({ type }) => type === 'elected'));
      // Another connection holds the lease row: renewals wait for it, and time out.
      const blocker = await pool.connect();
      await blocker.query(`BEGIN; SELECT * FROM "${test.schema}".worker_leadership FOR UPDATE`);
      try {
        await eventually('the loss', () => events.some(({ type }) => type === 'lost'));
      } finally {
        await blocker.query('ROLLBACK');
        blocker.release();
      }
      const errors = events.filter((event) => event.type === 'error');
      expect(errors.length).toBeGreaterThan(0);
      expect(errors[0]).toMatchObject({ error: { code: 'DATABASE_ERROR', message: expect.stringContaining('timeout') } });
      expect(events.find(({ type }) => type === 'lost')).toMatchObject({ reason: 'expired' });
    });

    it('reports a release that failed to whoever awaits settled(), and to nobody else', async () => {
      const events: LeadershipEvent[] = [];
      const subscription = observeLeadership(store, timing).subscribe((event) => events.push(event));
      await eventually('an election', () => events.some(({ type }) => type === 'elected'));
      await pool.query(`DROP TABLE "${test.schema}".worker_leadership`);
      subscription.unsubscribe();
      await expect(store.settled()).rejects.toMatchObject({ code: 'DATABASE_ERROR' });
      await expect(store.settled()).resolves.toBeUndefined(); // reported once
    });
  });

  describe('connections', () => {
    /** The connections a pool of its own name holds on the server now. */
    const held = async (name: string) =>
      (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`, [name])).rows[0].n as number;
    const mostHeld = async (name: string, during: number) => {
      let most = 0;
      for (const end = Date.now() + during; Date.now() < end; await until(20)) most = Math.max(most, await held(name));
      return most;
    };

    it('holds one connection for any number of candidates and observers of a store, leading or following, and at most two meanwhile', async () => {
      const name = `budget-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
      const own = new Pool({ connectionString: testDatabaseUrl(), application_name: name });
      try {
        const slots = [0, 1, 2, 3, 4, 5, 6, 7];
        for (const slot of slots) await store.acquire(slot, 'elsewhere', at(Date.now()), 1_500);
        const candidates = postgresLeaseStore(own, { schema: test.schema });
        const timing = { renewEvery: 50, expiresAfter: 1_000, retryEvery: 50 };
        const events: LeadershipEvent[] = [];
        for (const slot of slots)
          subscriptions.push(observeLeadership(candidates, { ...timing, slot }).subscribe((event) => events.push(event)));
        subscriptions.push(observeLeader(candidates, { slot: 0, pollEvery: 50 }).subscribe());
        await eventually('the watch', () => candidates.capabilities.changes.isWatching());
        expect(await mostHeld(name, 1_000)).toBeLessThanOrEqual(2); // following every slot
        await eventually('every slot led here', () => events.filter(({ type }) => type === 'elected').length === slots.length);
        expect(await mostHeld(name, 1_000)).toBeLessThanOrEqual(2); // leading every slot
        // While something listens, everything goes on the listening connection alone, once
        // the pool closed its idle one (after idleTimeoutMillis, 10 s by default).
        let now = await held(name);
        for (const end = Date.now() + 15_000; now !== 1 && Date.now() < end; await until(100)) now = await held(name);
        expect(now).toBe(1);
        expect(events.filter(({ type }) => type === 'error' || type === 'lost')).toEqual([]);
      } finally {
        subscriptions.forEach((subscription) => subscription.unsubscribe());
        await postgresLeaseStore(own, { schema: test.schema })
          .settled()
          .catch(() => undefined);
        await own.end();
      }
    });
  });

  describe('notifications', () => {
    it('lets an observer that polls once a minute see an election and a release within milliseconds', async () => {
      await makeSchema();
      const states: LeaderState[] = [];
      subscriptions.push(observeLeader(store, { pollEvery: 60_000 }).subscribe((state) => states.push(state)));
      await eventually('the watch', () => store.capabilities.changes.isWatching());
      const other = testSchema();
      try {
        const elsewhere = postgresLeaseStore(other.pool, { schema: test.schema });
        const { lease } = await elsewhere.acquire(0, 'b', at(Date.now()), 60_000);
        await eventually('the election seen', () => states.at(-1)?.holder === 'b', 2_000);
        await elsewhere.release({ slot: 0, holder: 'b', term: lease.term });
        await eventually('the release seen', () => states.at(-1)?.holder === null, 2_000);
      } finally {
        await other.pool.end();
      }
    });

    it('lets one of a crowd woken by a release write, and turns the others away at once instead of queueing them on the row', async () => {
      await makeSchema();
      // Another follower of the crowd, in the middle of its attempt: it holds the slot's gate.
      const other = await pool.connect();
      try {
        await other.query('BEGIN');
        await other.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`elected "${test.schema}"."worker_leadership"`]);
        const started = Date.now();
        await expect(store.acquire(0, 'b', at(Date.now()), 60_000, { waitForLock: false })).rejects.toMatchObject({
          code: 'DATABASE_BUSY',
        });
        expect(Date.now() - started).toBeLessThan(1_000); // not after the other's transaction
        // An attempt timed by the lease, not by a release, is not turned away.
        expect((await store.acquire(0, 'b', at(Date.now()), 60_000)).acquired).toBe(true);
      } finally {
        await other.query('ROLLBACK');
        other.release();
      }
      expect((await store.acquire(1, 'c', at(Date.now()), 60_000, { waitForLock: false })).acquired).toBe(true);
    });

    it('gives standby places, which alone listen for releases, to three followers, and frees a place with its session', async () => {
      await acquire('leader'); // makes the schema, and holds the slot
      const tag = `standby-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
      const others = Array.from(
        { length: 5 },
        (_, i) => new Pool({ connectionString: testDatabaseUrl(), application_name: `${tag}-${i}` }),
      );
      const stores = others.map((other) => postgresLeaseStore(other, { schema: test.schema }));
      const standBy = (i: number) => stores[i].capabilities.standby.standBy(0, `f${i}`, at(Date.now()), 60_000, 3);
      try {
        const held = await Promise.all(stores.map((_, i) => standBy(i)));
        expect(held.filter(Boolean)).toHaveLength(3);
        const [first, waiting, last] = [held.indexOf(true), held.indexOf(false), held.lastIndexOf(false)];
        expect(await standBy(first)).toBe(true); // kept
        expect(await standBy(waiting)).toBe(false);
        // A standby whose connection ends (its process died, say) frees its place.
        await pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`${tag}-${first}`]);
        let taken = false;
        for (const end = Date.now() + 10_000; !taken && Date.now() < end; await until(50)) taken = await standBy(waiting);
        expect(taken).toBe(true);
        // Winning the slot gives the place up, right after the answer (nothing waits for it).
        await pool.query(`DELETE FROM "${test.schema}".worker_leadership`);
        expect((await stores[waiting].acquire(0, `f${waiting}`, at(Date.now()), 60_000)).acquired).toBe(true);
        let freed = false;
        for (const end = Date.now() + 10_000; !freed && Date.now() < end; await until(50)) freed = await standBy(last);
        expect(freed).toBe(true);
      } finally {
        await Promise.all(
          stores.map((each, i) => Promise.resolve(each.capabilities.standby.leaveStandby(0, `f${i}`)).catch(() => undefined)),
        );
        await Promise.all(stores.map((each) => each.settled().catch(() => undefined)));
        await Promise.all(others.map((other) => other.end()));
      }
    });

    it('lets an observer see a change made while its store was still beginning to listen', async () => {
      // The store's LISTEN reaches the server a second late: the election below is notified before.
      pool.on('connect', (client) => {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        const isListen = (config: unknown) => (config as { text?: unknown })?.text?.toString().startsWith('LISTEN') === true;
        const slowed = (...args: unknown[]) => (isListen(args[0]) ? until(1_000).then(() => query(...args)) : query(...args));
        Object.assign(client, { query: slowed });
      });
      await makeSchema();
      const states: LeaderState[] = [];
      subscriptions.push(observeLeader(store, { pollEvery: 60_000 }).subscribe((state) => states.push(state)));
      await eventually('the first look', () => states.length === 1);
      const other = testSchema();
      try {
        await postgresLeaseStore(other.pool, { schema: test.schema }).acquire(0, 'b', at(Date.now()), 60_000);
        expect(store.capabilities.changes.isWatching()).toBe(false);
        // Seen once the store hears, not at the next poll a minute later.
        await eventually('the election seen', () => states.at(-1)?.holder === 'b', 10_000);
      } finally {
        await other.pool.end();
      }
    });

    it('does not wake following candidates when another one is elected, only when the slot is released', async () => {
      await makeSchema();
      let woken: string[] = [];
      const unwatch = store.capabilities.changes.watch(() => woken.push('follower'));
      const unobserve = store.capabilities.changes.watch(() => woken.push('observer'), { elections: true });
      try {
        await eventually('the watch', () => store.capabilities.changes.isWatching());
        woken = []; // both were told, as it began, that changes may have gone unheard
        const { lease } = await acquire('b');
        await eventually('the election heard', () => woken.includes('observer'));
        expect(woken).toEqual(['observer']);
        await store.release({ slot: 0, holder: 'b', term: lease.term });
        await eventually('the release heard', () => woken.length === 3);
        expect(woken.slice(1).sort()).toEqual(['follower', 'observer']);
      } finally {
        unwatch();
        unobserve();
      }
    });
  });

  describe('fenced', () => {
    const ledger = () => `"${test.schema}".ledger`;
    beforeEach(async () => {
      await makeSchema();
      await pool.query(`CREATE TABLE ${ledger()} (id serial, term bigint NOT NULL)`);
    });

    it('makes a takeover wait until the fenced transaction ends, so its writes come first', async () => {
      const { lease } = await acquire('a', 300);
      const seen = await acquire('b'); // a follower's first look: its count starts
      const order: string[] = [];
      const work = fenced(store, { slot: 0, holder: 'a', term: lease.term }, async (client) => {
        await client.query('SELECT pg_sleep(0.6)'); // busy while the lease runs out on the server
        await client.query(`INSERT INTO ${ledger()} (term) VALUES ($1)`, [lease.term]);
        order.push('fenced work committing');
      });
      await until(400);
      const takeover = store
        .acquire(0, 'b', at(Date.now()), 60_000, { outwaited: seen.lease })
        .then((result) => (order.push('taken over'), result));
      await work;
      const taken = await takeover;
      expect(taken.acquired).toBe(true);
      expect(order).toEqual(['fenced work committing', 'taken over']);
    });

    it("lets the server end a transaction that stalls past the lease's end, which writes nothing and lets the takeover in", async () => {
      const { lease } = await acquire('a', 300);
      const seen = await acquire('b');
      const work = fenced(store, { slot: 0, holder: 'a', term: lease.term }, async (client) => {
        await client.query(`INSERT INTO ${ledger()} (term) VALUES ($1)`, [lease.term]);
        await until(2_000); // idle in the transaction, as a stalled process would be
        await client.query('SELECT 1');
      });
      const settled = work.then(
        () => 'committed',
        () => 'failed',
      );
      await until(400);
      const started = Date.now();
      expect((await store.acquire(0, 'b', at(Date.now()), 60_000, { outwaited: seen.lease })).acquired).toBe(true);
      expect(Date.now() - started).toBeLessThan(1_500); // not after the 2 s stall
      expect(await settled).toBe('failed');
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${ledger()}`)).rows[0].n).toBe(0);
    });

    /** Renews `lease` while another transaction (the leader's own `fenced`, stalled) holds the row for `ms`. */
    const renewBehindTheRowLock = async (lease: { term: number }, ms: number) => {
      const blocker = await pool.connect();
      await blocker.query(`BEGIN; SELECT * FROM "${test.schema}".worker_leadership FOR UPDATE`);
      const renewal = store.renew({ slot: 0, holder: 'a', term: lease.term }, at(Date.now()), 60_000);
      await until(ms);
      await blocker.query('ROLLBACK');
      blocker.release();
      return renewal;
    };

    it('renews nothing when the renewal waited for the row until after the lease ended, so that a follower takes over at once', async () => {
      const { lease } = await acquire('a', 500);
      const seen = await acquire('b');
      expect(await renewBehindTheRowLock(lease, 800)).toBe(false);
      expect((await store.acquire(0, 'b', at(Date.now()), 60_000, { outwaited: seen.lease })).acquired).toBe(true);
    });

    it('renews a lease whose row was held for a while if the lease still stood when the wait ended, and an expired lease nobody took', async () => {
      const { lease } = await acquire('a', 2_000);
      expect(await renewBehindTheRowLock(lease, 300)).toBe(true);
      const { lease: short } = await store.acquire(1, 'c', at(Date.now()), 1);
      await until(20);
      expect(await store.renew({ slot: 1, holder: 'c', term: short.term }, at(Date.now()), 60_000)).toBe(true);
    });

    it("passes the work's own errors through untouched, and rolls back", async () => {
      const { lease } = await acquire('a');
      const mistake = new Error('mine');
      await expect(
        fenced(store, { slot: 0, holder: 'a', term: lease.term }, async (client) => {
          await client.query(`INSERT INTO ${ledger()} (term) VALUES (1)`);
          throw mistake;
        }),
      ).rejects.toBe(mistake);
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${ledger()}`)).rows[0].n).toBe(0);
    });
  });
});

/** Ends every connection of this pool's application on the server, as a proxy or a DBA might. */
async function killConnections(): Promise<number> {
  const killer = new Pool({ connectionString: testDatabaseUrl(), max: 1 });
  try {
    const { rows } = await killer.query(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
       WHERE application_name = 'observe-leadership-spec' AND pid <> pg_backend_pid()`,
    );
    return rows.filter(({ killed }) => killed).length;
  } finally {
    await killer.end();
  }
}

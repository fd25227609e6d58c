import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'pg';
import { lastValueFrom, Subscription, take, toArray } from 'rxjs';
import { ElectedEvent, fenced, LeadershipEvent, observeLeader, observeLeadership } from '../../../src';
import { postgresLeaseStore } from '../../../src/postgres';
import { eventually } from '../../../test-kit/eventually';
import { testDatabaseUrl, testSchema, TestSchema } from '../../support/postgres-database';

/**
 * The roles of docs/postgresql.md ("Least privileges") on the real server, each with the
 * outcome and message the docs give. The table is made by hand with the docs' own block.
 */
const documentedSetup = (() => {
  const page = readFileSync(join(__dirname, '../../../docs/postgresql.md'), 'utf8');
  const section = page.slice(page.indexOf('## Least privileges'));
  const [, block] = /```sql\n([\s\S]*?)```/.exec(section) ?? [];
  if (!block) throw new Error('docs/postgresql.md has no sql block under "Least privileges"');
  return block;
})();

describe('postgresLeaseStore with the privileges docs/postgresql.md lists', () => {
  let test: TestSchema;
  let roles: string[];
  let pools: Pool[];
  let subscriptions: Subscription[];
  let warnings: jest.SpyInstance;
  const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

  beforeEach(async () => {
    test = testSchema();
    roles = [];
    pools = [];
    subscriptions = [];
    warnings = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    await test.pool.query(`CREATE SCHEMA "${test.schema}"`);
  });
  afterEach(async () => {
    subscriptions.forEach((subscription) => subscription.unsubscribe());
    warnings.mockRestore();
    await Promise.all(pools.map((pool) => pool.end()));
    for (const role of roles) await test.pool.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
    await test.drop();
  });

  /** A role that may log in and use the spec's schema, and a pool that logs in as it. */
  const login = async (name: string) => {
    const role = `${name}_${suffix}`;
    roles.push(role);
    await test.pool.query(`CREATE ROLE ${role} LOGIN; GRANT USAGE ON SCHEMA "${test.schema}" TO ${role}`);
    const url = new URL(testDatabaseUrl());
    url.username = role;
    const pool = new Pool({ connectionString: url.toString(), connectionTimeoutMillis: 5_000 });
    pools.push(pool);
    return { role, pool, store: postgresLeaseStore(pool, { schema: test.schema }) };
  };

  /** Runs the docs' block in the spec's schema, as the owner, for the roles named; `lease_ms` left out if asked. */
  const makeByHand = async ({
    worker,
    watcher,
    leaseLength = true,
    advertisedColumn = true,
  }: {
    worker: string;
    watcher: string;
    leaseLength?: boolean;
    advertisedColumn?: boolean;
  }) => {
    let setup = leaseLength ? documentedSetup : documentedSetup.replace(/,\s*lease_ms bigint/, '');
    if (!advertisedColumn) setup = setup.replace(/,\s*advertised text/, '');
    const statements = setup.replace(/\bworker\b/g, worker).replace(/\bwatcher\b/g, watcher);
    const owner = await test.pool.connect();
    try {
      await owner.query(`SET search_path TO "${test.schema}"; ${statements}`);
    } finally {
      owner.release();
    }
  };

  /** A candidate that stays subscribed until the spec ends: what it saw, and its first election. */
  const campaign = (store: ReturnType<typeof postgresLeaseStore>, config = {}) => {
    const seen: LeadershipEvent[] = [];
    subscriptions.push(observeLeadership(store, config).subscribe((event) => seen.push(event)));
    const elected = eventually('elected', () => seen.find((event): event is ElectedEvent => event.type === 'elected'));
    return { seen, elected };
  };
  const leaseLengthColumn = async () =>
    (
      await test.pool.query(
        `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'worker_leadership' AND column_name = 'lease_ms'`,
        [test.schema],
      )
    ).rows[0].n === 1;
  const warned = () => warnings.mock.calls.filter(([, options]) => String(options?.code).startsWith('OBSERVE_LEADERSHIP'));

  it('lets a role granted only what the docs list campaign, observe and fence on a table made by hand, asking for nothing more', async () => {
    const worker = await login('worker');
    const watcher = await login('watcher');
    await makeByHand({ worker: worker.role, watcher: watcher.role });

    const elected = await campaign(worker.store).elected;
    expect(elected).toMatchObject({ type: 'elected', term: 1 });
    const [state] = await lastValueFrom(observeLeader(watcher.store).pipe(take(1), toArray()));
    expect(state).toMatchObject({ holder: elected.holder, term: 1 });
    await expect(fenced(worker.store, elected, async (client) => (await client.query('SELECT 1 AS one')).rows[0].one)).resolves.toBe(1);
    expect(warned()).toEqual([]);
  });

  it('advertises through the documented table', async () => {
    const worker = await login('worker');
    const watcher = await login('watcher');
    await makeByHand({ worker: worker.role, watcher: watcher.role });
    const first = await campaign(worker.store, { advertise: 'http://10.0.0.1:8080' }).elected;
    expect(first.advertised).toBe('http://10.0.0.1:8080');
    const [seen] = await lastValueFrom(observeLeader(watcher.store).pipe(take(1), toArray()));
    expect(seen).toMatchObject({ holder: first.holder, advertised: 'http://10.0.0.1:8080' });
  });

  it.each([
    { left: ['lease_ms'], as: 'worker' },
    { left: ['advertised'], as: 'worker' },
    { left: ['lease_ms', 'advertised'], as: 'owner' },
  ])(
    'ends a candidate and an observer ($as) on a table made without $left with SCHEMA_MISMATCH and the statement that adds it, and campaigns once it ran',
    async ({ left, as }) => {
      const worker = await login(as);
      const watcher = await login('watcher');
      await makeByHand({
        worker: worker.role,
        watcher: watcher.role,
        leaseLength: !left.includes('lease_ms'),
        advertisedColumn: !left.includes('advertised'),
      });
      if (as === 'owner') await test.pool.query(`ALTER TABLE "${test.schema}".worker_leadership OWNER TO ${worker.role}`);
      const table = `"${test.schema}"."worker_leadership"`;
      const additions = left.map((column) => `ALTER TABLE ${table} ADD COLUMN ${column} ${column === 'lease_ms' ? 'bigint' : 'text'};`);
      const expected = {
        code: 'SCHEMA_MISMATCH',
        message: `${table} has no ${left.join(' or ')} column: run once, as the table's owner: ${additions.join(' ')}`,
      };

      await expect(lastValueFrom(observeLeadership(worker.store))).rejects.toMatchObject(expected);
      await expect(lastValueFrom(observeLeader(watcher.store))).rejects.toMatchObject(expected);
      expect(await leaseLengthColumn()).toBe(!left.includes('lease_ms'));

      await test.pool.query(additions.join(' '));
      const elected = await campaign(worker.store, { advertise: 'http://10.0.0.1:8080' }).elected;
      const [state] = await lastValueFrom(observeLeader(watcher.store).pipe(take(1), toArray()));
      expect(state).toMatchObject({ holder: elected.holder, advertised: 'http://10.0.0.1:8080' });
    },
  );

  it('ends the stream of a candidate whose role may only read with DATABASE_READONLY at once, naming what it lacks; watching needs nothing more', async () => {
    const worker = await login('worker');
    const watcher = await login('watcher');
    await makeByHand({ worker: worker.role, watcher: watcher.role });
    const leader = await campaign(worker.store).elected;

    const error = await lastValueFrom(observeLeadership(watcher.store)).catch((failure: unknown) => failure);
    expect(error).toMatchObject({
      code: 'DATABASE_READONLY',
      message: expect.stringContaining(
        `Role ${watcher.role} may not campaign: it lacks INSERT, UPDATE, DELETE on "${test.schema}"."worker_leadership", USAGE on "${test.schema}"."worker_leadership_term"`,
      ),
    });
    const [state] = await lastValueFrom(observeLeader(watcher.store).pipe(take(1), toArray()));
    expect(state.holder).toBe(leader.holder);
  });

  it('names the term sequence when only it is out of reach', async () => {
    const worker = await login('worker');
    const watcher = await login('watcher');
    await makeByHand({ worker: worker.role, watcher: watcher.role });
    await test.pool.query(`REVOKE USAGE ON SEQUENCE "${test.schema}".worker_leadership_term FROM ${worker.role}`);
    const error = await lastValueFrom(observeLeadership(worker.store)).catch((failure: unknown) => failure);
    expect(error).toMatchObject({
      code: 'DATABASE_READONLY',
      message: expect.stringContaining(`Role ${worker.role} may not campaign: it lacks USAGE on "${test.schema}"."worker_leadership_term"`),
    });
  });

  it('names the missing table, and where to learn to make it, when nothing was made and the role may create nothing', async () => {
    const worker = await login('worker');
    const error = await lastValueFrom(observeLeadership(worker.store)).catch((failure: unknown) => failure);
    expect(error).toMatchObject({
      code: 'DATABASE_READONLY',
      message: expect.stringMatching(
        new RegExp(
          `^the lease table "${test.schema}"\\."worker_leadership" does not exist and this role may not create it \\(permission denied for schema ${test.schema}\\): create it as docs/postgresql\\.md shows`,
        ),
      ),
    });
  });
});

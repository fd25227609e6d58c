import { Pool } from 'pg';
import { postgresLedgerTable } from '../test-kit/chaos-database';
import { eventually } from '../test-kit/eventually';
import type { WorkerRecord } from '../test-kit/history';
import type { WorkerOptions } from '../test-kit/worker-options';
import { ChildWorker, explainFailure } from './support/child-worker';
import { networkNamespace, NetworkNamespace } from '../test-kit/network-namespace';
import { testDatabaseUrl, testSchema, TestSchema } from './support/postgres-database';
import { startTcpProxy, TcpProxy } from './support/tcp-proxy';

// Candidate processes on one PostgreSQL server, as on several machines: clocks that
// disagree, a leader cut off from the server, candidates in network namespaces of their
// own. Every wait is for a condition, with a generous limit; what is asserted is what
// happened (who led, with which term, what the server held, what was written).
describe('observeLeadership on PostgreSQL across processes', () => {
  const timing = { renewEvery: 200, expiresAfter: 1_000, retryEvery: 200 };
  let test: TestSchema;
  let pool: Pool;
  let schema: string;
  let workers: ChildWorker[];
  let cleanups: Array<() => unknown>;

  beforeEach(async () => {
    test = testSchema({ max: 2 });
    ({ pool, schema } = test);
    await pool.query(postgresLedgerTable(schema));
    workers = [];
    cleanups = [];
  });

  afterEach(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    for (const cleanup of cleanups.reverse()) await cleanup();
    await test.drop();
  });

  const start = (options: Partial<WorkerOptions> = {}, url = testDatabaseUrl(), launcher: string[] = []) => {
    const worker = new ChildWorker('candidate', { postgres: { url, schema }, ...timing, ledgerEvery: 50, ...options }, launcher);
    workers.push(worker);
    return worker;
  };
  const leaderAmong = (candidates: ChildWorker[]) => eventually('a leader', () => candidates.find((w) => w.leads));
  const count = (worker: ChildWorker, type: string) => worker.records.filter((record) => record.type === type).length;
  const leaseRow = async () =>
    (await pool.query(`SELECT holder, term, expires_at FROM "${schema}".worker_leadership WHERE slot = 0`)).rows[0];

  // Print what every worker said when a test fails, so that a failure can be read.
  const explain = (test: () => Promise<void>) => explainFailure(() => workers, test);

  /** Ledger rows in commit order never go back in term, and each names a tenure that was elected. */
  const expectLedgerInTermOrder = async () => {
    const { rows } = await pool.query(`SELECT holder, term FROM "${schema}".chaos_ledger ORDER BY id`);
    const terms = rows.map((row) => Number(row.term));
    expect(terms).toEqual([...terms].sort((a, b) => a - b));
    const elected = new Set(workers.flatMap((w) => w.records.filter((r) => r.type === 'elected').map((r) => `${r.holder}/${r.term}`)));
    expect(rows.filter((row) => !elected.has(`${row.holder}/${row.term}`))).toEqual([]);
    return rows.length;
  };

  it('elects one leader among candidates whose clocks are ten seconds apart, and each takes over from a killed one', () =>
    explain(async () => {
      const candidates = [start({ clockOffset: 10_000 }), start({ clockOffset: -10_000 }), start({ clockOffset: 0 })];
      const terms: number[] = [];
      while (candidates.some((w) => w.alive)) {
        const leader = await leaderAmong(candidates.filter((w) => w.alive));
        // Leads for several renewals while the others, whatever their clocks, keep following.
        const renewed = count(leader, 'renewed');
        await eventually('five renewals', () => count(leader, 'renewed') >= renewed + 5);
        expect(candidates.filter((w) => w.leads)).toEqual([leader]);
        terms.push(leader.last('elected')!.term!);
        leader.signal('SIGKILL');
        await leader.exited;
      }
      expect(terms).toEqual([...terms].sort((a, b) => a - b));
      expect(new Set(terms).size).toBe(3);
      expect(candidates.flatMap((w) => w.records.filter((r) => r.type === 'lost'))).toEqual([]);
      expect(await expectLedgerInTermOrder()).toBeGreaterThan(0);
    }));

  /**
   * The leader `a` reaches the server through `link`, the follower `b` directly (or through
   * a link of its own). With the link cut, `a` must step down at the end of the lease it
   * believes it holds, which is never later than the end the server holds, and `b` takes
   * over only after that end; healed, `a` follows.
   */
  const cutOffLeader = async (a: ChildWorker, b: ChildWorker, link: { cut(): void; heal(): void }) => {
    await eventually('a leads', () => a.leads);
    await eventually('b campaigns', () => b.find('subscribed'));
    const holderA = a.last('elected')!.holder;
    await eventually('a renews', () => count(a, 'renewed') >= 3);

    link.cut();
    // Follow the row on the server until b holds it: the last end it shows for a is the
    // end of a's lease as the server counts it.
    let serverEnd = 0;
    const giveUpAt = Date.now() + 30_000;
    for (let row = await leaseRow(); row?.holder === holderA || row === undefined; row = await leaseRow()) {
      if (row) serverEnd = Math.max(serverEnd, Number(row.expires_at));
      if (Date.now() > giveUpAt) throw new Error('Timed out after 30000 ms waiting for b to hold the row');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const lost = await eventually('a steps down', () => a.find('lost'));
    const elected = await eventually('b reports its election', () => b.find('elected'));
    const believedEnd = a.records.filter((r: WorkerRecord) => r.type === 'elected' || r.type === 'renewed').at(-1)!.expiresAt!;

    expect(lost).toMatchObject({ reason: 'expired' });
    // Calls that get no answer fail at the query timeout, as error events, not at once.
    expect(await eventually('a reports the cut', () => a.find('error'))).toMatchObject({ code: 'DATABASE_ERROR' });
    expect(believedEnd).toBeLessThanOrEqual(serverEnd); // a never believed past the server's end
    expect(lost.at).toBeLessThan(elected.at); // and stepped down before b was elected
    expect(elected.at).toBeGreaterThan(serverEnd); // who took over only once the lease had ended
    expect(elected.term).toBeGreaterThan(a.last('elected')!.term!);

    link.heal();
    // Healed, a reaches the server again and follows: b goes on leading, a is not elected.
    const renewedB = count(b, 'renewed');
    await eventually('b renews after the heal', () => count(b, 'renewed') >= renewedB + 5);
    expect(count(a, 'elected')).toBe(1);
    expect(b.leads).toBe(true);
    await expectLedgerInTermOrder();
  };

  it('steps a leader cut off behind a silent proxy down before its lease ends on the server; a follower takes over', () =>
    explain(async () => {
      const { port } = new URL(testDatabaseUrl());
      const proxy: TcpProxy = await startTcpProxy({ host: '127.0.0.1', port: Number(port) });
      cleanups.push(() => proxy.close());
      const through = new URL(testDatabaseUrl());
      through.port = String(proxy.port);
      const a = start({ clockOffset: 0 }, through.toString());
      await eventually('a leads', () => a.leads);
      const b = start({ clockOffset: 0 });
      await cutOffLeader(a, b, proxy);
    }));

  it('does the same with candidates in network namespaces of their own, the leader cut off by taking its link down', () =>
    explain(async () => {
      const { port } = new URL(testDatabaseUrl());
      const hosts: NetworkNamespace[] = [];
      const urls: string[] = [];
      for (const index of [0, 1]) {
        const host = networkNamespace(index);
        cleanups.push(() => host.remove());
        hosts.push(host);
        // The server listens on loopback: a proxy on this side of each link carries it there.
        const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(port) }, host.hostAddress);
        cleanups.push(() => proxy.close());
        const url = new URL(testDatabaseUrl());
        url.hostname = host.hostAddress;
        url.port = String(proxy.port);
        urls.push(url.toString());
      }
      const a = start({ clockOffset: 0 }, urls[0], hosts[0].launcher);
      await eventually('a leads', () => a.leads);
      const b = start({ clockOffset: 0 }, urls[1], hosts[1].launcher);
      await cutOffLeader(a, b, hosts[0]);
    }));
});

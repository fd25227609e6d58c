import { join } from 'node:path';
import { eventually } from '../test-kit/eventually';
import { freePort } from '../test-kit/postgres-server';
import type { HealthReport, LeaderHealthReport } from '../src';
import { testDatabaseUrl, testSchema } from './support/postgres-database';
import { SpawnedScript } from './support/spawned-script';
import { temporaryDatabase, TemporaryDatabase } from './support/temporary-database';

describe('examples', () => {
  let database: TemporaryDatabase;
  let started: SpawnedScript[];
  const run = (name: string, ...args: string[]) => {
    const example = new SpawnedScript(join(__dirname, '..', 'examples', name), [database.file, ...args]);
    started.push(example);
    return example;
  };
  const count = (sql: string) => database.open().prepare(sql).pluck().get() as number;
  beforeEach(() => {
    database = temporaryDatabase();
    started = [];
  });
  afterEach(async () => {
    for (const example of started) example.process.kill('SIGKILL');
    await Promise.all(started.map((example) => example.exited));
    database.remove();
  });

  it('print-events.js prints its election, and releases its lease on Ctrl-C', async () => {
    const worker = run('print-events.js');
    await worker.shows(/elected {2}term 1, lease until/);
    worker.process.kill('SIGINT');
    expect(await worker.exited).toBe(0);
    expect(worker.output).toMatch(/stopped, lease released/);
    expect(count('SELECT count(*) FROM worker_leadership')).toBe(0);
  });

  it('print-events.js, two of them: the command line hands the leadership to the one it names, and back', async () => {
    const first = run('print-events.js');
    await first.shows(/elected {2}term 1, lease until/);
    const second = run('print-events.js');
    await second.shows(/standing by: print-events-\d+ leads, term 1/);
    const holderOf = (example: SpawnedScript) => /as (print-events-\d+);/.exec(example.output)![1];
    const cli = (...args: string[]) => new SpawnedScript(join(__dirname, '..', 'dist', 'cli', 'main.js'), args).result();
    expect(await cli('handoff', database.file, '--to', holderOf(second))).toEqual({
      code: 0,
      output: expect.stringMatching(
        new RegExp(`^slot 0: ${holderOf(first)} \\(term 1\\) handed over to ${holderOf(second)} \\(term 3\\) in \\d+ ms\n$`),
      ),
    });
    await second.shows(/elected {2}term 3/);
    await first.shows(/lost {5}term 1 \(handed-off\)[\s\S]*standing by: print-events-\d+ leads, term 3/);
    expect((await cli('handoff', database.file, '--to', holderOf(first))).code).toBe(0);
    await first.shows(/elected {2}term 5/);
  });

  it('healthz.js answers its probes: healthy while leading or following, /leader only in the leader', async () => {
    const probe = async (port: number, path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, report: (await response.json()) as HealthReport };
    };
    const [first, second] = [await freePort(), await freePort()];
    const leader = run('healthz.js', String(first));
    await leader.shows(/elected term 1/);
    await leader.shows(/health on/);
    const follower = run('healthz.js', String(second));
    await follower.shows(/health on/);
    expect(await probe(first, '/healthz')).toMatchObject({
      status: 200,
      report: { healthy: true, leading: true, candidates: [{ status: 'leading' }] },
    });
    expect((await probe(first, '/leader')).status).toBe(200);
    expect(await probe(second, '/healthz')).toMatchObject({
      status: 200,
      report: { healthy: true, leading: false, candidates: [{ status: 'following' }] },
    });
    expect((await probe(second, '/leader')).status).toBe(503);
    leader.process.kill('SIGTERM');
    expect(await leader.exited).toBe(0);
    await follower.shows(/elected term 2/);
    expect((await probe(second, '/leader')).status).toBe(200);
  });

  it("follower-health.js answers a follower's probes: healthy while its reads succeed, /leader while somebody leads, and who", async () => {
    const probe = async (port: number, path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, report: (await response.json()) as LeaderHealthReport };
    };
    database.open(); // the file a candidate made
    const port = await freePort();
    const follower = run('follower-health.js', String(port));
    await follower.shows(/health on/);
    expect(await probe(port, '/healthz')).toMatchObject({
      status: 200,
      report: { healthy: true, led: false, watches: [{ status: 'watching', holder: null }] },
    });
    expect((await probe(port, '/leader')).status).toBe(503);
    const leader = run('print-events.js');
    await leader.shows(/elected {2}term 1/);
    await follower.shows(/leads, term 1/);
    const led = await probe(port, '/leader');
    expect(led).toMatchObject({
      status: 200,
      report: {
        healthy: true,
        led: true,
        watches: [{ status: 'watching', term: 1, holder: expect.any(String), since: expect.any(Number) }],
      },
    });
    leader.process.kill('SIGINT');
    await follower.shows(/nobody leads[\s\S]*nobody leads/); // at its start, then after the release
    expect((await probe(port, '/leader')).status).toBe(503);
    follower.process.kill('SIGTERM');
    expect(await follower.exited).toBe(0);
  });

  it("forward-to-leader.js: a follower forwards requests to the address the leader advertises, and to the next leader's after a failover", async () => {
    const ask = async (port: number) => {
      const response = await fetch(`http://127.0.0.1:${port}/hello`, { method: 'POST', body: 'hi' });
      return { status: response.status, text: await response.text() };
    };
    const [first, second] = [await freePort(), await freePort()];
    const leader = run('forward-to-leader.js', String(first));
    await leader.shows(/elected term 1/);
    await leader.shows(/serving on/);
    const follower = run('forward-to-leader.js', String(second));
    await follower.shows(/serving on/);
    const handledByFirst = { status: 200, text: `POST /hello handled by the leader at http://127.0.0.1:${first}\n` };
    expect(await ask(first)).toEqual(handledByFirst);
    await eventually('the follower forwarding', async () => (await ask(second)).status === 200);
    expect(await ask(second)).toEqual(handledByFirst);
    leader.process.kill('SIGTERM');
    expect(await leader.exited).toBe(0);
    await follower.shows(/elected term 2/);
    expect(await ask(second)).toEqual({ status: 200, text: `POST /hello handled by the leader at http://127.0.0.1:${second}\n` });
  });

  it('job-queue.js: only the leader dispatches; when it stops, the other takes the queue over where it was', async () => {
    const first = run('job-queue.js', '1000'); // more jobs than the test lasts
    await first.shows(/did job 3 \(term 1\)/);
    const second = run('job-queue.js');
    await second.shows(/campaigning/);
    first.process.kill('SIGINT');
    expect(await first.exited).toBe(0);
    await second.shows(/did job \d+ \(term 2\)/);
    second.process.kill('SIGINT');
    expect(await second.exited).toBe(0);
    // In queue order: a run of jobs done in term 1, then a run done in term 2; none twice, none skipped.
    const terms = database.open().prepare('SELECT done_in_term FROM jobs WHERE done_by IS NOT NULL ORDER BY id').pluck().all() as number[];
    expect(terms.join('')).toMatch(/^1{3,}2+$/);
    expect(count('SELECT max(id) FROM jobs WHERE done_by IS NOT NULL')).toBe(terms.length);
  });

  it('graceful-shutdown.js: on SIGTERM, finishes the job in flight, then releases', async () => {
    const worker = run('graceful-shutdown.js');
    const [, job] = await worker.shows(/started (job \d+)/);
    worker.process.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    const finished = worker.output.indexOf(`finished ${job}`);
    expect(finished).toBeGreaterThan(worker.output.indexOf('waiting for the one in flight'));
    expect(worker.output.indexOf('lease released')).toBeGreaterThan(finished);
    expect(count('SELECT count(*) FROM worker_leadership')).toBe(0);
  });

  it('cron-singleton.js: two processes, the task runs once per period', async () => {
    const workers = [run('cron-singleton.js', '300'), run('cron-singleton.js', '300')];
    await Promise.all(workers.map((worker) => worker.shows(/a task every 300 ms/))); // its table made
    await eventually('three periods run', () => count('SELECT count(*) FROM cron_runs') >= 3);
    const runs = workers.flatMap((worker) => worker.output.match(/ran the task for period \d+/g) ?? []);
    expect(new Set(runs).size).toBe(runs.length); // no period twice
    expect(workers.map((worker) => worker.output.includes('already ran'))).toEqual([false, false]); // the follower never tried
  });

  it('postgres-job-queue.js: only the leader does jobs; when it stops, the other takes the queue over where it was', async () => {
    const { pool, schema, drop } = testSchema({ max: 1 }); // the example creates the schema
    const run = () => {
      const example = new SpawnedScript(join(__dirname, '..', 'examples', 'postgres-job-queue.js'), [testDatabaseUrl(), schema]);
      started.push(example);
      return example;
    };
    try {
      const first = run();
      await first.shows(/did job 3 \(term \d+\)/);
      const second = run();
      await second.shows(/campaigning/);
      first.process.kill('SIGINT');
      expect(await first.exited).toBe(0);
      expect(first.output).toMatch(/stopped, lease released/);
      await second.shows(/did job \d+ \(term \d+\)/);
      second.process.kill('SIGINT');
      expect(await second.exited).toBe(0);
      // In queue order: a run of jobs done by the first tenure, then a run by the second; none twice, none skipped.
      const { rows } = await pool.query(`SELECT done_in_term AS term FROM "${schema}".jobs WHERE done_by IS NOT NULL ORDER BY id`);
      const terms = rows.map((row) => Number(row.term));
      expect(new Set(terms).size).toBe(2);
      expect(terms).toEqual([...terms].sort((a, b) => a - b));
      expect(terms.length).toBeGreaterThanOrEqual(4);
      const {
        rows: [last],
      } = await pool.query(`SELECT max(id) AS id FROM "${schema}".jobs WHERE done_by IS NOT NULL`);
      expect(last.id).toBe(terms.length);
    } finally {
      await drop();
    }
  });
});

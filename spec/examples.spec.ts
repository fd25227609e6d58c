import Database from 'better-sqlite3';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { eventually } from '../test-kit/eventually';
import { bunRuntime } from '../test-kit/runtimes';
import { freePort } from '../test-kit/postgres-server';
import type { HealthReport, LeaderHealthReport } from '../src';
import { testDatabaseUrl, testSchema } from './support/postgres-database';
import { readmeWorker } from './support/readme-worker';
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

  describe.each([
    ['Node.js', process.execPath],
    ['Bun', bunRuntime()],
  ])('graceful-shutdown.js on %s', (_, runtime) => {
    const start = () => {
      const example = new SpawnedScript(join(__dirname, '..', 'examples', 'graceful-shutdown.js'), [database.file], {}, undefined, runtime);
      started.push(example);
      return example;
    };
    /** The example's lines without their time of day. */
    const linesOf = (output: string) =>
      output
        .trimEnd()
        .split('\n')
        .map((line) => line.slice(14));
    /** The ms of the day a line of the example's output was logged at (its clock is this host's). */
    const loggedAt = (output: string, line: RegExp) => {
      const [, h, m, s, ms] = new RegExp(`^(\\d\\d):(\\d\\d):(\\d\\d)\\.(\\d{3}) {2}${line.source}`, 'm').exec(output)!;
      return ((Number(h) * 60 + Number(m)) * 60 + Number(s)) * 1000 + Number(ms);
    };

    it('on SIGTERM during a job: the job finishes and its fenced write commits, then the lease is released, and the other is elected then', async () => {
      const leader = start();
      await leader.shows(/elected, term 1/);
      const follower = start();
      await follower.shows(/standing by/);
      const [, job] = await leader.shows(/started (job \d+)/);
      leader.process.kill('SIGTERM');
      expect(await leader.exited).toBe(0);
      const lines = linesOf(leader.output);
      const stopping = lines.indexOf(`stopping: no new job; waiting for ${job} (Ctrl-C again to cut it)`);
      expect(stopping).toBeGreaterThan(0);
      // Nothing starts once asked to stop; the job in flight finishes; the release comes last.
      expect(lines.slice(stopping)).toEqual([lines[stopping], `finished ${job}: result recorded, message sent`, 'released, exiting']);
      const holder = /(graceful-shutdown-\d+) campaigning/.exec(leader.output)![1];
      expect(database.open().prepare('SELECT term FROM job_results WHERE job = ?').pluck().get(`${holder} ${job}`)).toBe(1);
      await follower.shows(/elected, term 2/);
      // Taken on the release, not at the lease's expiry (3 s after its last renewal), and
      // after the job's end. "released" is printed once the release is done: the other may be
      // elected a few ms before that line (4 ms on Bun in a CI rehearsal), never before the job ended.
      const elected = loggedAt(follower.output, /elected, term 2/);
      expect(elected).toBeGreaterThanOrEqual(loggedAt(leader.output, new RegExp(`finished ${job}`)));
      expect(elected - loggedAt(leader.output, /released, exiting/)).toBeLessThan(1_000);
      follower.process.kill('SIGTERM');
      expect(await follower.exited).toBe(0);
    });

    it('on a second signal, cuts the job in flight at once, and releases', async () => {
      const leader = start();
      const [, job] = await leader.shows(/started (job \d+)/);
      leader.process.kill('SIGINT');
      await leader.shows(/stopping: no new job/);
      leader.process.kill('SIGINT');
      expect(await leader.exited).toBe(0);
      const lines = linesOf(leader.output);
      expect(lines.slice(-3)).toEqual([`stopping now: cutting ${job}`, `cut ${job}`, 'released, exiting']);
      expect(count('SELECT count(*) FROM worker_leadership')).toBe(0);
      expect(count('SELECT count(*) FROM job_results')).toBe(Number(job.split(' ')[1]) - 1);
    });
  });

  it("README's worker, two of them: on SIGTERM during a job, the leader finishes it, starts none, releases, and the other is elected before the lease would expire", async () => {
    // README's TypeScript, compiled as a user's project would, beside the database file.
    const project = dirname(database.file);
    const { outputText } = ts.transpileModule(readmeWorker().worker, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    });
    writeFileSync(join(project, 'worker.js'), outputText);
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(join(__dirname, '..'), join(project, 'node_modules', 'observe-leadership'));
    for (const name of ['better-sqlite3', 'rxjs'])
      symlinkSync(join(__dirname, '..', 'node_modules', name), join(project, 'node_modules', name));
    const worker = () => {
      const script = new SpawnedScript(join(project, 'worker.js'), [], {}, project);
      started.push(script);
      return script;
    };
    const leader = worker();
    await leader.shows(/^worker-\d+: elected, term 1$/m);
    const follower = worker();
    await follower.shows(/^worker-\d+: standing by$/m);
    const jobs = new Database(join(project, 'jobs.db'), { timeout: 5_000 });
    for (let i = 0; i < 5; i++) jobs.prepare('INSERT INTO jobs DEFAULT VALUES').run();
    const [, job] = await leader.shows(/started job (\d+)/);
    leader.process.kill('SIGTERM');
    expect(await leader.exited).toBe(0);
    const stoppedAt = Date.now();
    const lines = leader.output
      .trimEnd()
      .split('\n')
      .map((line) => line.replace(/^worker-\d+: /, ''));
    expect(lines.slice(lines.indexOf(`started job ${job}`))).toEqual([
      `started job ${job}`,
      `finished job ${job}`,
      'released the lease, exiting',
    ]);
    expect(jobs.prepare('SELECT state FROM jobs WHERE id = ?').pluck().get(Number(job))).toBe('done');
    await follower.shows(/^worker-\d+: elected, term 2$/m);
    // Taken on the release: the lease it replaced would have lasted 15 s more.
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    follower.process.kill('SIGINT');
    expect(await follower.exited).toBe(0);
    expect(follower.output).toMatch(/released the lease, exiting\n$/);
    jobs.close();
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

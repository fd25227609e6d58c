import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../test-kit/eventually';
import { nodeRuntime } from '../test-kit/runtimes';
import { sqliteExampleRuns, startEach } from './support/installed-examples';
import { packAsFromAFreshClone } from './support/packed-package';
import { readmeWorker } from './support/readme-worker';
import { SpawnedScript } from './support/spawned-script';

// The way to install without a native build: on Node.js 24, a fresh ES module project gets
// the packed tarball and rxjs, and nothing else (no better-sqlite3, no compiler run), then
// runs README's worker with the node:sqlite lines README gives for it, straight from its
// TypeScript (Node.js 24 strips the types). This process, on better-sqlite3, shares the file.
describe('the package on Node.js 24 with node:sqlite, without better-sqlite3', () => {
  let folder: string | undefined;
  let project: string;
  let node: { node: string; home: string };

  beforeAll(() => {
    node = nodeRuntime('24.22.3');
    folder = mkdtempSync(join(tmpdir(), 'observe-leadership-node-sqlite-'));
    const { tarball } = packAsFromAFreshClone(folder);
    project = join(folder, 'consumer');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    // npm itself under Node.js 24, as the user's would run.
    execFileSync('npm', ['install', tarball, 'rxjs@7', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: project,
      stdio: 'pipe',
      env: { ...process.env, PATH: `${join(node.home, 'bin')}:${process.env.PATH}`, npm_config_nodedir: node.home },
    });
  }, 240_000);
  // Only the setup's own failure is reported when it failed before making the folder.
  afterAll(() => folder !== undefined && rmSync(folder, { recursive: true, force: true }));

  it('installed nothing native: no better-sqlite3', () => {
    expect(existsSync(join(project, 'node_modules', 'observe-leadership'))).toBe(true);
    expect(existsSync(join(project, 'node_modules', 'rxjs'))).toBe(true);
    expect(existsSync(join(project, 'node_modules', 'better-sqlite3'))).toBe(false);
  });

  it("runs README's worker on node:sqlite, which does the jobs that a better-sqlite3 connection adds, and stops on SIGTERM", async () => {
    const { worker, nodeSqliteLines: nodeSqlite } = readmeWorker();
    expect(nodeSqlite).toContain('new DatabaseSync(');
    // README's worker with its better-sqlite3 lines replaced by the ones README gives for node:sqlite.
    const withoutBetterSqlite3 = worker
      .split('\n')
      .filter((line) => !/^import Database from 'better-sqlite3';$|^const db = new Database\(|^db\.pragma\(/.test(line))
      .join('\n');
    expect(withoutBetterSqlite3).not.toContain('better-sqlite3');
    writeFileSync(join(project, 'worker.ts'), `${nodeSqlite}\n${withoutBetterSqlite3}\n`);

    const running = new SpawnedScript(join(project, 'worker.ts'), [], {}, project, node.node);
    let db: Database.Database | undefined;
    try {
      await running.shows(/^worker-\d+: elected, term 1$/m);
      db = new Database(join(project, 'jobs.db'), { timeout: 5_000 });
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      const state = () => db!.prepare('SELECT state FROM jobs ORDER BY id DESC LIMIT 1').pluck().get();
      const expiry = () => db!.prepare('SELECT expires_at FROM worker_leadership WHERE slot = 0').pluck().get() as number;
      const firstExpiry = expiry();
      db.prepare("INSERT INTO jobs (state) VALUES ('ready')").run();
      await eventually('the job done', () => state() === 'done' || undefined);
      await eventually('a renewal', () => expiry() > firstExpiry || undefined);
      expect(running.output).not.toMatch(/lost term|leadership ended/);
      running.process.kill('SIGTERM');
      expect(await running.exited).toBe(0);
      // Released on the way out: the slot is free.
      expect(db.prepare('SELECT count(*) FROM worker_leadership WHERE slot = 0').pluck().get()).toBe(0);
    } finally {
      db?.close();
      running.process.kill('SIGKILL');
    }
  }, 60_000);

  // The examples in a project without better-sqlite3 or pg, on the runtime running this suite.
  it('has every example say in one line what to install when this runtime has no driver for it', async () => {
    const installed = join(project, 'node_modules', 'observe-leadership', 'examples');
    const examples = readdirSync(installed).filter((name) => name.endsWith('.js'));
    const run = (name: string, environment: Record<string, string> = {}) =>
      new SpawnedScript(join(installed, name), [join(project, 'no-driver.db'), String(0)], environment, project).result();
    for (const name of examples.filter((name) => name !== 'postgres-job-queue.js')) {
      expect({ name, ...(await run(name, { SQLITE_DRIVER: 'better-sqlite3' })) }).toEqual({
        name,
        code: 1,
        output: expect.stringMatching(
          /^no SQLite driver: SQLITE_DRIVER=better-sqlite3 does not load here \(.*\): npm install better-sqlite3\n$/,
        ),
      });
    }
    expect(await run('postgres-job-queue.js')).toEqual({ code: 1, output: 'this example needs the PostgreSQL driver: npm install pg\n' });
    // Left to choose: node:sqlite where this runtime has it (Node.js 22.13 and later), else one line.
    const started = new SpawnedScript(join(installed, 'print-events.js'), [join(project, 'no-driver.db')], {}, project);
    if (Number(process.versions.node.split('.')[0]) >= 22) {
      await started.shows(/elected {2}term \d+/);
      started.process.kill('SIGINT');
      expect(await started.exited).toBe(0);
    } else {
      expect(await started.result()).toEqual({
        code: 1,
        output: `no SQLite driver: Node.js ${process.version} has no node:sqlite: npm install better-sqlite3, or run on Node.js 22.13 or later, which has node:sqlite built in\n`,
      });
    }
  });

  it('runs the SQLite examples from the installed package on node:sqlite', async () => {
    const installed = join(project, 'node_modules', 'observe-leadership', 'examples');
    await startEach(installed, await sqliteExampleRuns(join(project, 'examples.db')), project, node.node);
  }, 120_000);
});

import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../test-kit/eventually';
import { nodeRuntime } from '../test-kit/runtimes';
import { sqliteExampleRuns, startEach } from './support/installed-examples';
import { SpawnedScript } from './support/spawned-script';

const root = join(__dirname, '..');

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
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', folder], { cwd: root, encoding: 'utf8' }),
    ) as Array<{
      filename: string;
    }>;
    project = join(folder, 'consumer');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    // npm itself under Node.js 24, as the user's would run.
    execFileSync('npm', ['install', join(folder, packed.filename), 'rxjs@7', '--prefer-offline', '--no-audit', '--no-fund'], {
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

  it("runs README's worker on node:sqlite, which dispatches the jobs that a better-sqlite3 connection adds, and stops on SIGTERM", async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## A worker that dispatches jobs only while it leads'));
    const worker = /```ts\n([\s\S]*?)\n```/.exec(section)?.[1] as string;
    const nodeSqlite = /```ts partial\n(import \{ DatabaseSync \} from 'node:sqlite';[\s\S]*?)\n```/.exec(section)?.[1] as string;
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
      await running.shows(/^elected /m);
      db = new Database(join(project, 'jobs.db'), { timeout: 5_000 });
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      const state = () => db!.prepare('SELECT state FROM jobs ORDER BY id DESC LIMIT 1').pluck().get();
      db.prepare("INSERT INTO jobs (state) VALUES ('ready')").run();
      await eventually('the job dispatched', () => state() === 'dispatched' || undefined);
      await eventually('a renewal', () => /^renewed /m.test(running.output) || undefined);
      expect(running.output).not.toMatch(/^lost |leadership ended/m);
      running.process.kill('SIGTERM');
      expect(await running.exited).toBe(0);
      // Released on the way out: the slot is free.
      expect(db.prepare('SELECT count(*) FROM worker_leadership WHERE slot = 0').pluck().get()).toBe(0);
    } finally {
      db?.close();
      running.process.kill('SIGKILL');
    }
  }, 60_000);

  it('runs the SQLite examples from the installed package on node:sqlite', async () => {
    const installed = join(project, 'node_modules', 'observe-leadership', 'examples');
    await startEach(installed, await sqliteExampleRuns(join(project, 'examples.db')), project, node.node);
  }, 120_000);
});

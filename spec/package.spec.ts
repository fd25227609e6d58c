import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../test-kit/eventually';
import { compilerSays, strictNode16, typescript } from './support/compiler';
import { SpawnedScript } from './support/spawned-script';
import { ExampleRun, sqliteExampleRuns, startEach } from './support/installed-examples';
import { installedPackage } from './support/installed-package';
import { readmeWorker } from './support/readme-worker';
import { testDatabaseUrl, testSchema } from './support/postgres-database';

const root = join(__dirname, '..');
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

// The package as a user gets it (see installedPackage), run: its examples, from CommonJS, from
// an ES module, with PostgreSQL, through its command, and README's worker. What it ships and
// the types it gives, which do not depend on the runtime, are package-contents.spec.ts's.
describe('the package, installed in a fresh project', () => {
  let folder: string;
  let project: string;
  let remove: () => void;

  beforeAll(() => {
    ({ folder, project, remove } = installedPackage('observe-leadership-package-'));
  }, 120_000);
  afterAll(() => remove());

  const electOnce = (api: string) => `
    const db = new Database(':memory:');
    observeLeadership(db, { holder: 'packaged' }).pipe(take(1)).subscribe((event) => console.log(${api}, event.type, event.holder));`;

  /** What a strict TypeScript consumer's compiler says of `file` ('' when it compiles). */
  const compile = (file: string) => compilerSays(typescript.repository, [...strictNode16, '--esModuleInterop', file], project);

  // Each example as a user of the package starts it (see startEach).
  it('runs every example from the installed package', async () => {
    const installed = join(project, 'node_modules', 'observe-leadership', 'examples');
    const { schema, drop } = testSchema({ max: 1 });
    const runs: ExampleRun[] = [
      ...(await sqliteExampleRuns(join(folder, 'installed-examples.db'))),
      ['postgres-job-queue.js', [testDatabaseUrl(), schema], /did job 1 \(term \d+\)/],
    ];
    expect(runs.map(([name]) => name).sort()).toEqual(
      readdirSync(installed)
        .filter((name) => name.endsWith('.js'))
        .sort(),
    );
    try {
      await startEach(installed, runs, project);
    } finally {
      await drop();
    }
  }, 120_000);

  it('works from CommonJS', () => {
    writeFileSync(
      join(project, 'index.cjs'),
      `const Database = require('better-sqlite3');
       const { take } = require('rxjs');
       const { observeLeadership, observeLeader, fenced, whileLeader, isLeader, LeadershipError } = require('observe-leadership');
       if (![observeLeader, fenced, whileLeader, isLeader, LeadershipError].every((f) => typeof f === 'function')) throw new Error('missing export');
       ${electOnce("'require'")}`,
    );
    expect(execFileSync(process.execPath, ['index.cjs'], { cwd: project, encoding: 'utf8' })).toBe('require elected packaged\n');
  });

  it('loads without @opentelemetry/api, which only observe-leadership/metrics needs, and then only without a meter given', () => {
    writeFileSync(
      join(project, 'no-otel.cjs'),
      `let missing = false;
       try { require.resolve('@opentelemetry/api'); } catch { missing = true; }
       const Database = require('better-sqlite3');
       const { take } = require('rxjs');
       const { observeLeadership } = require('observe-leadership');
       console.log(missing ? 'no @opentelemetry/api' : 'found @opentelemetry/api');
       ${electOnce("'main entry'")}`,
    );
    expect(execFileSync(process.execPath, ['no-otel.cjs'], { cwd: project, encoding: 'utf8' })).toBe(
      'no @opentelemetry/api\nmain entry elected packaged\n',
    );
    writeFileSync(
      join(project, 'otel.cjs'),
      `const Database = require('better-sqlite3');
       const { take } = require('rxjs');
       const { observeLeadership } = require('observe-leadership');
       const { leadershipMetrics } = require('observe-leadership/metrics');
       const db = new Database(':memory:');
       observeLeadership(db, { holder: 'packaged', instrument: leadershipMetrics() }).pipe(take(1)).subscribe((event) => console.log('metrics', event.type));`,
    );
    expect(() => execFileSync(process.execPath, ['otel.cjs'], { cwd: project, stdio: 'pipe' })).toThrow(
      /Cannot find module '@opentelemetry\/api'/,
    );
    symlinkSync(join(root, 'node_modules', '@opentelemetry'), join(project, 'node_modules', '@opentelemetry'));
    try {
      expect(execFileSync(process.execPath, ['otel.cjs'], { cwd: project, encoding: 'utf8' })).toBe('metrics elected\n');
    } finally {
      rmSync(join(project, 'node_modules', '@opentelemetry'));
    }
  });

  it('works from an ES module', () => {
    writeFileSync(
      join(project, 'index.mjs'),
      `import Database from 'better-sqlite3';
       import { take } from 'rxjs';
       import { observeLeadership } from 'observe-leadership';
       ${electOnce("'import'")}`,
    );
    expect(execFileSync(process.execPath, ['index.mjs'], { cwd: project, encoding: 'utf8' })).toBe('import elected packaged\n');
  });

  it('gives PostgreSQL users their store from observe-leadership/postgres', () => {
    const schema = `package_${process.pid}`;
    writeFileSync(
      join(project, 'postgres.cjs'),
      `const { Pool } = require('pg');
       const { take } = require('rxjs');
       const { observeLeadership } = require('observe-leadership');
       const { postgresLeaseStore } = require('observe-leadership/postgres');
       const pool = new Pool({ connectionString: process.env.OBSERVE_LEADERSHIP_TEST_DATABASE_URL });
       const store = postgresLeaseStore(pool, { schema: '${schema}' });
       observeLeadership(store, { holder: 'packaged' }).pipe(take(1)).subscribe(async (event) => {
         console.log(event.type, event.holder);
         await store.settled();
         await pool.query('DROP SCHEMA "${schema}" CASCADE');
         await pool.end();
       });`,
    );
    expect(execFileSync(process.execPath, ['postgres.cjs'], { cwd: project, encoding: 'utf8' })).toBe('elected packaged\n');
    writeFileSync(
      join(project, 'postgres.ts'),
      `import { Pool } from 'pg';
       import { fenced, observeLeadership, whileLeader } from 'observe-leadership';
       import { postgresLeaseStore, PostgresLeaseStoreConfig } from 'observe-leadership/postgres';
       const config: PostgresLeaseStoreConfig = { schema: 'jobs', queryTimeout: 2_000 };
       const store = postgresLeaseStore(new Pool(), config);
       observeLeadership(store).pipe(
         whileLeader((lease) => fenced(store, lease, async (client) => (await client.query('SELECT 1')).rowCount)),
       ).subscribe((count: number | null) => count);
       // @ts-expect-error: not an option
       postgresLeaseStore(new Pool(), { tabel: 'x' });`,
    );
    expect(compile('postgres.ts')).toBe('');
  });

  it('installs its command, which npx finds', () => {
    const command = join(project, 'node_modules', '.bin', 'observe-leadership');
    expect(execFileSync(command, ['--help'], { encoding: 'utf8' })).toContain('usage: observe-leadership');
    const file = join(folder, 'npx.db');
    expect(execFileSync(npx, ['--no-install', 'observe-leadership', 'init', file], { cwd: project, encoding: 'utf8' })).toBe(
      `created: ${file}, with the lease tables (journal_mode delete)\n`,
    );
  });

  // README's worker, pasted unchanged into a new user's project: an ES module package with
  // what `tsc --init` of the newest TypeScript writes, compiled, then run beside a 5 s
  // exclusive lock on its file (a migration, a backup, the sqlite3 shell) that it must ride out.
  // As README gives it (WAL, as we advise), and with better-sqlite3's defaults (a new user
  // who leaves the pragmas out: a rollback journal, synchronous FULL).
  it.each([
    ['as README gives it', (code: string) => code],
    ["with better-sqlite3's defaults (its pragma lines left out)", (code: string) => code.replace(/^db\.pragma\(.*\n/gm, '')],
  ])(
    "compiles README's worker, %s, as a fresh TypeScript 7 ES module project, which keeps leading through a 5 s lock",
    async (variant, edit) => {
      const worker = edit(readmeWorker().worker);
      expect(worker).toContain('observeLeadership(db');
      expect(worker.includes('journal_mode = WAL')).toBe(variant === 'as README gives it');
      const esm = join(project, `esm-${variant === 'as README gives it' ? 'readme' : 'defaults'}`);
      mkdirSync(esm);
      writeFileSync(join(esm, 'package.json'), JSON.stringify({ name: 'esm-consumer', private: true, type: 'module' }));
      execFileSync(process.execPath, [typescript.newest, '--init'], { cwd: esm, encoding: 'utf8' });
      writeFileSync(join(esm, 'worker.ts'), worker);
      const messages = compilerSays(typescript.newest, ['-p', '.'], esm);
      expect(messages).toBe('');
      expect(existsSync(join(esm, 'worker.js'))).toBe(true);

      const running = new SpawnedScript(join(esm, 'worker.js'), [], {}, esm);
      const db = new Database(join(esm, 'jobs.db'), { timeout: 5_000 });
      try {
        await running.shows(/^worker-\d+: elected, term 1$/m);
        expect(db.pragma('journal_mode', { simple: true })).toBe(variant === 'as README gives it' ? 'wal' : 'delete');
        const state = () => db.prepare('SELECT state FROM jobs ORDER BY id DESC LIMIT 1').pluck().get();
        const expiry = () => db.prepare('SELECT expires_at FROM worker_leadership WHERE slot = 0').pluck().get() as number;
        db.prepare("INSERT INTO jobs (state) VALUES ('ready')").run();
        await eventually('a job done', () => state() === 'done' || undefined);
        db.exec('BEGIN EXCLUSIVE');
        db.prepare("INSERT INTO jobs (state) VALUES ('ready')").run(); // seen by the worker once committed
        const lockedAt = running.output.length;
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        db.exec('COMMIT');
        const expiryAfterLock = expiry();
        // Its ticks met the lock five times (fenced waits 100 ms, then throws DATABASE_BUSY): skipped.
        expect(running.process.exitCode).toBeNull();
        expect(running.output.slice(lockedAt)).not.toMatch(/leadership ended/);
        await eventually('the job done after the lock', () => state() === 'done' || undefined, 10_000);
        await eventually('a renewal after the lock', () => expiry() > expiryAfterLock || undefined, 10_000);
        expect(running.output).not.toMatch(/lost term|leadership ended/);
        running.process.kill('SIGTERM');
        expect(await running.exited).toBe(0);
        expect(running.output).toMatch(/released the lease, exiting\n$/);
      } finally {
        if (db.inTransaction) db.exec('ROLLBACK');
        db.close();
        running.process.kill('SIGKILL');
      }
    },
    60_000,
  );
});

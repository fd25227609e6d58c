import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { packAsFromAFreshClone } from './support/packed-package';
import { eventually } from '../test-kit/eventually';
import { compilerSays, strictNode16, typescript } from './support/compiler';
import { SpawnedScript } from './support/spawned-script';
import { ExampleRun, sqliteExampleRuns, startEach } from './support/installed-examples';
import { readmeWorker } from './support/readme-worker';
import { testDatabaseUrl, testSchema } from './support/postgres-database';

const root = join(__dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

// The package as a user gets it: `npm pack`, installed in a fresh project, then used from
// CommonJS, from an ES module, from TypeScript, with PostgreSQL, and through its command. The
// package's one dependency comes from npm's cache where it can (`npm ci` put its tarball there,
// but not always the registry's metadata that an install also reads: a fresh machine has none);
// the peer dependencies (a native build, for better-sqlite3) are this repository's own, linked in.
describe('the package, installed in a fresh project', () => {
  let folder: string;
  let project: string;
  let files: string[];
  let tarball: string;

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'observe-leadership-package-'));
    ({ tarball, files } = packAsFromAFreshClone(folder));
    project = join(folder, 'consumer');
    mkdirSync(join(project, 'node_modules'), { recursive: true });
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    execFileSync(npm, ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--legacy-peer-deps', '--no-package-lock'], {
      cwd: project,
      stdio: 'pipe',
    });
    // After the install, which removes what its package.json does not name; one link per
    // package, never a folder of ours that npm could empty.
    mkdirSync(join(project, 'node_modules', '@types'));
    for (const dependency of ['better-sqlite3', 'rxjs', 'pg', '@types/better-sqlite3', '@types/node', '@types/pg']) {
      symlinkSync(join(root, 'node_modules', dependency), join(project, 'node_modules', dependency));
    }
  }, 120_000);
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  const electOnce = (api: string) => `
    const db = new Database(':memory:');
    observeLeadership(db, { holder: 'packaged' }).pipe(take(1)).subscribe((event) => console.log(${api}, event.type, event.holder));`;

  /** What a strict TypeScript consumer's compiler says of `file` ('' when it compiles). */
  const compile = (file: string) => compilerSays(typescript.repository, [...strictNode16, '--esModuleInterop', file], project);

  it('ships dist (built by prepack, with source maps that carry their sources), examples, docs with the chart they show, README, LICENSE and package.json', () => {
    const shipped = (folder: string) =>
      readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => relative(root, join(entry.parentPath, entry.name)));
    const examples = shipped('examples');
    expect(examples.length).toBeGreaterThanOrEqual(6);
    expect(files.filter((file) => !file.startsWith('dist/')).sort()).toEqual(
      ['LICENSE', 'README.md', ...examples, ...shipped('docs'), 'bench/latency.svg', 'package.json'].sort(),
    );
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js']));
    const installed = join(project, 'node_modules', 'observe-leadership');
    const maps = files.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    for (const map of maps) {
      const { sources, sourcesContent } = JSON.parse(readFileSync(join(installed, map), 'utf8')) as {
        sources: string[];
        sourcesContent?: string[];
      };
      expect({ map, inlined: sourcesContent?.length }).toEqual({ map, inlined: sources.length });
    }
  });

  it('passes publint and Are the Types Wrong, as packed', () => {
    expect(execFileSync(npx, ['--no-install', 'publint', 'run', '--strict', tarball], { cwd: root, encoding: 'utf8' })).toContain(
      'All good!',
    );
    expect(execFileSync(npx, ['--no-install', 'attw', '--format', 'ascii', tarball], { cwd: root, encoding: 'utf8' })).toContain(
      'No problems found',
    );
  });

  it("resolves every relative link of README and docs inside the installed package, as a reader of node_modules or a registry's files follows them", () => {
    const installed = join(project, 'node_modules', 'observe-leadership');
    const pages = files.filter((file) => file.endsWith('.md'));
    const broken = pages.flatMap((page) =>
      [...readFileSync(join(installed, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)]
        .map(([, target]) => target.split('#')[0])
        .filter((target) => target && !/^[a-z]+:/.test(target))
        .filter((target) => !existsSync(join(installed, dirname(page), target)))
        .map((target) => `${page} -> ${target}`),
    );
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/api.md']));
    expect(broken).toEqual([]);
  });

  it('carries examples that type-check with tsc --checkJs', () => {
    const installed = join(project, 'node_modules', 'observe-leadership', 'examples');
    const examples = readdirSync(installed, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.js'));
    // Each says it is checked, so that an editor checks it too.
    expect(examples.filter((name) => !readFileSync(join(installed, name), 'utf8').includes('// @ts-check'))).toEqual([]);
    const options = [...strictNode16, '--allowJs', '--checkJs', '--skipLibCheck'];
    const messages = compilerSays(typescript.repository, [...options, ...examples.map((name) => join(installed, name))], project);
    expect(messages).toBe('');
  });

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

  it('gives TypeScript its types', () => {
    writeFileSync(
      join(project, 'index.ts'),
      `import Database from 'better-sqlite3';
       import { observeLeadership, observeLeader, whileLeader, LeadershipEvent, LeaderState, ElectedEvent } from 'observe-leadership';
       import { EMPTY } from 'rxjs';
       const db = new Database(':memory:');
       const events = observeLeadership(db, { renewEvery: 1_000, expiresAfter: 3_000 });
       events.pipe(whileLeader((lease: ElectedEvent) => EMPTY)).subscribe();
       events.subscribe((event: LeadershipEvent) => { if (event.type === 'elected') { const term: number = event.term; } });
       observeLeader(db).subscribe((state: LeaderState) => state.holder?.toUpperCase());
       // @ts-expect-error: not an option
       observeLeadership(db, { renewEvry: 1 });`,
    );
    expect(compile('index.ts')).toBe('');
  });

  // A user of node:sqlite or bun:sqlite installs neither better-sqlite3 nor its types, nor
  // pg's: the declarations must compile without them, with every check on (skipLibCheck off).
  it.each([
    [
      'node:sqlite',
      { '@types/node': '@types/node-26' },
      'node',
      `import { DatabaseSync } from 'node:sqlite';
       const db = new DatabaseSync('jobs.db');`,
    ],
    [
      'bun:sqlite',
      // bun-types needs newer Node.js types than 20's: the newest, which npm installs beside it.
      {
        '@types/bun': '@types/bun',
        'bun-types': 'bun-types',
        '@types/node': '@types/node-26',
        'undici-types': '@types/node-26/node_modules/undici-types',
      },
      'bun',
      `import { Database } from 'bun:sqlite';
       const db = new Database('jobs.db');`,
    ],
  ])('compiles a strict project on %s alone, with skipLibCheck false', (_, types, typesName, opening) => {
    const alone = join(folder, `typed-${typesName}`);
    mkdirSync(join(alone, 'node_modules', '@types'), { recursive: true });
    // Copied: from the consumer project's copy, better-sqlite3's types would be found beside it.
    cpSync(join(project, 'node_modules', 'observe-leadership'), join(alone, 'node_modules', 'observe-leadership'), { recursive: true });
    symlinkSync(join(root, 'node_modules', 'rxjs'), join(alone, 'node_modules', 'rxjs'));
    // Copied, not linked: a package's own references to others resolve from where it is.
    for (const [name, from] of Object.entries(types))
      cpSync(join(root, 'node_modules', from), join(alone, 'node_modules', name), { recursive: true });
    writeFileSync(join(alone, 'package.json'), JSON.stringify({ name: `typed-${typesName}`, private: true }));
    writeFileSync(
      join(alone, 'index.ts'),
      `${opening}
       import { concatMap, interval } from 'rxjs';
       import { fenced, holdsLease, isLeader, observeLeader, observeLeadership, whileLeader, type SqliteLeaseStore } from 'observe-leadership';
       observeLeadership(db, { holder: 'typed' }).pipe(isLeader()).subscribe((leading: boolean) => leading);
       observeLeadership(db)
         .pipe(whileLeader((lease, job) => interval(1_000).pipe(concatMap(() => job(() => fenced(db, lease, () => holdsLease(lease)))))))
         .subscribe();
       observeLeader(db).subscribe((state) => state.holder?.toUpperCase());
       export type Store = SqliteLeaseStore;`,
    );
    const options = ['--noEmit', '--strict', '--module', 'node16', '--moduleResolution', 'node16', '--target', 'es2022'];
    expect(compilerSays(typescript.repository, [...options, '--skipLibCheck', 'false', '--types', typesName, 'index.ts'], alone)).toBe('');
    expect(existsSync(join(alone, 'node_modules', 'better-sqlite3'))).toBe(false);
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

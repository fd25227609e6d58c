import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// The package as a user gets it: `npm pack`, installed in a fresh project, then used from
// CommonJS, from an ES module, from TypeScript, with PostgreSQL, and through its command. The
// package's one dependency comes from npm's cache where it can (`npm ci` put its tarball there,
// but not always the registry's metadata that an install also reads: a fresh machine has none);
// the peer dependencies (a native build, for better-sqlite3) are this repository's own, linked in.
describe('the package, installed in a fresh project', () => {
  let folder: string;
  let project: string;
  let files: string[];

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'observe-leadership-package-'));
    const [packed] = JSON.parse(execFileSync(npm, ['pack', '--json', '--pack-destination', folder], { cwd: root, encoding: 'utf8' })) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    files = packed.files.map((file) => file.path);
    project = join(folder, 'consumer');
    mkdirSync(join(project, 'node_modules'), { recursive: true });
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    execFileSync(npm, ['install', join(folder, packed.filename), '--prefer-offline', '--no-audit', '--no-fund', '--legacy-peer-deps', '--no-package-lock'], {
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
  const compile = (file: string) => {
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const options = ['--noEmit', '--strict', '--module', 'node16', '--moduleResolution', 'node16', '--target', 'es2022', '--esModuleInterop', file];
    try {
      return execFileSync(process.execPath, [tsc, ...options], { cwd: project, encoding: 'utf8' });
    } catch (error) {
      return (error as { stdout: string }).stdout; // the compiler's messages
    }
  };

  it('ships only dist, README, LICENSE and package.json', () => {
    expect(files.filter((file) => !file.startsWith('dist/'))).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json']));
    expect(files.filter((file) => !file.startsWith('dist/')).sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js']));
  });

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
    expect(execFileSync(process.execPath, ['no-otel.cjs'], { cwd: project, encoding: 'utf8' })).toBe('no @opentelemetry/api\nmain entry elected packaged\n');
    writeFileSync(
      join(project, 'otel.cjs'),
      `const Database = require('better-sqlite3');
       const { take } = require('rxjs');
       const { observeLeadership } = require('observe-leadership');
       const { leadershipMetrics } = require('observe-leadership/metrics');
       const db = new Database(':memory:');
       observeLeadership(db, { holder: 'packaged', instrument: leadershipMetrics() }).pipe(take(1)).subscribe((event) => console.log('metrics', event.type));`,
    );
    expect(() => execFileSync(process.execPath, ['otel.cjs'], { cwd: project, stdio: 'pipe' })).toThrow(/Cannot find module '@opentelemetry\/api'/);
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

  it('installs its command', () => {
    const command = join(project, 'node_modules', '.bin', 'observe-leadership');
    expect(execFileSync(command, ['--help'], { encoding: 'utf8' })).toContain('usage: observe-leadership');
  });
});

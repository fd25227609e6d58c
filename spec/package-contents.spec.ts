import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { compilerSays, strictNode16, typescript } from './support/compiler';
import { installedPackage } from './support/installed-package';

const root = join(__dirname, '..');
const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';

// What the package ships, and what TypeScript and JavaScript users' compilers make of it:
// none of it depends on the runtime, so it runs once, in the whole suite (package.spec.ts
// runs the installed package on every runtime).
describe('the package, as packed and installed: its files and its types', () => {
  let folder: string;
  let project: string;
  let files: string[];
  let tarball: string;
  let remove: () => void;

  beforeAll(() => {
    ({ folder, project, files, tarball, remove } = installedPackage('observe-leadership-package-contents-'));
  }, 120_000);
  afterAll(() => remove());

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
});

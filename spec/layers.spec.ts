import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const src = join(__dirname, '..', 'src');

/** Every .ts file under src/, as a path relative to it. */
function sources(folder = src): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(folder, entry.name)) : entry.name.endsWith('.ts') ? [relative(src, join(folder, entry.name))] : [],
  );
}

/** The files of src/ that `file` imports (type-only imports included), relative to src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(src, file), 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map(([, path]) => {
    const target = relative(src, resolve(dirname(join(src, file)), path));
    return sources().includes(`${target}.ts`) ? `${target}.ts` : `${target}/index.ts`;
  });
}

/** The layer a file belongs to: its first folder, or `entry` for the entry points at the root. */
const layerOf = (file: string) => (file.includes('/') ? file.split('/')[0] : 'entry');

/**
 * Which layers each may import, below it only: the core is shared by all; the stores hold
 * all SQL and never see timers; the campaign drives a store and never sees SQL; the surface
 * (the observables, fenced, operators, instruments) builds on the campaign; the entry points
 * and the command line on everything.
 */
const allowed: Record<string, string[]> = {
  core: ['core'],
  store: ['core', 'store'],
  campaign: ['core', 'store', 'campaign'],
  surface: ['core', 'store', 'campaign', 'surface'],
  cli: ['core', 'store', 'campaign', 'surface', 'cli'],
  entry: ['core', 'store', 'campaign', 'surface'],
};

describe('the layers of src/', () => {
  const files = sources();

  it('are the folders core, store, campaign, surface and cli, with only the entry points at the root', () => {
    expect([...new Set(files.map(layerOf))].sort()).toEqual(['campaign', 'cli', 'core', 'entry', 'store', 'surface']);
    expect(files.filter((file) => layerOf(file) === 'entry').sort()).toEqual(['index.ts', 'metrics.ts', 'postgres.ts']);
    // Entry points only re-export.
    for (const entry of ['index.ts', 'metrics.ts', 'postgres.ts']) {
      const code = readFileSync(join(src, entry), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      expect({
        entry,
        statements: code.split(/;\s*/).filter((s) => s.trim() !== '' && !/^\s*export (type )?\{[\s\S]*\} from '/.test(s)),
      }).toEqual({ entry, statements: [] });
    }
  });

  it('import only from their own layer and those below it', () => {
    const wrong = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => !allowed[layerOf(file)].includes(layerOf(target)))
        .map((target) => `${file} imports ${target}`),
    );
    expect(wrong).toEqual([]);
  });

  it('have no two files that import each other', () => {
    const pairs = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => importsOf(target).includes(file) && file < target)
        .map((target) => `${file} <-> ${target}`),
    );
    expect(pairs).toEqual([]);
  });
});

describe('the tools', () => {
  const root = join(__dirname, '..');
  const tools = ['test-kit', 'chaos', 'bench', 'demo'];

  it('use the built package, never src/: one copy of the library, as users have it', () => {
    const wrong = tools.flatMap((folder) =>
      readdirSync(join(root, folder))
        .filter((name) => name.endsWith('.ts'))
        .filter((name) => /(?:from|import)\s*\(?\s*'(?:\.\.\/)+src\//.test(readFileSync(join(root, folder, name), 'utf8')))
        .map((name) => `${folder}/${name}`),
    );
    expect(wrong).toEqual([]);
  });

  it('share their kit from test-kit/, and leave chaos/ to the harness', () => {
    const fromChaos = ['test-kit', 'bench', 'demo'].flatMap((folder) =>
      readdirSync(join(root, folder))
        .filter((name) => name.endsWith('.ts') && /from '\.\.\/chaos\//.test(readFileSync(join(root, folder, name), 'utf8')))
        .map((name) => `${folder}/${name}`),
    );
    expect(fromChaos).toEqual([]);
  });
});

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import ts from 'typescript';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

const src = join(__dirname, '..', 'src');

/** Every .ts file under `root`, as a path relative to it. */
function sources(root = src, folder = root): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(root, join(folder, entry.name))
      : entry.name.endsWith('.ts')
        ? [relative(root, join(folder, entry.name))]
        : [],
  );
}

/** Each .ts file under `root` with the files under `root` it imports (type-only imports included), relative to it. */
function importGraph(root = src): Map<string, string[]> {
  const files = sources(root);
  return new Map(
    files.map((file) => {
      const text = readFileSync(join(root, file), 'utf8');
      const targets = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map(([, path]) => {
        const target = relative(root, resolve(dirname(join(root, file)), path));
        return files.includes(`${target}.ts`) ? `${target}.ts` : `${target}/index.ts`;
      });
      return [file, targets];
    }),
  );
}

/** Every loop of imports in `graph`, of any length, each once, as `a -> b -> ... -> a` from its smallest file. */
function importLoops(graph: Map<string, string[]>): string[] {
  const loops = new Set<string>();
  const visit = (file: string, path: string[]) => {
    const at = path.indexOf(file);
    if (at >= 0) {
      const loop = path.slice(at);
      const start = loop.indexOf([...loop].sort()[0]);
      const rotated = [...loop.slice(start), ...loop.slice(0, start)];
      loops.add([...rotated, rotated[0]].join(' -> '));
      return;
    }
    for (const target of graph.get(file) ?? []) visit(target, [...path, file]);
  };
  // Acyclic graphs end each walk at a leaf; a walk that meets its own path is a loop.
  for (const file of graph.keys()) visit(file, []);
  return [...loops].sort();
}

/** The layer a file belongs to: its first folder, or `entry` for the entry points at the root. */
const layerOf = (file: string) => (file.includes('/') ? file.split('/')[0] : 'entry');

/**
 * Which layers each may import, below it only: the core is shared by all; the stores hold
 * all SQL and never see timers; the pacing helpers say how a reader paces its calls to a
 * store, and set no timer either; the campaign drives a store and never sees SQL; the surface
 * (the observables, fenced, operators, instruments) builds on the campaign; the entry points
 * and the command line on everything.
 */
const allowed: Record<string, string[]> = {
  core: ['core'],
  store: ['core', 'store'],
  pacing: ['core', 'store', 'pacing'],
  campaign: ['core', 'store', 'pacing', 'campaign'],
  surface: ['core', 'store', 'pacing', 'campaign', 'surface'],
  cli: ['core', 'store', 'pacing', 'campaign', 'surface', 'cli'],
  entry: ['core', 'store', 'pacing', 'campaign', 'surface'],
};

describe('the layers of src/', () => {
  const files = sources();
  const graph = importGraph();
  const importsOf = (file: string) => graph.get(file) ?? [];

  it('are the folders core, store, pacing, campaign, surface and cli, with only the entry points at the root', () => {
    expect([...new Set(files.map(layerOf))].sort()).toEqual(['campaign', 'cli', 'core', 'entry', 'pacing', 'store', 'surface']);
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

  it('have no loop of imports, of any length', () => {
    expect(importLoops(graph)).toEqual([]);
  });

  it('would show a loop of three files planted among others', () => {
    const planted = mkdtempSync(join(tmpdir(), 'observe-leadership-layers-'));
    try {
      writeFileSync(join(planted, 'a.ts'), "import { b } from './b';\nexport const a = b;\n");
      writeFileSync(join(planted, 'b.ts'), "import { c } from './c';\nexport const b = c;\n");
      writeFileSync(join(planted, 'c.ts'), "import type { a } from './a';\nimport { d } from './d';\nexport const c: typeof a = d;\n");
      writeFileSync(join(planted, 'd.ts'), 'export const d = 1;\n');
      expect(importLoops(importGraph(planted))).toEqual(['a.ts -> b.ts -> c.ts -> a.ts']);
    } finally {
      rmSync(planted, { recursive: true, force: true });
    }
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

  it("use only the package's exports: no file of dist/ that the exports do not list", () => {
    const wrong = tools.flatMap((folder) =>
      readdirSync(join(root, folder))
        .filter((name) => name.endsWith('.ts') && /['"](\.\.\/)+dist\//.test(readFileSync(join(root, folder, name), 'utf8')))
        .map((name) => `${folder}/${name}`),
    );
    expect(wrong).toEqual([]);
  });

  it('leave sim/ to the simulator: it alone drives src/ (its seams), and nothing but its specs imports it', () => {
    const fromSim = [...tools, 'src'].flatMap((folder) =>
      readdirSync(join(root, folder), { recursive: true })
        .map(String)
        .filter((name) => name.endsWith('.ts') && /from '(?:\.\.\/)+sim\//.test(readFileSync(join(root, folder, name), 'utf8')))
        .map((name) => `${folder}/${name}`),
    );
    expect(fromSim).toEqual([]);
    expect(
      readdirSync(join(root, 'sim')).some(
        (name) => name.endsWith('.ts') && /from '\.\.\/src\//.test(readFileSync(join(root, 'sim', name), 'utf8')),
      ),
    ).toBe(true);
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

/** Each function of the .ts files under `folder` longer than `limit` lines, as `lines file:line name`. */
function longFunctions(folder: string, limit: number): string[] {
  const long: string[] = [];
  for (const file of sources(folder)) {
    const source = ts.createSourceFile(file, readFileSync(join(folder, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
        const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const lines = source.getLineAndCharacterOfPosition(node.end).line - first + 1;
        const name = 'name' in node && node.name !== undefined ? (node.name as ts.Node).getText() : '(anonymous)';
        if (lines > limit) long.push(`${lines} ${relative(join(__dirname, '..'), join(folder, file))}:${first + 1} ${name}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return long;
}

describe('the length of a function', () => {
  const root = join(__dirname, '..');

  it('is at most 60 lines in src/: a longer one hides more than one thing', () => {
    expect(longFunctions(src, 60)).toEqual([]);
  });

  it('is at most 100 lines in the tools (bench/, chaos/, test-kit/, demo/)', () => {
    expect(['bench', 'chaos', 'test-kit', 'demo'].flatMap((folder) => longFunctions(join(root, folder), 100))).toEqual([]);
  });

  it('would show one planted over the limit', () => {
    const planted = mkdtempSync(join(tmpdir(), 'observe-leadership-lengths-'));
    try {
      writeFileSync(join(planted, 'long.ts'), `export function long(): number {\n${'  void 0;\n'.repeat(60)}  return 1;\n}\n`);
      expect(longFunctions(planted, 60)).toEqual([expect.stringMatching(/^63 .*long\.ts:1 long$/)]);
    } finally {
      rmSync(planted, { recursive: true, force: true });
    }
  });
});

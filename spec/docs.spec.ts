import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { compilerSays, strictNode16, typescript } from './support/compiler';

const root = join(__dirname, '..');

/** README.md and every Markdown file under docs/, as paths relative to the repository. */
function documents(): string[] {
  const found = ['README.md'];
  const walk = (folder: string) => {
    if (!existsSync(join(root, folder))) return;
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found;
}

/** The fenced code blocks of a Markdown text: their info string, first line number and code. */
function codeBlocks(text: string): Array<{ info: string; line: number; code: string }> {
  const blocks: Array<{ info: string; line: number; code: string }> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S.*)?$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    while (++i < lines.length && lines[i] !== '```');
    blocks.push({ info: (open[1] ?? '').trim(), line: start + 1, code: lines.slice(start + 1, i).join('\n') });
  }
  return blocks;
}

const all = documents().flatMap((document) =>
  codeBlocks(readFileSync(join(root, document), 'utf8')).map((block) => ({ document, ...block })),
);

// What the documentation shows must be what the package does: its TypeScript compiles
// against the built package's types, and its commands name scripts and files that exist.
describe('code in README.md and docs/', () => {
  const tsBlocks = all.filter((block) => block.info === 'ts');

  /**
   * What a compiler says of every ```ts block, each a module of its own in a fresh project
   * that links the built package and its peers ('' when all compile), with each message at
   * the document's own line and column. `prepare` makes the project's settings.
   */
  const compileBlocks = (tsc: string, prepare: (project: string) => string[]): string => {
    const project = mkdtempSync(join(tmpdir(), 'observe-leadership-docs-'));
    try {
      mkdirSync(join(project, 'node_modules', '@types'), { recursive: true });
      symlinkSync(root, join(project, 'node_modules', 'observe-leadership'));
      for (const dependency of ['better-sqlite3', 'rxjs', 'pg', '@opentelemetry', '@types/better-sqlite3', '@types/node', '@types/pg']) {
        symlinkSync(join(root, 'node_modules', dependency), join(project, 'node_modules', dependency));
      }
      const options = prepare(project);
      // Each block is a module of its own, whether or not it imports anything.
      tsBlocks.forEach((block, i) => writeFileSync(join(project, `block-${i}.ts`), `${block.code}\nexport {};\n`));
      /** `block-N.ts(line,column)` as the document's own line and column. */
      const where = (_: string, index: string, line: string, column: string) => {
        const block = tsBlocks[Number(index)];
        return `${block.document}:${block.line + Number(line)}:${column}`;
      };
      return compilerSays(tsc, options, project).replace(/block-(\d+)\.ts\((\d+),(\d+)\)/g, where);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  };

  it("type-checks every ```ts block against the built package, with this repository's TypeScript (```ts partial blocks excepted)", () => {
    expect(tsBlocks.length).toBeGreaterThanOrEqual(5);
    const messages = compileBlocks(typescript.repository, (project) => {
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'docs', private: true }));
      return [...strictNode16, '--esModuleInterop', '--skipLibCheck', ...tsBlocks.map((_, i) => `block-${i}.ts`)];
    });
    expect(messages).toBe('');
  }, 120_000);

  // As a new user compiles them: an ES module project with whatever `tsc --init` of the newest
  // TypeScript writes (`verbatimModuleSyntax`, `exactOptionalPropertyTypes`, `nodenext`, ...),
  // installed beside the one ts-jest needs for this check alone.
  it('type-checks every ```ts block as a fresh ES module project with `tsc --init` of TypeScript 7 would', () => {
    const tsc = typescript.newest;
    expect(execFileSync(process.execPath, [tsc, '--version'], { encoding: 'utf8' })).toMatch(/^Version 7\./);
    const messages = compileBlocks(tsc, (project) => {
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'docs', private: true, type: 'module' }));
      execFileSync(process.execPath, [tsc, '--init'], { cwd: project, encoding: 'utf8' });
      return ['--noEmit', '-p', '.'];
    });
    expect(messages).toBe('');
  }, 120_000);

  it('names, in every ```sh block, npm scripts and files of this repository that exist, and files of the package that it ships', () => {
    const { scripts, files } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      files: string[];
    };
    const commands = all
      .filter((block) => block.info === 'sh')
      .flatMap((block) =>
        block.code.split('\n').map((line) => ({ where: `${block.document}:${block.line}`, command: line.replace(/\s+#.*$/, '').trim() })),
      )
      .filter(({ command }) => command !== '');
    expect(commands.length).toBeGreaterThan(5);
    const missing = commands.flatMap(({ where, command }) => {
      const script = /^npm (?:run ([\w:-]+)|(start|test))\b/.exec(command);
      if (script) return scripts[script[1] ?? script[2]] === undefined ? [`${where}: ${command}`] : [];
      // A user of the package runs its files from node_modules: they must exist here, and ship.
      const shipped = /^node node_modules\/observe-leadership\/(\S+)/.exec(command);
      if (shipped)
        return existsSync(join(root, shipped[1])) && files.some((folder) => shipped[1].startsWith(`${folder}/`))
          ? []
          : [`${where}: ${command}`];
      const file = /^node (\S+)/.exec(command);
      if (file) return existsSync(join(root, file[1])) ? [] : [`${where}: ${command}`];
      return [];
    });
    expect(missing).toEqual([]);
  });

  it('links only to files and headings that exist', () => {
    /** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
    const slug = (heading: string) =>
      heading
        .toLowerCase()
        .replace(/[^\p{L}\p{N}_\- ]/gu, '')
        .replace(/ /g, '-');
    const anchorsOf = (file: string) =>
      new Set(
        readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => /^#{1,6} /.test(line))
          .map((line) => slug(line.replace(/^#+ /, ''))),
      );
    const broken: string[] = [];
    let links = 0;
    for (const document of documents()) {
      const text = readFileSync(join(root, document), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        links++;
        const [path, anchor] = target.split('#');
        const file = path === '' ? join(root, document) : join(root, document, '..', path);
        if (!existsSync(file)) broken.push(`${document}: ${target} (no such file)`);
        else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor))
          broken.push(`${document}: ${target} (no such heading)`);
      }
    }
    expect(links).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });
});

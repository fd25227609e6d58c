import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bunRuntime, nodeRuntime } from '../test-kit/runtimes';

/**
 * docs/bad-input.md's table "A connection that cannot serve", as `{ situation: { entry point:
 * outcome } }`, without the cells it marks `-` (not applicable).
 */
function documentedOutcomes(): Record<string, Record<string, string>> {
  const page = readFileSync(join(__dirname, '..', 'docs', 'bad-input.md'), 'utf8');
  const rows = page
    .slice(page.indexOf('## A connection that cannot serve'))
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  const [header, , ...body] = rows;
  const entryPoints = header.slice(1).map((cell) => cell.replace(/`/g, ''));
  return Object.fromEntries(
    body.map(([situation, ...cells]) => [
      situation,
      Object.fromEntries(cells.map((cell, i) => [entryPoints[i], cell]).filter(([, cell]) => cell !== '-')),
    ]),
  );
}

/** node:sqlite's runtime: the one running the suite where it has node:sqlite (22.13 and later), else Node.js 24. */
const nodeWithSqlite = () => (Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : nodeRuntime('24.22.3').node);

// Each driver on its runtime runs spec/support/bad-input-cases.js, every case of the table
// through the built package, as a user's program would.
describe.each([
  ['better-sqlite3', () => process.execPath],
  ['node:sqlite', nodeWithSqlite],
  ['bun', bunRuntime],
])('a SQLite connection that cannot serve, with %s', (driver, runtime) => {
  let folder: string;
  beforeEach(() => (folder = mkdtempSync(join(tmpdir(), 'observe-leadership-bad-input-'))));
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it('gives the outcome docs/bad-input.md gives, for every entry point', () => {
    const expected = documentedOutcomes();
    expect(Object.keys(expected)).toEqual(['closed before the call', 'closed while running', 'read-only connection', 'not a database']);
    const run = spawnSync(runtime(), [join(__dirname, 'support', 'bad-input-cases.js'), driver, folder], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    // Nothing on stderr but the warning Node.js 22 gives for node:sqlite (docs/operating.md says so).
    const stderr = run.stderr.replace(
      /^\(node:\d+\) ExperimentalWarning: SQLite is an experimental feature.*\n(\(Use `node --trace-warnings .*\n)?/m,
      '',
    );
    expect({ status: run.status, stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual(expected);
  });
});

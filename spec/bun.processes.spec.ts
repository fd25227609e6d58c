import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bunRuntime } from '../test-kit/runtimes';

// Bun's own test runner over spec/bun: the library on bun:sqlite, as a Bun user runs it (the
// built package, by its name; Bun from the npm package that ships it, test-kit/runtimes.ts).
it('passes the bun:sqlite specs under Bun', () => {
  const bun = bunRuntime();
  const run = spawnSync(bun, ['test', './spec/bun'], { cwd: join(__dirname, '..'), encoding: 'utf8', timeout: 240_000 });
  const output = `${run.stdout}${run.stderr}`;
  // Bun's own counts, for CI's summary (.ci/run sets the folder).
  const reports = process.env.OBSERVE_LEADERSHIP_REPORTS;
  if (reports) {
    const count = (word: string) => Number(new RegExp(`\\b(\\d+) ${word}\\b`).exec(output)?.[1] ?? NaN);
    const version = spawnSync(bun, ['--version'], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(join(reports, 'bun.json'), JSON.stringify({ version, pass: count('pass'), fail: count('fail') }));
  }
  expect({ status: run.status, output }).toEqual({ status: 0, output: expect.stringMatching(/\b[1-9]\d* pass\b[\s\S]*\b0 fail\b/) });
}, 300_000);

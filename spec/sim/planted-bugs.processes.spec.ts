import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { plants } from '../../sim/plants';
import type { Scenario } from '../../sim/scenario';

const main = join(__dirname, '..', '..', 'build', 'sim', 'main.js');

/** `npm run simulate -- ...args` on the built simulator: its exit code and output. */
function simulate(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [main, ...args], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number(error.code), output: stdout + stderr }),
    );
  });
}

// Each bug a careless change could make (sim/plants.ts), switched into the built library as
// it loads: the simulator finds it within 60 seeds from 1, shrinks it to a few faults and a
// short timeline, and the scenario it writes shows the same violation when replayed. On one
// thread, and explored and shrunk by a number of runs rather than for a time: the same
// result on any machine, however busy.
describe.each(Object.entries(plants))('npm run simulate -- --plant %s', (name, { what }) => {
  it(`finds ${what}, and shrinks it`, async () => {
    const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-plant-'));
    const file = join(folder, 'shrunk.json');
    try {
      const found = await simulate([
        '--plant',
        name,
        '--seed',
        '1',
        '--runs',
        '60',
        '--seconds',
        '3600',
        '--threads',
        '1',
        '--shrink-runs',
        '200',
        '--shrink-seconds',
        '3600',
        '--out',
        file,
      ]);
      const violation = /^seed \d+: (\S+): /m.exec(found.output);
      expect({ code: found.code, violation: violation !== null, output: violation === null ? found.output : '' }).toEqual({
        code: 1,
        violation: true,
        output: '',
      });
      const shrunk = JSON.parse(readFileSync(file, 'utf8')) as Scenario;
      expect(shrunk.plant).toBe(name);
      // Of about 500. The most a plant needs is 17 (resubscribe-at-once: one holder's subscriptions must overlap).
      expect(shrunk.faults.length).toBeLessThanOrEqual(20);
      const timeline = found.output.slice(found.output.indexOf('its timeline:'), found.output.indexOf('replay:')).split('\n');
      expect(timeline.length).toBeLessThan(80);

      const replayed = await simulate(['--replay', file]);
      expect(replayed.code).toBe(1);
      expect(replayed.output).toContain(`violation, ${violation![1]}: `);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 120_000);
});

// The campaign's plants show on PostgreSQL too: one found there (seed 5, 20 s runs) and shrunk,
// replayed on the real statements on PGlite.
describe('npm run simulate -- --replay a plant found on PostgreSQL', () => {
  it('shows the violation the plant made', async () => {
    const file = join(__dirname, 'planted', 'lock-delay-skipped.postgres.json');
    const replayed = await simulate(['--replay', file]);
    expect(replayed.code).toBe(1);
    expect(replayed.output).toMatch(/^violation, lock-delay: /m);
    expect(replayed.output).toContain('PostgreSQL, planted: lock-delay-skipped');
  }, 60_000);
});

describe('npm run simulate -- --exhaustive --plant take-keeps-term', () => {
  it('finds the plant among every schedule of the search, and writes a run that replays it', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-exhaustive-'));
    const file = join(folder, 'found.json');
    try {
      const found = await simulate(['--exhaustive', '--candidates', '2', '--plant', 'take-keeps-term', '--out', file]);
      expect(found.code).toBe(1);
      expect(found.output).toMatch(/^violation, term-order: /m);
      const replayed = await simulate(['--replay', file]);
      expect(replayed.code).toBe(1);
      expect(replayed.output).toMatch(/^violation, term-order: /m);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);
});

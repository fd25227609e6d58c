import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Comparison } from '../../bench/bench';
import { SpawnedScript } from '../support/spawned-script';

// The benchmark is a script, not a timed test: this only runs its tiny smoke, so that it
// cannot rot. It asserts that every scenario produced numbers, never what they are.
describe('npm run bench -- --smoke', () => {
  it('runs every scenario on both sides, and on PostgreSQL, and writes the results and the chart', async () => {
    const out = mkdtempSync(join(tmpdir(), 'observe-leadership-bench-spec-'));
    try {
      const bench = new SpawnedScript(join(__dirname, '..', '..', 'build', 'bench', 'bench.js'), ['--smoke', '--out', out]);
      const { code, output } = await bench.result();
      expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('graceful handoff') });

      const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as {
        comparisons: Comparison[];
        postgres: Record<'handoff' | 'takeover' | 'takeoverPastExpiry', Comparison['ours']>;
      };
      expect(results.comparisons.length).toBeGreaterThanOrEqual(4);
      for (const { ours, baseline } of results.comparisons) {
        expect(Number.isFinite(ours.p50) && Number.isFinite(baseline.p50)).toBe(true);
      }
      // The same trials on PostgreSQL (this run's server, through the environment).
      for (const trials of [results.postgres.handoff, results.postgres.takeover, results.postgres.takeoverPastExpiry]) {
        expect(Number.isFinite(trials.p50)).toBe(true);
      }
      expect(existsSync(join(out, 'latency.svg'))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});

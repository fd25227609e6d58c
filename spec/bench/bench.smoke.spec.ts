import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IdleRun } from '../../bench/idle';
import type { Comparison } from '../../bench/cluster';
import type { DriverRun } from '../../bench/drivers';
import type { FleetResult } from '../../bench/fleet';
import { SpawnedScript } from '../support/spawned-script';

// The benchmark is a script, not a timed test: this only runs its tiny smoke, so that it
// cannot rot. It asserts that every scenario produced numbers, never what they are.
describe('npm run bench -- --smoke', () => {
  it('runs every scenario in the default and the WAL journal modes, on both sides, and on PostgreSQL, and writes the results and the chart', async () => {
    const out = mkdtempSync(join(tmpdir(), 'observe-leadership-bench-spec-'));
    try {
      const bench = new SpawnedScript(join(__dirname, '..', '..', 'build', 'bench', 'bench.js'), ['--smoke', '--out', out]);
      const { code, output } = await bench.result();
      expect({ code, output }).toEqual({ code: 0, output: expect.stringContaining('graceful handoff') });

      const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as {
        comparisons: Comparison[];
        postgres: Record<'handoff' | 'namedHandoff' | 'takeover' | 'takeoverPastExpiry' | 'coldStart', Comparison['ours']> & {
          pgbouncer: Record<'transaction' | 'session', Comparison['ours']>;
          namedHandoffMisses: number;
        };
        namedHandoffMisses: Record<string, number>;
        fleet: FleetResult;
        simulator: { failovers: number; violations: number; failoversPerSecond: number };
        idle: Array<IdleRun & { journal: string; kind: string }>;
        statements: Record<string, unknown>;
        drivers: DriverRun[];
        crashes: Record<string, { overlaps: number; stopped: { electedBeforeExpiry: number; electedPastExpiry: number } }>;
      };
      expect(results.comparisons.length).toBeGreaterThanOrEqual(4);
      for (const { ours, original } of results.comparisons) {
        expect(Number.isFinite(ours.p50) && (original === undefined || Number.isFinite(original.p50))).toBe(true);
      }
      // The original beside ours in the first mode: handoff, crash takeover, scale.
      expect(results.comparisons.filter((c) => c.original !== undefined)).toHaveLength(3);
      // Handoffs to a named successor, a few processes and many, in both modes: the named one won every trial.
      expect(results.comparisons.filter((c) => c.scenario.startsWith('handoff to a named successor')).map((c) => c.scenario)).toHaveLength(
        4,
      );
      expect(Object.values(results.namedHandoffMisses)).toEqual([0, 0, 0, 0]);
      expect(results.postgres.namedHandoffMisses).toBe(0);
      expect(results.fleet.namedHandoffMisses).toBe(0);
      // Crashes and a stopped leader in both modes: never two leaders, nobody elected before a stopped leader's lease ended.
      for (const journal of ['delete', 'wal']) {
        expect(results.crashes[journal]).toMatchObject({ overlaps: 0, stopped: { electedBeforeExpiry: 0 } });
        expect(results.crashes[journal].stopped.electedPastExpiry).toBeGreaterThanOrEqual(0);
      }
      // The same trials on PostgreSQL (this run's server, through the environment).
      const { pgbouncer } = results.postgres;
      for (const trials of [
        results.postgres.handoff,
        results.postgres.namedHandoff,
        results.postgres.takeover,
        results.postgres.takeoverPastExpiry,
        results.postgres.coldStart,
        pgbouncer.transaction,
        pgbouncer.session,
      ]) {
        expect(Number.isFinite(trials.p50)).toBe(true);
      }
      // The simulator, for 3 s: failovers, no violation.
      expect(results.simulator).toMatchObject({ violations: 0, failovers: expect.any(Number) });
      expect(results.simulator.failovers).toBeGreaterThan(0);
      // The fleet, tiny: processes on two network-namespace hosts, one connection each, one leader at a time.
      const { fleet } = results;
      expect(fleet).toMatchObject({ hosts: 2, processes: 4, maxConnections: 100, overlaps: 0 });
      expect(fleet.idle.connections.perProcess).toBe(1);
      expect(Number.isFinite(fleet.handoff.p50) && Number.isFinite(fleet.namedHandoff.p50) && Number.isFinite(fleet.takeover.p50)).toBe(
        true,
      );
      // Idle runs in both modes of the smoke, beside an application's writes too, each with its leader.
      expect(results.idle.map((run) => `${run.journal} ${run.kind} ${run.processes} ${run.appRowsPerSecond > 0}`).sort()).toEqual([
        'delete candidate 4 false',
        'delete candidate 4 true',
        'delete candidate 6 false',
        'delete original 4 false',
        'wal candidate 4 false',
        'wal candidate 4 true',
        'wal candidate 6 false',
      ]);
      for (const run of results.idle) expect(Number.isFinite(run.leader) && run.elections >= 1).toBe(true);
      expect(Object.keys(results.statements).sort()).toEqual(['delete', 'wal']);
      // Each SQLite driver on its runtime, in both modes: handoffs, takeovers, idle, and one leader at a time.
      expect(results.drivers.map((run) => `${run.journal} ${run.driver}`).sort()).toEqual([
        'delete better-sqlite3',
        'delete bun:sqlite',
        'delete node:sqlite',
        'wal better-sqlite3',
        'wal bun:sqlite',
        'wal node:sqlite',
      ]);
      for (const run of results.drivers) {
        expect(run.overlaps).toBe(0);
        expect(Number.isFinite(run.handoff.p50) && Number.isFinite(run.takeover.p50) && Number.isFinite(run.idle.leader)).toBe(true);
      }
      expect(existsSync(join(out, 'latency.svg'))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 240_000);
});

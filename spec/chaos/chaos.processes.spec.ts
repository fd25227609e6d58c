import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChaosSummary } from '../../chaos/report';
import { testDatabaseUrl } from '../support/postgres-database';

// The short chaos runs that CI makes on every change: 4 candidate processes, 2 slots, 20 s
// of faults of every kind (seed 2 plans nine: every one but the host cut-offs and the clock steps). On SQLite, in the default journal mode and
// in WAL, one more process runs the original statements (not while clocks step: it judges
// by the wall clock); on PostgreSQL, the workers share a
// fresh schema of this run's server, of a server of the run's own reached from two hosts,
// or of this run's server through its PgBouncer.
describe.each([
  ["SQLite, journal_mode delete (better-sqlite3's defaults)", () => ['--journal', 'delete']],
  ['SQLite, journal_mode wal (as README advises)', () => ['--journal', 'wal']],
  ['PostgreSQL', () => ['--postgres', testDatabaseUrl()]],
  // Seed 19 plans three host cut-offs among eight kinds of fault, step-downs among them.
  ['PostgreSQL from 2 hosts (network namespaces), with host cut-offs', () => ['--postgres', '--hosts', '2', '--seed', '19']],
  ['PostgreSQL through PgBouncer in transaction mode', () => ['--postgres', testDatabaseUrl(), '--pgbouncer', 'transaction']],
  // Seed 155 plans a step of 78 minutes back, one of 189 minutes forward and a strobe among
  // eight kinds of fault; every worker's wall clock steps (libfaketime), or the server's.
  ["SQLite, journal_mode delete, every worker's wall clock stepping", () => ['--journal', 'delete', '--clock-steps', '--seed', '155']],
  ["PostgreSQL, the server's wall clock stepping", () => ['--postgres', '--clock-steps', '--seed', '155']],
])('npm run chaos on %s, short', (_, where) => {
  it('injects faults of every kind and finds no violation', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-chaos-spec-'));
    const report = join(folder, 'report.json');
    try {
      // Jest runs other process-heavy suites beside this one on the same two cores: the
      // liveness slack is wider than the command's default. Safety checks have none.
      const args = ['--processes', '4', '--duration', '20', '--lease', '600', '--seed', '2', '--slots', '2', '--slack', '2500'];
      args.push('--report', report, ...where());
      const chaos = spawn(process.execPath, [join(__dirname, '..', '..', 'build', 'chaos', 'main.js'), ...args]);
      let output = '';
      chaos.stdout.on('data', (chunk) => (output += chunk));
      chaos.stderr.on('data', (chunk) => (output += chunk));
      const code = await new Promise((resolve) => chaos.once('exit', resolve));

      const { summary, violations } = JSON.parse(readFileSync(report, 'utf8')) as { summary: ChaosSummary; violations: unknown[] };
      // What was violated, and the run's table and timelines (chaos/report.ts), show in a failure.
      expect({ code, violations, output: code === 0 ? '' : output }).toEqual({ code: 0, violations: [], output: '' });
      expect(summary.byKind.filter((k) => k.count > 0).length).toBeGreaterThanOrEqual(4);
      // Leaders cut off from the server, and none late to step down.
      if (where().includes('--hosts')) expect(summary.byKind.find((k) => k.kind === 'cut-host')!.count).toBeGreaterThan(0);
      if (where().includes('--clock-steps')) expect(summary.byKind.find((k) => k.kind === 'clock-step')!.count).toBeGreaterThan(0);
      expect(summary.counts.tenures).toBeGreaterThan(5);
      expect(summary.counts.ledgerRows).toBeGreaterThan(0);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 90_000);
});

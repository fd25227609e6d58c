import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArguments } from '../../chaos/main';
import { ChaosHistory } from '../../chaos/orchestrator';

const main = join(__dirname, '..', '..', 'build', 'chaos', 'main.js');

describe('chaos command line', () => {
  it('takes the documented options, and refuses unknown or out-of-range ones', () => {
    expect(parseArguments(['--processes', '8', '--duration', '300', '--lease', '600', '--seed', '42', '--slots', '2'])).toEqual(
      expect.objectContaining({ processes: 8, duration: 300, lease: 600, seed: 42, slots: 2, originalWorker: true }),
    );
    expect(parseArguments(['--no-original-worker', '--report', 'r.json']).originalWorker).toBe(false);
    expect(() => parseArguments(['--lease', '5'])).toThrow('Expected --lease to be an integer from 10 to 600000, got 5');
    expect(() => parseArguments(['--processes'])).toThrow('Expected a value after --processes');
    expect(() => parseArguments(['--bogus'])).toThrow('Unknown option --bogus');
    expect(parseArguments(['--postgres', '--hosts', '8'])).toEqual(expect.objectContaining({ postgres: true, hosts: 8 }));
    expect(parseArguments(['--postgres', 'postgres://x/y', '--pgbouncer', 'transaction'])).toEqual(
      expect.objectContaining({ pgbouncer: 'transaction' }),
    );
    expect(() => parseArguments(['--hosts', '8'])).toThrow('--hosts and --pgbouncer are for PostgreSQL: add --postgres');
    expect(() => parseArguments(['--postgres', 'postgres://x/y', '--hosts', '8'])).toThrow('--hosts needs a server of its own');
    expect(() => parseArguments(['--postgres', '--pgbouncer', 'statement'])).toThrow(
      'Expected --pgbouncer to be one of transaction, session, got statement',
    );
    // The original worker judges by the wall clock, which a step fools: no worker of its statements then.
    expect(parseArguments(['--clock-steps'])).toEqual(expect.objectContaining({ clockSteps: true, originalWorker: false }));
    expect(() => parseArguments(['--postgres', 'postgres://x/y', '--clock-steps'])).toThrow(
      "--clock-steps steps a server's clock of its own",
    );
  });

  it('--check re-checks a saved history and exits 1 when it finds a violation', () => {
    const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-check-'));
    try {
      const elected = (pid: number, holder: string, term: number, at: number) => ({
        pid,
        at,
        type: 'elected',
        slot: 0,
        holder,
        term,
        expiresAt: at + 600,
      });
      const history: ChaosHistory = {
        options: { processes: 2, duration: 1000, lease: 600, seed: 1, slots: 1, originalWorker: false },
        timing: { renewEvery: 200, expiresAfter: 600, retryEvery: 120 },
        startedAt: 0,
        endedAt: 1000,
        records: [elected(1, 'a', 1, 0), elected(2, 'b', 2, 300)], // b was elected while a's lease ran
        faults: [],
        ledger: [],
        final: { at: 1000, rows: [{ slot: 0, holder: 'b', expiresAt: 900 }], liveHolders: [{ slot: 0, holder: 'b' }] },
      };
      const file = join(folder, 'report.json');
      writeFileSync(file, JSON.stringify({ history }));
      const run = spawnSync(process.execPath, [main, '--check', file], { encoding: 'utf8' });
      expect(run.status).toBe(1);
      expect(run.stdout).toMatch(/overlapping beliefs: 1/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

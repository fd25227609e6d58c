import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArguments } from '../../chaos/main';
import { checkHistory } from '../../chaos/checker';
import { ChaosHistory } from '../../chaos/orchestrator';
import { formatSummary, summarize } from '../../chaos/report';

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

  it('prints what every process reported around a gap longer than allowed', () => {
    const history: ChaosHistory = {
      options: { processes: 2, duration: 6000, lease: 600, seed: 1, slots: 1, originalWorker: false },
      timing: { renewEvery: 200, expiresAfter: 600, retryEvery: 120 },
      startedAt: 0,
      endedAt: 6000,
      records: [
        { pid: 1, at: 0, mono: 1000, type: 'elected', slot: 0, holder: 'a', term: 1, expiresAt: 600, monoExpiresAt: 1600 },
        { pid: 2, at: 300, mono: 1300, type: 'error', slot: 0, holder: 'b', code: 'DATABASE_BUSY' },
        { pid: 2, at: 5000, mono: 6000, type: 'elected', slot: 0, holder: 'b', term: 2, expiresAt: 5600, monoExpiresAt: 6600 },
      ],
      faults: [{ kind: 'kill', slot: 0, at: 100, mono: 1100, pid: 1, holder: 'a' }],
      ledger: [],
      final: { at: 6000, mono: 7000, rows: [{ slot: 0, holder: 'b', expiresAt: 5600 }], liveHolders: [{ slot: 0, holder: 'b' }] },
    };
    const result = checkHistory(history, { slack: 0 });
    const output = formatSummary(history, summarize(history, result), result);
    expect(output).toContain(
      [
        'what happened around the kill on slot 0 at 100 ms:',
        '      0  ? (1) elected {"slot":0,"holder":"a","term":1,"expiresAt":600,"monoExpiresAt":1600}',
        '    100  fault kill on slot 0 at pid 1',
        '    300  ? (2) error {"slot":0,"holder":"b","code":"DATABASE_BUSY"}',
        '   5000  ? (2) elected {"slot":0,"holder":"b","term":2,"expiresAt":5600,"monoExpiresAt":6600}',
      ].join('\n'),
    );
  });
});

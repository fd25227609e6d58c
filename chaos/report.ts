import { CheckName, CheckResult } from './checker';
import { FaultKind } from '../test-kit/history';
import { ChaosHistory } from './orchestrator';

const kinds: FaultKind[] = [
  'kill',
  'kill-in-fenced',
  'kill-with-standbys',
  'pause',
  'stop',
  'resubscribe',
  'step-down',
  'handoff',
  'priority',
  'lock',
  'burst',
  'cut-host',
  'clock-step',
];
const checks: Array<[CheckName, string]> = [
  ['overlap', 'overlapping beliefs'],
  ['term-order', 'terms out of order'],
  ['ledger', 'ledger rows out of tenure'],
  ['pause', 'renewals after a pause while another led'],
  ['step-down', 'cut-off leaders late to step down'],
  ['final', 'slots left to a dead holder'],
  ['liveness', 'gaps longer than allowed'],
  ['clock-step', 'tenures ended by a step of the wall clock'],
];

interface KindSummary {
  kind: FaultKind;
  count: number;
  skipped: number;
  violations: number;
  worstGap: number | null;
  medianGap: number | null;
  allowed: number | null;
}

export interface ChaosSummary {
  violations: number;
  byCheck: Record<CheckName, number>;
  byKind: KindSummary[];
  counts: CheckResult['counts'];
  worstPauseNotice: number | null;
  /** The latest a cut-off leader stepped down, in ms after its deadline (negative: before it). */
  worstStepDown: number | null;
}

export function summarize(history: ChaosHistory, result: CheckResult): ChaosSummary {
  const byCheck = Object.fromEntries(checks.map(([check]) => [check, result.violations.filter((v) => v.check === check).length]));
  const byKind = kinds.map((kind) => {
    const outcomes = result.outcomes.filter((o) => o.fault.kind === kind);
    const gaps = outcomes.map((o) => o.gap).sort((a, b) => a - b);
    return {
      kind,
      count: outcomes.length,
      skipped: history.faults.filter((f) => f.kind === kind && f.skipped).length,
      violations: outcomes.filter((o) => o.gap > o.allowed).length,
      worstGap: gaps.at(-1) ?? null,
      medianGap: gaps.length ? gaps[Math.floor((gaps.length - 1) / 2)] : null,
      allowed: outcomes.length ? Math.max(...outcomes.map((o) => o.allowed)) : null,
    };
  });
  return {
    violations: result.violations.length,
    byCheck: byCheck as Record<CheckName, number>,
    byKind,
    counts: result.counts,
    worstPauseNotice: result.pauseNotice.length ? Math.max(...result.pauseNotice) : null,
    worstStepDown: result.stepDown.length ? Math.max(...result.stepDown) : null,
  };
}

/** The table printed at the end of a run, in plain text that reads the same in a file. */
export function formatSummary(history: ChaosHistory, summary: ChaosSummary, result: CheckResult): string {
  // Times on the monotonic clock come with fractions of a millisecond.
  const ms = (value: number | null) => (value === null ? '-' : `${Math.round(value)} ms`);
  const rows = [
    ['fault', 'count', 'skipped', 'violations', 'worst gap', 'median gap', 'allowed up to'],
    ...summary.byKind.map((k) => [k.kind, `${k.count}`, `${k.skipped}`, `${k.violations}`, ms(k.worstGap), ms(k.medianGap), ms(k.allowed)]),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const table = rows.map((row) =>
    row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  '),
  );
  const { options, timing } = history;
  const lines = [
    `chaos on ${options.postgres ? `PostgreSQL${options.through ? ` through ${options.through}` : ''}` : `SQLite (journal_mode ${options.journal ?? 'delete'})`}: ` +
      `${options.processes} processes${options.hosts?.length ? ` on ${options.hosts.length} hosts` : ''}` +
      `${options.originalWorker && !options.postgres ? ' + 1 running the original statements' : ''}, ` +
      `${options.slots} slot(s), ${Math.round((history.endedAt - history.startedAt) / 1000)} s, seed ${options.seed}; ` +
      `${options.clockSteps ? `wall clock stepping (${options.postgres ? "the server's" : "every worker's"}); ` : ''}` +
      `expiresAfter ${timing.expiresAfter} ms, renewEvery ${timing.renewEvery} ms, retryEvery ${timing.retryEvery} ms`,
    `${summary.counts.tenures} tenures, ${summary.counts.ledgerRows} fenced ledger rows, ${summary.counts.records} events recorded; ` +
      `paused leaders noticed their loss within ${ms(summary.worstPauseNotice)} of resuming` +
      (summary.worstStepDown === null
        ? ''
        : `; cut-off leaders stepped down ${ms(summary.worstStepDown)} after their deadline at the latest`),
    '',
    ...table,
    '',
    ...checks.map(([check, label]) => `${label}: ${summary.byCheck[check]}`),
    ...result.violations.slice(0, 20).map((v) => `  ${v.check}: ${v.detail}`),
    result.violations.length > 20 ? `  ... and ${result.violations.length - 20} more (see the report)` : '',
    summary.violations === 0 ? 'no violations' : `${summary.violations} violation(s)`,
    ...timelines(history, result),
  ];
  return lines.filter((line, i) => line !== '' || lines[i - 1] !== '').join('\n');
}

/**
 * For each gap longer than allowed, what every process reported and every fault injected
 * from a second before its fault to its end, on the monotonic clock, in ms from the run's
 * start: what kept the slot leaderless shows in a failure's output, with no report to fetch.
 */
function timelines(history: ChaosHistory, result: CheckResult): string[] {
  const start = Math.min(...history.records.map((r) => r.mono ?? Infinity));
  const offset = (mono: number) => `${Math.round(mono - start)}`.padStart(7);
  return result.outcomes
    .filter((o) => o.gap > o.allowed && o.fault.mono !== undefined)
    .flatMap(({ fault, gap }) => {
      const [from, to] = [fault.mono! - 1_000, fault.mono! + gap + 200];
      const faults = history.faults
        .filter((f) => f.mono !== undefined && f.mono >= from && f.mono <= to)
        .map((f) => ({
          mono: f.mono!,
          line:
            `fault ${f.kind} on slot ${f.slot}${f.pid ? ` at pid ${f.pid}` : ''}${f.skipped ? ` (skipped: ${f.skipped})` : ''}` +
            `${f.untilMono ? `, until ${offset(f.untilMono).trim()}` : ''}`,
        }));
      const reports = history.records
        .filter((r) => r.mono !== undefined && r.mono >= from && r.mono <= to && !['tick', 'fenced-write'].includes(r.type))
        .map((record) => {
          // Without `at`, the wall clock's reading: the timeline is on the monotonic one.
          const { mono, pid, worker, type, ...rest } = { ...record, at: undefined };
          return { mono: mono!, line: `${worker ?? '?'} (${pid}) ${type} ${JSON.stringify(rest)}` };
        });
      return [
        '',
        `what happened around the ${fault.kind} on slot ${fault.slot} at ${offset(fault.mono!).trim()} ms:`,
        ...[...faults, ...reports].sort((a, b) => a.mono - b.mono).map(({ mono, line }) => `${offset(mono)}  ${line}`),
      ];
    });
}

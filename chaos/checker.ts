import {
  beliefSegments,
  BeliefSegment,
  endsBelief,
  FaultKind,
  FaultRecord,
  groupBy,
  overlappingBeliefs,
  uncommittedSeq,
  WorkerRecord,
} from '../test-kit/history';
import { ChaosHistory } from './orchestrator';

export type CheckName = 'overlap' | 'term-order' | 'ledger' | 'pause' | 'step-down' | 'final' | 'liveness' | 'clock-step';

interface Violation {
  check: CheckName;
  detail: string;
}

/** How long a slot went without a leader after one fault, against what the config allows. */
interface FaultOutcome {
  fault: FaultRecord;
  /** Ms without a leader, from the fault (or from the end of the leader's belief) to the next tenure. */
  gap: number;
  allowed: number;
}

export interface CheckResult {
  violations: Violation[];
  outcomes: FaultOutcome[];
  /** Ms from SIGCONT to `lost`, for each paused leader whose slot was taken meanwhile. */
  pauseNotice: number[];
  /** Ms from its own deadline to its `lost`, for each leader whose host was cut off (negative: before it). */
  stepDown: number[];
  counts: { records: number; tenures: number; ledgerRows: number; faults: number };
}

export interface CheckOptions {
  /**
   * Ms added to `retryEvery` for what a loaded machine adds: timers that fire late,
   * processes that start slowly. Liveness only; safety checks have no slack.
   * @default 1_000
   */
  slack?: number;
}

/** A tenure: from its `elected` report on; ours have a term, the original worker's do not. */
interface Tenure {
  slot: number;
  holder: string;
  term?: number;
  start: number;
}

/**
 * Checks a chaos run's history:
 * 1. on each slot, the beliefs of different holders never overlap;
 * 2. on each slot, terms strictly increase from tenure to tenure;
 * 3. ledger rows in commit order never go back in term, and each was written while its
 *    tenure was the slot's current one (after it began, before the next one began);
 * 4. a leader paused while another took its slot never renews that tenure afterwards; a
 *    leader cut off from the server steps down (`lost`) by its own deadline, give or take
 *    a timer's lateness (`stepDownLateness`);
 * 5. at the end, every slot is held by a live process, or its lease has not yet expired;
 * 6. after each fault, the slot is without a leader no longer than the config allows;
 * 7. a step of the wall clock ends no tenure: the leader at the step still leads, same
 *    term, a lease after the step's end, unless another fault came meanwhile.
 * Every time is compared on the host's monotonic clock where the history has it (every
 * history made since it was recorded), so that a wall clock that steps moves nothing.
 */
export function checkHistory(given: ChaosHistory, { slack = 1_000 }: CheckOptions = {}): CheckResult {
  const history = onMonotonicClock(given);
  const { records, faults, ledger } = history;
  const segments = beliefSegments(records);
  const tenures = tenuresOf(records);
  const violations: Violation[] = [];
  const flag: Flag = (check, detail) => violations.push({ check, detail });

  for (const [a, b] of overlappingBeliefs(segments)) {
    flag('overlap', `slot ${a.slot}: ${describe(a)} and ${describe(b)} both believed they led`);
  }
  checkTermOrder(tenures, flag);
  checkLedger(ledger, tenures, flag);
  const pauseNotice = checkPauses(history, tenures, flag);
  const stepDown = checkStepDowns(history, flag);
  checkFinal(history, given.final.at, flag);
  const outcomes = checkLiveness(history, segments, slack, flag);
  checkClockSteps(history, flag);
  return {
    violations,
    outcomes,
    pauseNotice,
    stepDown,
    counts: { records: records.length, tenures: tenures.length, ledgerRows: ledger.length, faults: faults.length },
  };
}

/** Records a violation of `check`. */
type Flag = (check: CheckName, detail: string) => void;

type Tenures = ReturnType<typeof tenuresOf>;

/** 2. Each slot's terms strictly increase. */
function checkTermOrder(tenures: Tenures, flag: Flag): void {
  for (const [slot, slotTenures] of groupBy(tenures, (t) => t.slot)) {
    const terms = slotTenures.filter((t) => t.term !== undefined).map((t) => t.term!);
    terms.slice(1).forEach((term, i) => {
      if (term <= terms[i]) flag('term-order', `slot ${slot}: term ${term} came after term ${terms[i]}`);
    });
  }
}

/** 3. Ledger rows in commit order never go back in term, each written inside its tenure; none of a transaction that was killed. */
function checkLedger(ledger: ChaosHistory['ledger'], tenures: Tenures, flag: Flag): void {
  for (const row of ledger.filter((r) => r.seq === uncommittedSeq)) {
    flag('ledger', `slot ${row.slot}: row ${row.id} was committed, although its process was killed inside the transaction`);
  }
  for (const [slot, rows] of groupBy(ledger, (row) => row.slot)) {
    const slotTenures = tenures.filter((t) => t.slot === slot);
    rows.forEach((row, i) => {
      if (i > 0 && row.term < rows[i - 1].term) {
        flag('ledger', `slot ${slot}: row ${row.id} has term ${row.term} after a row of term ${rows[i - 1].term}`);
      }
      const index = slotTenures.findIndex((t) => t.holder === row.holder && t.term === row.term);
      const next = slotTenures[index + 1];
      if (index < 0) flag('ledger', `slot ${slot}: row ${row.id} names a tenure nobody was elected to (${row.holder}, term ${row.term})`);
      else if (row.at < slotTenures[index].start || (next && row.at > next.start)) {
        flag('ledger', `slot ${slot}: row ${row.id} of term ${row.term} was written at ${row.at}, outside its tenure`);
      }
    });
  }
}

/** 4. A leader paused while another took its slot never renews that tenure afterwards; returns how soon each noticed (`lost`). */
function checkPauses({ records, faults }: ChaosHistory, tenures: Tenures, flag: Flag): number[] {
  const pauseNotice: number[] = [];
  for (const fault of faults.filter((f) => f.kind === 'pause' && f.holder !== undefined && f.until !== undefined)) {
    const before = records.filter((r) => r.pid === fault.pid && r.slot === fault.slot && r.type === 'elected' && r.at <= fault.at).at(-1);
    const takenMeanwhile = tenures.some(
      (t) => t.slot === fault.slot && t.holder !== fault.holder && t.start > fault.at && t.start <= fault.until!,
    );
    if (!before || !takenMeanwhile) continue;
    // What the paused tenure said first once it ran again (its own term: later tenures are others).
    const after = records.find(
      (r) =>
        r.pid === fault.pid &&
        r.slot === fault.slot &&
        r.term === before.term &&
        r.at >= fault.until! &&
        ['renewed', 'lost'].includes(r.type),
    );
    if (after?.type === 'renewed' && after.term === before.term) {
      flag('pause', `slot ${fault.slot}: ${fault.holder} renewed term ${before.term} after a pause while another led`);
    }
    if (after?.type === 'lost') pauseNotice.push(after.at - fault.until!);
  }
  return pauseNotice;
}

/** 4. A leader cut off from the server steps down by its own deadline, give or take `stepDownLateness`; returns how late each did. */
function checkStepDowns({ records, faults }: ChaosHistory, flag: Flag): number[] {
  const stepDown: number[] = [];
  for (const fault of faults.filter((f) => f.kind === 'cut-host' && f.holder !== undefined && !f.skipped)) {
    const before = records
      .filter((r) => r.pid === fault.pid && r.slot === fault.slot && r.term !== undefined && r.expiresAt !== undefined && r.at <= fault.at)
      .at(-1);
    if (!before) continue;
    // Its last belief (renewals that got through just before the cut included), then its loss of that term.
    const lastBelief = Math.max(
      ...records
        .filter((r) => r.pid === fault.pid && r.slot === fault.slot && r.term === before.term && r.expiresAt !== undefined)
        .map((r) => r.expiresAt!),
    );
    const lost = records.find(
      (r) => r.pid === fault.pid && r.slot === fault.slot && r.term === before.term && r.type === 'lost' && r.at >= fault.at,
    );
    if (!lost) continue; // stopped or killed otherwise meanwhile
    stepDown.push(lost.at - lastBelief);
    if (lost.at > lastBelief + stepDownLateness) {
      flag(
        'step-down',
        `slot ${fault.slot}: ${fault.holder} (term ${before.term}), cut off at ${fault.at}, stepped down at ${lost.at}, ${lost.at - lastBelief} ms after its deadline`,
      );
    }
  }
  return stepDown;
}

/** 5. At the end (`endedAt`, by the wall clock rows are stored by), every slot is held by a live process, or its lease has not expired. */
function checkFinal({ options, final }: ChaosHistory, endedAt: number, flag: Flag): void {
  for (let slot = 0; slot < options.slots; slot++) {
    const row = final.rows.find((r) => r.slot === slot);
    const live = final.liveHolders.some((h) => h.slot === slot && h.holder === row?.holder);
    if (!row) flag('final', `slot ${slot} has no lease at the end`);
    else if (!live && row.expiresAt < endedAt) {
      // stored by the wall clock, put back on time for the quiet end
      flag('final', `slot ${slot} is held by ${row.holder}, no live process, past its expiry`);
    }
  }
}

/** 6. After each fault, the slot is without a leader no longer than the config allows. */
function checkLiveness(
  history: ChaosHistory,
  segments: ReturnType<typeof beliefSegments>,
  slack: number,
  flag: Flag,
): CheckResult['outcomes'] {
  const { faults, records, timing, final } = history;
  const retryBound = timing.retryEvery + slack;
  return faults
    .filter((fault) => !fault.skipped)
    .map((fault) => {
      const allowed = allowance(fault, timing.expiresAfter, retryBound) + untilSomeoneCampaigns(fault, records);
      const gap = leaderlessGap(fault, segments, final.at, allowed);
      if (gap > allowed)
        flag('liveness', `slot ${fault.slot}: ${gap} ms without a leader after ${fault.kind} at ${fault.at} (allowed ${allowed} ms)`);
      return { fault, gap, allowed };
    });
}

/** 7. A step of the wall clock ends no tenure, unless another fault came meanwhile. */
function checkClockSteps({ faults, records, timing, final }: ChaosHistory, flag: Flag): void {
  for (const fault of faults.filter((f) => f.kind === 'clock-step' && f.holder !== undefined)) {
    const settled = (fault.until ?? fault.at) + timing.expiresAfter;
    const disturbed = faults.some(
      (other) =>
        other !== fault &&
        !other.skipped &&
        other.kind !== 'clock-step' &&
        other.at >= fault.at - timing.expiresAfter &&
        other.at <= settled,
    );
    if (disturbed || settled > final.at) continue;
    const ended = records.find(
      (r) =>
        r.slot === fault.slot &&
        r.pid === fault.pid &&
        r.holder === fault.holder &&
        endsBelief.has(r.type) &&
        r.at >= fault.at &&
        r.at <= settled,
    );
    const elected = records.find(
      (r) => r.slot === fault.slot && r.type === 'elected' && r.holder !== fault.holder && r.at >= fault.at && r.at <= settled,
    );
    if (ended || elected) {
      const what = ended ? `${fault.holder} reported ${ended.type}` : `${elected!.holder} was elected`;
      flag('clock-step', `slot ${fault.slot}: ${what} after the wall clock moved ${fault.step} s at ${fault.at}`);
    }
  }
}

/** How late a timer may fire on a loaded machine: a leader's `lost` may come that much after its deadline. */
const stepDownLateness = 100;

/** What the config allows after each kind of fault. */
function allowance(fault: FaultRecord, expiresAfter: number, retryBound: number): number {
  const lasted = (fault.until ?? fault.at) - fault.at;
  const byKind: Record<FaultKind, number> = {
    // At worst (no standby saw the end: none was watching yet, or all died with it), the lease
    // must run out, then a follower's attempt comes.
    kill: expiresAfter + retryBound,
    'kill-in-fenced': expiresAfter + retryBound,
    // When it killed every candidate, the slot also waits for one to start again (`until`).
    'kill-with-standbys': expiresAfter + retryBound + lasted,
    // As a crash; if the pause caught the leader inside a write, nobody can write until it ends.
    pause: Math.max(expiresAfter, lasted) + retryBound,
    // A release: the next attempt takes the slot.
    stop: retryBound,
    resubscribe: retryBound,
    // A release, the one that stepped down sitting out: another takes the slot at once, or, when
    // it campaigns alone, it takes the slot back once it has sat out (a lease, by default).
    'step-down': expiresAfter + retryBound,
    // The named follower takes the slot at once; if it died or froze meanwhile, its window (a
    // retryEvery) goes unused and another takes it, or the old leader once it has sat out.
    handoff: expiresAfter + retryBound,
    // A candidate campaigns again with another priority (and preempt): a release if it led;
    // the others let a standing one of a higher priority go first, for a retryEvery at most.
    priority: expiresAfter + retryBound,
    // Nobody can write while the lock is held; the leader steps down at its expiry meanwhile.
    lock: lasted + retryBound,
    // Followers come and go; the leader should not notice.
    burst: retryBound,
    // The leader's host cut off: the others wait for its lease, as after a crash.
    'cut-host': expiresAfter + retryBound,
    // The leader should not notice (check 7 says whether it did).
    'clock-step': retryBound,
  };
  return byKind[fault.kind];
}

/**
 * How long after `fault` the slot had no process campaigning for it but those the fault
 * hit: 0 if another was campaigning, else until one began to (a victim of an earlier kill
 * starting again; a Node.js process takes seconds to start on a machine busy with other
 * builds). Nobody can take a slot before then, whatever the library does: seen in CI
 * rehearsals, where every candidate was killed with its standbys (and, once, the original
 * worker, the only process left, then too; the next candidate subscribed 3.4 s later).
 */
function untilSomeoneCampaigns(fault: FaultRecord, records: WorkerRecord[]): number {
  // Each process campaigns from its `subscribed` (reported as `subscribe` returns, after the
  // first attempt's events) to its `unsubscribed` (stopped, or subscribing again) or its
  // death; the original worker for slot 0 only.
  const spans: Array<{ pid: number; start: number; end: number }> = [];
  const open = new Map<number, { pid: number; start: number; end: number }>();
  const slotOf = new Map<number, number | undefined>();
  for (const r of [...records].sort((a, b) => a.at - b.at)) {
    if (r.type === 'subscribed' && !open.has(r.pid)) {
      const span = { pid: r.pid, start: r.at, end: Infinity };
      open.set(r.pid, span);
      spans.push(span);
      if (r.worker === 'original') slotOf.set(r.pid, r.slot ?? 0);
    } else if ((r.type === 'unsubscribed' || r.type === 'killed') && open.has(r.pid)) {
      open.get(r.pid)!.end = r.at;
      open.delete(r.pid);
    }
  }
  const hit = new Set([fault.pid, ...(fault.victims ?? [])]);
  const others = spans.filter((span) => !hit.has(span.pid) && (slotOf.get(span.pid) ?? fault.slot) === fault.slot);
  if (others.some((span) => span.start <= fault.at && span.end > fault.at)) return 0;
  const next = others.filter((span) => span.start > fault.at).sort((a, b) => a.start - b.start)[0];
  return next === undefined ? 0 : next.start - fault.at;
}

/**
 * The slot's time without a leader that this fault caused: from the fault, for a crash or
 * pause of the leader while it believed it led (the slot has nobody acting for it from
 * then on), or else from the end
 * of the beliefs in force at the fault, to the start of the next belief.
 */
function leaderlessGap(fault: FaultRecord, segments: BeliefSegment[], endedAt: number, allowed: number): number {
  const spans = union(segments.filter((s) => s.slot === fault.slot));
  const current = spans.find((span) => span.start <= fault.at && fault.at <= span.end);
  // The orchestrator aims by the processes' own reports, and a process blocked in SQLite's
  // busy wait cannot report that its lease ran out meanwhile: it may be hit after another
  // took over. It hit the leader only if its holder still believed it led then.
  const hitLeader =
    ['kill', 'kill-in-fenced', 'kill-with-standbys', 'pause', 'cut-host'].includes(fault.kind) &&
    segments.some((s) => s.slot === fault.slot && s.holder === fault.holder && s.start <= fault.at && fault.at <= s.end);
  let from = fault.at;
  let holeStart = fault.at;
  if (current) {
    holeStart = current.end;
    if (!hitLeader) {
      if (current.end > fault.at + allowed) return 0; // the leader carried on through the fault
      from = current.end;
    }
  }
  const next = spans.find((span) => span.start > holeStart);
  return (next?.start ?? endedAt) - from;
}

/** Merged time spans during which somebody believed it led. */
function union(segments: BeliefSegment[]): Array<{ start: number; end: number }> {
  const spans: Array<{ start: number; end: number }> = [];
  for (const { start, end } of [...segments].sort((a, b) => a.start - b.start)) {
    const last = spans.at(-1);
    if (last && start <= last.end) last.end = Math.max(last.end, end);
    else spans.push({ start, end });
  }
  return spans;
}

/** Tenures in the order they began, from `elected` reports that came before their own expiry. */
function tenuresOf(records: WorkerRecord[]): Tenure[] {
  return records
    .filter((r) => r.type === 'elected' && r.expiresAt !== undefined && r.at <= r.expiresAt)
    .map((r) => ({ slot: r.slot ?? 0, holder: r.holder!, term: r.term, start: r.at }))
    .sort((a, b) => a.start - b.start);
}

function describe(segment: BeliefSegment): string {
  return `${segment.holder}${segment.term === undefined ? '' : ` (term ${segment.term})`} [${segment.start}, ${segment.end}]`;
}

/**
 * The history with every time on the host's monotonic clock, where each report, fault and
 * ledger row has it: workers on a wall clock that steps stamp their `at` with it, and only
 * `mono` can be compared. A history recorded before `mono` existed stays as it is.
 */
function onMonotonicClock(history: ChaosHistory): ChaosHistory {
  const { records, faults, ledger, final } = history;
  const complete = records.every((r) => r.mono !== undefined) && faults.every((f) => f.mono !== undefined) && final.mono !== undefined;
  if (!complete || ledger.some((row) => row.mono === undefined)) return history;
  return {
    ...history,
    records: records.map((r) => ({
      ...r,
      at: r.mono as number,
      expiresAt: r.monoExpiresAt ?? (r.expiresAt === undefined ? undefined : r.expiresAt - r.at + (r.mono as number)),
    })),
    faults: faults.map((f) => ({ ...f, at: f.mono as number, until: f.untilMono ?? f.until })),
    ledger: ledger.map((row) => ({ ...row, at: row.mono as number })),
    final: { ...final, at: final.mono as number },
  };
}

import { checkHistory } from '../../chaos/checker';
import { FaultRecord, LedgerRow, WorkerRecord } from '../../test-kit/history';
import { ChaosHistory } from '../../chaos/orchestrator';

// Small made-up histories, one flaw each: the checker must name it, and only it.
const timing = { renewEvery: 200, expiresAfter: 600, retryEvery: 100 };
let nextId = 1;
const event = (pid: number, at: number, type: string, holder: string, term?: number, expiresAt?: number): WorkerRecord => ({
  pid,
  at,
  type,
  slot: 0,
  holder,
  term,
  expiresAt,
});
const row = (at: number, holder: string, term: number): LedgerRow => ({ id: nextId++, slot: 0, holder, term, seq: 0, at });

/** a leads (term 1) from 0 to 1000, then b (term 2) from 1001 to the end at 3000. */
function history(changes: Partial<ChaosHistory> = {}): ChaosHistory {
  return {
    options: { processes: 2, duration: 3000, lease: 600, seed: 1, slots: 1, originalWorker: false },
    timing,
    startedAt: 0,
    endedAt: 3000,
    records: [
      event(1, 0, 'elected', 'a', 1, 600),
      event(1, 200, 'renewed', 'a', 1, 800),
      event(1, 400, 'renewed', 'a', 1, 1000),
      event(2, 1001, 'elected', 'b', 2, 1601),
      event(2, 1200, 'renewed', 'b', 2, 1800),
      event(2, 1400, 'renewed', 'b', 2, 3600),
    ],
    faults: [{ kind: 'kill', at: 450, slot: 0, pid: 1, holder: 'a' }],
    ledger: [row(100, 'a', 1), row(900, 'a', 1), row(1100, 'b', 2)],
    final: { at: 3000, rows: [{ slot: 0, holder: 'b', expiresAt: 3600 }], liveHolders: [{ slot: 0, holder: 'b' }] },
    ...changes,
  };
}
const flaws = (h: ChaosHistory) => checkHistory(h, { slack: 100 }).violations.map((v) => v.check);

describe('checkHistory', () => {
  it('finds nothing wrong with a clean history, and measures the gap after a crash from the crash', () => {
    const result = checkHistory(history(), { slack: 100 });
    expect(result.violations).toEqual([]);
    expect(result.outcomes).toEqual([expect.objectContaining({ gap: 1001 - 450, allowed: 600 + 100 + 100 })]);
  });

  it('finds two holders believing at once', () => {
    const base = history();
    expect(flaws(history({ records: [...base.records, event(3, 500, 'elected', 'c', 3, 700)] }))).toContain('overlap');
  });

  it('ends a belief at the kill even when the last report of the killed process is read after the kill was recorded', () => {
    const base = history();
    // a's renewal at 400 was still in the pipe when the kill at 450 was recorded; c takes over at 470.
    const records = [
      ...base.records.slice(0, 2),
      { pid: 1, at: 450, type: 'killed', slot: 0 },
      base.records[2],
      event(3, 470, 'elected', 'c', 2, 1070),
    ];
    expect(checkHistory(history({ records, ledger: [] }), { slack: 100 }).violations.filter((v) => v.check === 'overlap')).toEqual([]);
  });

  it('finds a term that went back', () => {
    const records = history().records.map((r) => (r.holder === 'b' ? { ...r, term: 1 } : r));
    expect(flaws(history({ records, ledger: [] }))).toEqual(['term-order']);
  });

  it('finds a ledger row written after the next tenure began, a row of no tenure, and a term going back', () => {
    expect(flaws(history({ ledger: [row(100, 'a', 1), row(1100, 'b', 2), row(1150, 'a', 1)] }))).toEqual(['ledger', 'ledger']);
    expect(flaws(history({ ledger: [row(100, 'z', 9)] }))).toEqual(['ledger']);
  });

  it('finds a paused leader that renewed its old tenure after another led', () => {
    const pause: FaultRecord = { kind: 'pause', at: 450, until: 1300, slot: 0, pid: 1, holder: 'a' };
    const base = history({ faults: [pause] });
    expect(flaws(base)).toEqual([]);
    expect(flaws(history({ faults: [pause], records: [...base.records, event(1, 1310, 'renewed', 'a', 1, 1910)] }))).toContain('pause');
  });

  it('finds a leader cut off from the server that stepped down after its own deadline', () => {
    const cut: FaultRecord = { kind: 'cut-host', at: 450, until: 1300, slot: 0, pid: 1, holder: 'a' };
    const base = history({ faults: [cut] });
    const lostAt = (at: number) => history({ faults: [cut], records: [...base.records, event(1, at, 'lost', 'a', 1)] });
    expect(flaws(lostAt(1000))).toEqual([]);
    expect(checkHistory(lostAt(1030), { slack: 100 }).stepDown).toEqual([30]);
    expect(flaws(lostAt(1300))).toEqual(['step-down']);
  });

  it('allows a kill of every candidate (leader and standbys) the time until one campaigns again as well', () => {
    const killAll = (until?: number): FaultRecord => ({ kind: 'kill-with-standbys', at: 450, until, slot: 0, pid: 1, holder: 'a' });
    // b elected 1250 ms after the kill: more than a 600 ms lease and 100 + 100 ms of retry and
    // slack, within them once a candidate campaigned again 550 ms after the kill.
    const late = (until?: number) =>
      history({
        faults: [killAll(until)],
        records: [...history().records.slice(0, 3), event(2, 1700, 'elected', 'b', 2, 2300)],
        ledger: [row(100, 'a', 1)],
      });
    expect(flaws(late())).toEqual(['liveness']);
    expect(flaws(late(1000))).toEqual([]);
  });

  it('finds a slot left to a dead holder past its expiry, or left with no lease', () => {
    const final = { at: 3000, rows: [{ slot: 0, holder: 'a', expiresAt: 1000 }], liveHolders: [{ slot: 0, holder: 'b' }] };
    expect(flaws(history({ final }))).toEqual(['final']);
    expect(flaws(history({ final: { ...final, rows: [] } }))).toEqual(['final']);
  });

  it('measures the gap after a crash of a process whose lease had already run out from the end of its successor’s belief, not from the crash', () => {
    // a's last lease ran out at 1000 while it could not say so (blocked in a busy wait); b
    // led from 1001; the orchestrator, going by a's reports, killed a at 1500. b's belief
    // ends at 3600 (after the run), so the kill left the slot without a leader for no time.
    const kill: FaultRecord = { kind: 'kill', at: 1500, slot: 0, pid: 1, holder: 'a' };
    const result = checkHistory(history({ faults: [kill] }), { slack: 100 });
    expect(result.violations).toEqual([]);
    expect(result.outcomes).toEqual([expect.objectContaining({ gap: 0 })]);
  });

  it('finds a gap longer than the config allows', () => {
    const records = history().records.map((r) => (r.holder === 'b' ? { ...r, at: r.at + 500 } : r));
    expect(flaws(history({ records, ledger: [] }))).toEqual(['liveness']);
  });

  it('allows a fault that left the slot with no process campaigning the time until one subscribes, and no more', () => {
    // b's process (2) starts only at 1500 (every other candidate was killed before): its
    // election at 1501 is 1051 ms after the kill, over the 800 allowed, and not its fault.
    const late = history().records.map((r) => (r.holder === 'b' ? { ...r, at: r.at + 500 } : r));
    const subscribed = (pid: number, at: number): WorkerRecord => ({ pid, at, type: 'subscribed', holder: pid === 1 ? 'a' : 'b' });
    const records = [subscribed(1, 0), ...late, subscribed(2, 1500)];
    const result = checkHistory(history({ records, ledger: [] }), { slack: 100 });
    expect(result.violations).toEqual([]);
    expect(result.outcomes).toEqual([expect.objectContaining({ gap: 1501 - 450, allowed: 800 + (1500 - 450) })]);
    // A process that stopped (unsubscribed) before the fault campaigns no more either.
    const stopped: WorkerRecord[] = [subscribed(3, 0), { pid: 3, at: 400, type: 'unsubscribed', slot: 0 }];
    expect(checkHistory(history({ records: [...stopped, ...records], ledger: [] }), { slack: 100 }).violations).toEqual([]);
    // Had b's process been campaigning all along, the same gap is a violation.
    expect(flaws(history({ records: [subscribed(1, 0), subscribed(2, 0), ...late], ledger: [] }))).toEqual(['liveness']);
  });

  it('does not count the standbys a kill took with the leader as campaigning', () => {
    // Seen in a CI rehearsal: a kill of the leader (1) took its standbys (3, 4) 35 ms later;
    // the only other process (2) was still starting, and reported its election at 1501 just
    // before its `subscribed` (its first attempt runs within `subscribe`).
    const subscribed = (pid: number, at: number): WorkerRecord => ({ pid, at, type: 'subscribed', holder: `p${pid}` });
    const killed = (pid: number, at: number): WorkerRecord => ({ pid, at, type: 'killed' });
    const late = history().records.map((r) => (r.holder === 'b' ? { ...r, at: r.at + 500 } : r));
    const standbys = [subscribed(3, 0), subscribed(4, 0), killed(3, 485), killed(4, 485)];
    const records = [subscribed(1, 0), ...standbys, ...late, subscribed(2, 1503)];
    const fault: FaultRecord = { kind: 'kill-with-standbys', at: 450, slot: 0, pid: 1, holder: 'a', victims: [1, 3, 4] };
    const result = checkHistory(history({ records, faults: [fault], ledger: [] }), { slack: 100 });
    expect(result.violations).toEqual([]);
    expect(result.outcomes).toEqual([expect.objectContaining({ gap: 1501 - 450, allowed: 800 + (1503 - 450) })]);
    // Standbys that outlived the kill were campaigning: the same gap is then a violation.
    expect(flaws(history({ records, faults: [{ ...fault, victims: [1] }], ledger: [] }))).toEqual(['liveness']);
  });

  describe('on the monotonic clock, with a wall clock that steps', () => {
    /** The clean history, each time also on the monotonic clock (the wall clock's + 10_000), and the wall clock then stepped. */
    const stepped = (wallShift: (at: number) => number, changes: Partial<ChaosHistory> = {}): ChaosHistory => {
      const base = history();
      return history({
        records: base.records.map((r) => ({
          ...r,
          mono: r.at + 10_000,
          monoExpiresAt: r.expiresAt! + 10_000,
          at: wallShift(r.at),
          expiresAt: wallShift(r.expiresAt!),
        })),
        faults: base.faults.map((f) => ({ ...f, mono: f.at + 10_000, at: wallShift(f.at) })),
        ledger: base.ledger.map((r) => ({ ...r, mono: r.at + 10_000, at: wallShift(r.at) })),
        final: { ...base.final, mono: 13_000 },
        ...changes,
      });
    };

    it('compares every time on the monotonic clock, so a step of the wall clock makes no overlap and no ledger row out of its tenure', () => {
      // The wall clock ten minutes back from 500 on: by it, b's tenure overlaps a's.
      expect(flaws(stepped((at) => (at >= 500 ? at - 600_000 : at)))).toEqual([]);
    });

    it('finds a tenure that a clock step ended', () => {
      const base = stepped((at) => at);
      const step: FaultRecord = { kind: 'clock-step', at: 1500, mono: 11_500, slot: 0, pid: 2, holder: 'b', step: 600 };
      const lost = { pid: 2, at: 1700, mono: 11_700, type: 'lost', slot: 0, holder: 'b', term: 2 };
      expect(flaws(stepped((at) => at, { faults: [...base.faults, step] }))).toEqual([]);
      expect(flaws(stepped((at) => at, { faults: [...base.faults, step], records: [...base.records, lost] }))).toContain('clock-step');
    });
  });
});

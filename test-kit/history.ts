/**
 * What a chaos run records, and the belief segments derived from it. Every time is Unix ms
 * on the one clock of the machine: workers stamp their own reports, the orchestrator its
 * faults.
 */

/** One line a worker process reported. */
export interface WorkerRecord {
  /** Unix ms, read by the worker when it reported. */
  at: number;
  /** The host's CLOCK_MONOTONIC in ms when it reported, which no step of the wall clock moves. */
  mono?: number;
  pid: number;
  /** The logical worker (w1, w2, ..., original): restarts keep the name, not the pid. */
  worker?: string;
  type: string;
  slot?: number;
  holder?: string;
  term?: number;
  expiresAt?: number;
  /** `expiresAt`, on the host's monotonic clock. */
  monoExpiresAt?: number;
  reason?: string;
  seq?: number;
  code?: string;
  message?: string;
}

export type FaultKind =
  | 'kill'
  | 'kill-in-fenced'
  | 'kill-with-standbys'
  | 'pause'
  | 'stop'
  | 'resubscribe'
  | 'step-down'
  | 'handoff'
  | 'priority'
  | 'lock'
  | 'burst'
  | 'cut-host'
  | 'clock-step';

/** One fault the orchestrator injected. */
export interface FaultRecord {
  kind: FaultKind;
  at: number;
  /** When its effect ended (SIGCONT, lock released), for faults that last. */
  until?: number;
  /** `at` and `until` on the host's monotonic clock. */
  mono?: number;
  untilMono?: number;
  /** For `clock-step`: the seconds the wall clock moved (for a strobe, each way). */
  step?: number;
  slot: number;
  /** The process it hit (for `burst`, the first of them), if any led or followed. */
  pid?: number;
  /** For `kill-with-standbys`: every process it killed, the leader first. */
  victims?: number[];
  /** The target's holder on `slot` when the fault began, if it led. */
  holder?: string;
  /** Why nothing was done, if nothing was (no leader to hit, say). */
  skipped?: string;
}

/** A row of the ledger that leaders write with `fenced`, in commit order. */
export interface LedgerRow {
  id: number;
  slot: number;
  holder: string;
  term: number;
  seq: number;
  /** Unix ms read inside the fenced transaction. */
  at: number;
  /** The same moment on the host's monotonic clock. */
  mono?: number;
}

/** A stretch of time during which one tenure believed it led, by its own reports. */
export interface BeliefSegment {
  pid: number;
  slot: number;
  holder: string;
  term?: number;
  start: number;
  end: number;
}

/**
 * Reports after which a worker no longer believes it leads that slot; `killed` is the
 * orchestrator's, made just before it sends SIGKILL (a dead process believes nothing).
 */
export const endsBelief: ReadonlySet<string> = new Set(['lost', 'unsubscribed', 'terminated', 'killed']);

/** The ledger's `seq` of a row written inside a transaction whose process is killed before it commits. */
export const uncommittedSeq = -2;

/**
 * Each write that a worker reported (`elected`, `renewed`) makes it believe it leads that
 * slot from the report to the expiry it wrote, or until it reports that it stopped (`lost`;
 * `unsubscribed`, which releases) if that comes first. A report comes after its write, and
 * another holder can write only once `expires_at < now`, so on one clock two holders'
 * segments of one slot must never overlap. A report that comes after its own expiry (the
 * process paused between write and report) gives no segment: it never acted as leader.
 * `clock` says which times to compare: the wall clock's, or where it steps, the host's
 * monotonic clock's (`mono`, `monoExpiresAt`).
 */
export function beliefSegments(records: WorkerRecord[], clock: 'wall' | 'monotonic' = 'wall'): BeliefSegment[] {
  const segments: BeliefSegment[] = [];
  const at = (record: WorkerRecord) => (clock === 'wall' ? record.at : (record.mono as number));
  const expiresAt = (record: WorkerRecord) => (clock === 'wall' ? record.expiresAt : record.monoExpiresAt);
  for (const stream of groupBy(records, (record) => `${record.pid}/${record.slot ?? 0}`).values()) {
    let stop = Infinity;
    // In time order (the orchestrator's `killed` can come before the last report the process
    // made, still in the pipe), then backwards, so that each write meets the next stop report
    // of its own stream.
    for (const record of [...stream].sort((a, b) => at(a) - at(b)).reverse()) {
      if (endsBelief.has(record.type)) stop = at(record);
      const until = expiresAt(record);
      if ((record.type !== 'elected' && record.type !== 'renewed') || until === undefined) continue;
      const end = Math.min(until, stop);
      if (end < at(record)) continue;
      segments.push({ pid: record.pid, slot: record.slot ?? 0, holder: record.holder!, term: record.term, start: at(record), end });
    }
  }
  return segments.sort((a, b) => a.start - b.start);
}

export function groupBy<T, K>(items: Iterable<T>, key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** Pairs of segments of one slot, of different holders, that overlap in time. */
export function overlappingBeliefs(segments: BeliefSegment[]): Array<[BeliefSegment, BeliefSegment]> {
  const overlaps: Array<[BeliefSegment, BeliefSegment]> = [];
  const sorted = [...segments].sort((a, b) => a.start - b.start);
  for (const [i, a] of sorted.entries()) {
    for (const b of sorted.slice(i + 1)) {
      if (b.start > a.end) break;
      if (a.slot === b.slot && a.holder !== b.holder) overlaps.push([a, b]);
    }
  }
  return overlaps;
}

import { WorkerRecord } from './child-worker';

const endsBelief = ['lost', 'unsubscribed', 'terminated'];

/** A stretch of time during which one holder believed it led, by its own reports. */
export interface BeliefSegment {
  holder: string;
  term?: number;
  start: number;
  end: number;
}

/**
 * Each write that a worker reported (`elected`, `renewed`) makes it believe it leads from
 * that report to the expiry it wrote, or until it reports that it stopped (`lost`, or
 * `unsubscribed`, which releases) if that comes first. A report
 * comes after its write, and another holder can write only once `expires_at < now`, so on
 * one machine's clock two holders' segments must never overlap.
 */
export function beliefSegments(records: WorkerRecord[]): BeliefSegment[] {
  const segments: BeliefSegment[] = [];
  let holder = '';
  records.forEach((record, index) => {
    if (record.holder) holder = record.holder;
    if (record.type !== 'elected' && record.type !== 'renewed') return;
    const stop = records.slice(index + 1).find((later) => endsBelief.includes(later.type));
    segments.push({
      holder,
      term: record.term,
      start: record.at,
      end: Math.min(record.expiresAt!, stop?.at ?? Infinity),
    });
  });
  return segments;
}

/** Pairs of segments of different holders that overlap in time. */
export function overlappingBeliefs(segments: BeliefSegment[]): Array<[BeliefSegment, BeliefSegment]> {
  const overlaps: Array<[BeliefSegment, BeliefSegment]> = [];
  for (const [i, a] of segments.entries()) {
    for (const b of segments.slice(i + 1)) {
      if (a.holder !== b.holder && a.start <= b.end && b.start <= a.end) overlaps.push([a, b]);
    }
  }
  return overlaps;
}

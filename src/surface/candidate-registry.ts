import { LeadershipError } from '../core/leadership-error';
import { Lease } from '../core/leadership-event';

interface Enrolled {
  /** Unsubscribed, its campaign still settling what it sent. */
  stopping: boolean;
  /** The next candidate of the same holder, which starts once this one has settled. */
  next?: () => void;
}

const liveCandidates = new WeakMap<object, Map<string, Enrolled>>();

/** A candidate's place among those of this process (see {@link enrollCandidate}). */
export interface Enrolment {
  /** Runs `start` now, or once the candidate of the same holder before it has settled. */
  whenFree(start: () => void): void;
  /** Unsubscribed: a candidate of the same holder may now wait for this one to settle. */
  stopping(): void;
  /** Settled: nothing this candidate sent is still to be answered; the next one may start. */
  left(): void;
}

/**
 * Records that this process campaigns in `store` for `slot` as `holder`. Two live candidates
 * with one holder would both pass the compare-and-set (`holder = self`) and both lead, so the
 * second one in a process is refused with `HOLDER_IN_USE`. A candidate unsubscribed is still
 * there until its last operation settled: an acquisition on its way would take the slot from
 * a new subscription of the same holder, then release it as it withdrew, while that one
 * believed it led. A new subscription of that holder waits for it (`whenFree`).
 */
export function enrollCandidate(store: object, slot: number, holder: string): Enrolment {
  let candidates = liveCandidates.get(store);
  if (!candidates) liveCandidates.set(store, (candidates = new Map()));
  const key = `${slot}\u0000${holder}`;
  const before = candidates.get(key);
  if (before !== undefined && (!before.stopping || before.next !== undefined)) {
    throw new LeadershipError(
      'HOLDER_IN_USE',
      `Another subscription of this process already campaigns for slot ${slot} as holder ${holder}; ` +
        'give each live subscription its own holder, or leave `holder` out to get a fresh one each time',
    );
  }
  const own: Enrolled = { stopping: false };
  const registry = candidates;
  let waiting: (() => void) | undefined;
  return {
    whenFree: (start) => {
      const begin = () => {
        waiting = undefined;
        registry.set(key, own);
        start();
      };
      const current = registry.get(key);
      if (current === undefined) return begin();
      waiting = begin;
      current.next = begin;
    },
    stopping: () => {
      own.stopping = true;
      // Still waiting: it never starts, and the one before it owes it nothing.
      const current = registry.get(key);
      if (waiting !== undefined && current?.next === waiting) current.next = undefined;
    },
    left: () => {
      if (registry.get(key) !== own) return;
      registry.delete(key);
      own.next?.();
    },
  };
}

/** What the registry asks of a live candidate: whether it believes, right now, that it holds a tenure. */
export interface Believer {
  believes(term: number): boolean;
}

const believers = new Map<string, Set<Believer>>();

/** Records `believer`, the campaign of `holder` for `slot` in this process, and returns the way out. */
export function enrollBeliever(slot: number, holder: string, believer: Believer): () => void {
  const key = `${slot}\u0000${holder}`;
  let found = believers.get(key);
  if (!found) believers.set(key, (found = new Set()));
  found.add(believer);
  return () => {
    found.delete(believer);
    if (found.size === 0 && believers.get(key) === found) believers.delete(key);
  };
}

/**
 * Whether a candidate of this process believes, right now, that it holds `lease`;
 * `undefined` when no live candidate of this process campaigns as that holder for that slot.
 */
export function beliefOf({ slot, holder, term }: Lease): boolean | undefined {
  const found = believers.get(`${slot}\u0000${holder}`);
  if (found === undefined) return undefined;
  return [...found].some((believer) => believer.believes(term));
}

import { LeadershipError } from '../core/leadership-error';
import { Lease } from '../core/leadership-event';

const liveCandidates = new WeakMap<object, Set<string>>();

/**
 * Records that this process campaigns in `store` for `slot` as `holder`, and returns the way
 * out. Two live candidates with one holder would both pass the compare-and-set (`holder =
 * self`) and both lead, so the second one in a process is refused with `HOLDER_IN_USE`.
 */
export function enrollCandidate(store: object, slot: number, holder: string): () => void {
  let candidates = liveCandidates.get(store);
  if (!candidates) liveCandidates.set(store, (candidates = new Set()));
  const key = `${slot}\u0000${holder}`;
  if (candidates.has(key)) {
    throw new LeadershipError(
      'HOLDER_IN_USE',
      `Another subscription of this process already campaigns for slot ${slot} as holder ${holder}; ` +
        'give each live subscription its own holder, or leave `holder` out to get a fresh one each time',
    );
  }
  candidates.add(key);
  return () => candidates.delete(key);
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

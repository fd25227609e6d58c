import { LeadershipError } from './leadership-error';

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

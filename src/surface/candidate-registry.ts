import { argumentError } from '../core/argument-check';
import { LeadershipError } from '../core/leadership-error';
import { Lease } from '../core/leadership-event';

interface Enrolled {
  /** Unsubscribed, its campaign still settling what it sent. */
  stopping: boolean;
  /** The next candidate of the same holder, which starts once this one has settled. */
  next?: () => void;
}

const liveCandidates = new WeakMap<object, Map<string, Enrolled>>();
/** One key a named election (see `electionOf`). */
const namedElections = new Map<string, object>();

/**
 * The election `store` campaigns in, as this registry keys it: the one its `election` names
 * (a SQLite file: two connections of this process to one file are one election), or else the
 * store itself.
 */
function electionOf(store: object): object {
  const name = (store as { election?: unknown }).election;
  if (typeof name !== 'string') return store;
  let election = namedElections.get(name);
  if (election === undefined) namedElections.set(name, (election = { name }));
  return election;
}

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
 * Records that this process campaigns in `store`'s election for `slot` as `holder`. Two live candidates
 * with one holder would both pass the compare-and-set (`holder = self`) and both lead, so the
 * second one in a process is refused with `HOLDER_IN_USE`. A candidate unsubscribed is still
 * there until its last operation settled: an acquisition on its way would take the slot from
 * a new subscription of the same holder, then release it as it withdrew, while that one
 * believed it led. A new subscription of that holder waits for it (`whenFree`).
 */
export function enrollCandidate(store: object, slot: number, holder: string): Enrolment {
  const election = electionOf(store);
  let candidates = liveCandidates.get(election);
  if (!candidates) liveCandidates.set(election, (candidates = new Map()));
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

/** A believer's place in the registry (see {@link enrollBeliever}). */
export interface BelieverEnrolment {
  /** `lease` was emitted by this believer's campaign: `beliefOf` asks this election about it. */
  told(lease: Lease): void;
  /** Unsubscribed: it believes nothing any more. */
  leave(): void;
}

/**
 * The live believers of this process by slot and holder, then by store: two elections of one
 * process (two databases, say) may well use one holder name (a host's), and neither may
 * answer for the other.
 */
const believers = new Map<string, Map<object, Set<Believer>>>();
/** The store of each lease a campaign of this process emitted. */
const storeOfLease = new WeakMap<Lease, object>();

/** Records `believer`, the campaign of `holder` for `slot` in `store` in this process. */
export function enrollBeliever(store: object, slot: number, holder: string, believer: Believer): BelieverEnrolment {
  const key = `${slot}\u0000${holder}`;
  let stores = believers.get(key);
  if (!stores) believers.set(key, (stores = new Map()));
  let found = stores.get(store);
  if (!found) stores.set(store, (found = new Set()));
  found.add(believer);
  const [inKey, inStore] = [stores, found];
  return {
    told: (lease) => void storeOfLease.set(lease, store),
    leave: () => {
      inStore.delete(believer);
      if (inStore.size === 0 && inKey.get(store) === inStore) inKey.delete(store);
      if (inKey.size === 0 && believers.get(key) === inKey) believers.delete(key);
    },
  };
}

/**
 * Whether a candidate of this process believes, right now, that it holds `lease`;
 * `undefined` when no live candidate of this process campaigns as that holder for that slot
 * in the lease's election. A lease the library emitted knows its election; a copy, or one
 * written by hand, is answered only while one election of this process has candidates of
 * that slot and holder: with two, it could be either's.
 */
export function beliefOf(lease: Lease): boolean | undefined {
  const { slot, holder, term } = lease;
  const stores = believers.get(`${slot}\u0000${holder}`);
  if (stores === undefined) return undefined;
  const store = storeOfLease.get(lease);
  if (store === undefined && stores.size > 1) {
    throw argumentError(
      RangeError,
      'lease',
      `an event this process's candidates emitted (two elections of this process campaign for slot ${slot} as holder ${holder}, and a copy could be either's)`,
      lease,
    );
  }
  const found = store === undefined ? [...stores.values()][0] : stores.get(store);
  return found === undefined ? undefined : [...found].some((believer) => believer.believes(term));
}

import type { Subscription } from 'rxjs';
import { expectConfig, expectInteger, expectString, MAX_DELAY } from '../core/argument-check';
import { LeadershipError } from '../core/leadership-error';
import type { Lease } from '../core/leadership-event';
import { storeOrDatabase } from '../store/given-database';
import type { Handoffs, LeaseReader, StoreCapabilities } from '../store/lease-store';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';
import { sqliteLeaseStore } from '../store/sqlite/sqlite-lease-store';
import type { LeaderState } from './leader-state';
import { MAX_HOLDER_LENGTH } from './leadership-config';
import { observeLeader } from './observe-leader';

/** Options of {@link handOff}. */
export interface HandOffOptions {
  /**
   * Which election.
   * @default 0
   */
  slot?: number;
  /**
   * The holder of the standing candidate that should lead next (as its `elected` events
   * and `observe-leadership status` name it). Without it, the leader releases the slot for
   * whichever candidate takes it first, and sits out meanwhile.
   * @default anybody
   */
  to?: string;
  /**
   * How long to wait, in ms, for the leader to hand over and a new tenure to begin.
   * @default 10_000
   */
  within?: number;
}

/** What a handoff did: the tenure that ended, and the one that began. */
export interface HandOffResult {
  /** The leader's tenure when the handoff was asked for. */
  readonly from: Lease;
  /** The tenure that followed it: the successor's (the same as `from` when `to` already led). */
  readonly to: Lease;
}

const knownOptions = ['slot', 'to', 'within'];

/**
 * Asks the leader of a slot to hand its tenure over, to the standing candidate `to` or to
 * anybody, and resolves once the next tenure began. The leader says `lost` (`handed-off`)
 * before anything else happens, then writes the slot to `to` for a window of its
 * `retryEvery` (to anybody, it releases it); `to` takes it at once with a greater term,
 * while the others hold back until that window ends. Works from any process that can
 * reach the database, on a read-only connection too: the request is word to the
 * candidates (a file beside a SQLite database, a notification on PostgreSQL), never a
 * write. `to` being the leader already resolves at once, changing nothing.
 *
 * Rejects with a `LeadershipError`: `NO_LEADER` when nobody leads, `HANDOFF_UNANSWERED`
 * when no new tenure began `within`, `HANDOFF_NOT_TAKEN` when another candidate than `to`
 * leads next. Bad options throw at once.
 *
 * @example
 * ```ts
 * import Database from 'better-sqlite3';
 * import { handOff } from 'observe-leadership';
 *
 * handOff(new Database('jobs.db', { readonly: true }), { to: 'worker-b' }).then(({ from, to }) =>
 *   console.log(`${from.holder} (term ${from.term}) handed over to ${to.holder} (term ${to.term})`),
 * );
 * ```
 */
export function handOff(db: SqliteDatabaseLike | LeaseReader, options: HandOffOptions = {}): Promise<HandOffResult> {
  const given = storeOrDatabase('db', db, 'reader');
  expectConfig(options, knownOptions);
  const { slot = 0, to, within = 10_000 } = options;
  expectInteger('slot', slot, 0, Number.MAX_SAFE_INTEGER);
  if (to !== undefined) expectString('to', to, MAX_HOLDER_LENGTH);
  expectInteger('within', within, 1, MAX_DELAY);
  const store = 'store' in given ? given.store : sqliteLeaseStore(given.database);
  const handoffs = (store.capabilities as StoreCapabilities | undefined)?.handoffs;
  if (handoffs === undefined)
    throw new TypeError('Expected `db` to be a store that can hand off (`capabilities.handoffs`), got one without');
  return request(store, handoffs, slot, to, within);
}

function request(store: LeaseReader, handoffs: Handoffs, slot: number, to: string | undefined, within: number): Promise<HandOffResult> {
  return new Promise<HandOffResult>((resolve, reject) => {
    /** The leader's tenure, as the watch first saw it (its reads wait out a lock taken, as observers' do). */
    let from: Lease | undefined;
    /** The term of the window written for `to`, once the leader said so: `to`'s own tenure comes after it. */
    let window: number | undefined;
    let last: LeaderState | undefined;
    let settled = false;
    let stopWords: (() => void) | undefined;
    let subscription: Subscription | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      stopWords?.();
      subscription?.unsubscribe();
      clearTimeout(timer);
      outcome();
    };
    const ask = (leader: LeaderState) => {
      if (leader.holder === null || leader.term === null) {
        return settle(() => reject(new LeadershipError('NO_LEADER', `Nobody leads slot ${slot}: there is nothing to hand off`)));
      }
      const asked = { slot, holder: leader.holder, term: leader.term };
      from = asked;
      if (to === asked.holder) return settle(() => resolve({ from: asked, to: asked }));
      Promise.resolve()
        .then(() => handoffs.ask(asked, to))
        .catch((error: unknown) => settle(() => reject(error)));
    };
    const judge = (timedOut: boolean) => {
      if (from === undefined) return timedOut ? settle(() => reject(unanswered(slot, undefined, within, false))) : undefined;
      const asked = from;
      const leads =
        last?.holder != null && last.term !== null && last.term > asked.term ? { slot, holder: last.holder, term: last.term } : undefined;
      // The window itself shows `to` as the holder: only a greater term is its own tenure.
      const own = leads !== undefined && leads.holder === to && (window === undefined ? timedOut : leads.term > window);
      if (leads !== undefined && (to === undefined || own)) return settle(() => resolve({ from: asked, to: leads }));
      if (leads !== undefined && leads.holder !== to) return settle(() => reject(notTaken(asked, to as string, leads)));
      if (timedOut) settle(() => reject(unanswered(slot, asked, within, window !== undefined)));
    };
    // The word that the slot was handed to `to` says the window's term.
    stopWords = handoffs.watchHandoffs(to ?? '', (word) => {
      if (word.kind !== 'handed' || word.slot !== slot || word.to !== to) return;
      window = word.term;
      judge(false);
    });
    timer = setTimeout(() => judge(true), within);
    subscription = observeLeader(store, { slot, pollEvery: 100 }).subscribe({
      next: (state) => {
        last = state;
        if (from === undefined) ask(state);
        else judge(false);
      },
      error: (error: unknown) => settle(() => reject(error)),
    });
    if (settled) subscription.unsubscribe();
  });
}

function notTaken(from: Lease, to: string, leads: Lease): LeadershipError {
  return new LeadershipError(
    'HANDOFF_NOT_TAKEN',
    `${from.holder} (term ${from.term}) handed slot ${from.slot} over, but ${to} did not take it in its window ` +
      `(it is not a standing candidate of this slot): ${leads.holder} leads now (term ${leads.term})`,
  );
}

function unanswered(slot: number, from: Lease | undefined, within: number, handed: boolean): LeadershipError {
  if (from === undefined) return new LeadershipError('HANDOFF_UNANSWERED', `Slot ${slot} could not be read within ${within} ms`);
  return new LeadershipError(
    'HANDOFF_UNANSWERED',
    handed
      ? `${from.holder} (term ${from.term}) handed slot ${from.slot} over, but nobody took it within ${within} ms`
      : `The leader of slot ${from.slot}, ${from.holder} (term ${from.term}), did not hand over within ${within} ms: it cannot hear ` +
          `requests (the original worker, an older version, notifications that do not reach it) or it is stalled`,
  );
}

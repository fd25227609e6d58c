import { first, Subscription, toArray } from 'rxjs';
import { expectConfig, expectInteger, expectString, MAX_DELAY } from '../core/argument-check';
import { LeadershipError } from '../core/leadership-error';
import type { Lease } from '../core/leadership-event';
import { leaseStoreOf } from '../store/given-database';
import { everybody, type HandoffMessage, type Handoffs, type LeaseReader, type StoreCapabilities } from '../store/lease-store';
import type { SqliteDatabaseLike } from '../store/sqlite/sqlite-database-like';
import type { LeaderState } from './leader-state';
import { MAX_HOLDER_LENGTH } from './leadership-config';
import { observeLeader } from './observe-leader';
import { rollCall } from './roll-call';

/** Options of {@link handOff}. */
export interface HandOffOptions {
  /**
   * Which election.
   * @default 0
   */
  slot?: number;
  /**
   * The holder of the standing candidate that should lead next (as its `elected` events
   * and `observe-leadership status` name it); it must answer as one, or nothing changes.
   * Without it, the leader releases the slot for whichever candidate takes it first, and
   * sits out meanwhile.
   * @default anybody
   */
  to?: string;
  /**
   * How long to wait, in ms, for the leader to hand over and a new tenure to begin (a refusal
   * of a holder that does not stand may take 250 ms more, to name the candidates that do).
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
 * reach the database, on a read-only connection too: the request is a message to the
 * candidates (a file beside a SQLite database, a notification on PostgreSQL), never a
 * write. `to` being the leader already resolves at once, changing nothing.
 *
 * Before the leader is asked, `to` must answer as a standing candidate of the slot (a roll
 * call of it alone, within 2 s at most): a misspelt holder, or a process that is gone, changes
 * nothing, where it would otherwise depose the leader for a window nobody takes.
 *
 * Rejects with a `LeadershipError`: `NO_LEADER` when nobody leads, `HANDOFF_NOT_STANDING`
 * when `to` did not answer (nothing changed; the message names the candidates that did),
 * `HANDOFF_UNANSWERED` when no new tenure began `within`, `HANDOFF_NOT_TAKEN` when another
 * candidate than `to` leads next. Bad options throw at once.
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
  const store = leaseStoreOf('db', db, 'reader');
  expectConfig(options, knownOptions);
  const { slot = 0, to, within = 10_000 } = options;
  expectInteger('slot', slot, 0, Number.MAX_SAFE_INTEGER);
  if (to !== undefined) expectString('to', to, MAX_HOLDER_LENGTH);
  expectInteger('within', within, 1, MAX_DELAY);
  const handoffs = (store.capabilities as StoreCapabilities | undefined)?.handoffs;
  if (handoffs === undefined)
    throw new TypeError('Expected `db` to be a store that can hand off (`capabilities.handoffs`), got one without');
  return request(store, handoffs, slot, to, within);
}

/**
 * How long a named successor has to answer as a standing candidate before the leader is
 * asked: messages take ms; this is for a process busy for a moment, never for the slot.
 */
const confirmWithin = 2_000;
/** How long the candidates that do stand have to answer, for the message of a refusal. */
const listWithin = 250;

function request(store: LeaseReader, handoffs: Handoffs, slot: number, to: string | undefined, within: number): Promise<HandOffResult> {
  return new Promise<HandOffResult>((resolve, reject) => new HandoffRequest(store, handoffs, slot, to, within, resolve, reject).start());
}

/**
 * One handoff asked for: reads who leads, makes sure the named successor stands (a roll call
 * of it alone; a typo must not depose the leader), asks the leader, then judges what follows
 * until the next tenure began or `within` is over.
 */
class HandoffRequest {
  /** The leader's tenure, as the watch first saw it (its reads wait out a lock taken, as observers' do). */
  private from: Lease | undefined;
  /** The term of the window written for `to`, once the leader said so: `to`'s own tenure comes after it. */
  private window: number | undefined;
  private last: LeaderState | undefined;
  /** While `to` is being asked whether it stands (and, if not, who does): the request's own end waits for that answer. */
  private confirming = false;
  private timedOut = false;
  private settled = false;
  private readonly cleanup = new Subscription();

  constructor(
    private readonly store: LeaseReader,
    private readonly handoffs: Handoffs,
    private readonly slot: number,
    private readonly to: string | undefined,
    private readonly within: number,
    private readonly resolve: (result: HandOffResult) => void,
    private readonly reject: (error: unknown) => void,
  ) {}

  start(): void {
    // The message that the slot was handed to `to` says the window's term.
    this.cleanup.add(
      this.handoffs.watchHandoffs(this.to ?? '', (message) => {
        if (message.kind !== 'handed' || message.slot !== this.slot || message.to !== this.to) return;
        this.window = message.term;
        this.judge(false);
      }),
    );
    const timer = setTimeout(() => this.judge(true), this.within);
    this.cleanup.add(() => clearTimeout(timer));
    this.cleanup.add(
      observeLeader(this.store, { slot: this.slot, pollEvery: 100 }).subscribe({
        next: (state) => {
          this.last = state;
          if (this.from === undefined) this.read(state);
          else this.judge(false);
        },
        error: (error: unknown) => this.settle(() => this.reject(error)),
      }),
    );
  }

  private settle(outcome: () => void): void {
    if (this.settled) return;
    this.settled = true;
    this.cleanup.unsubscribe();
    outcome();
  }

  /** The first look at the slot: nobody leads, `to` leads already, or the request goes on. */
  private read(leader: LeaderState): void {
    const { slot, to } = this;
    if (leader.holder === null || leader.term === null) {
      return this.settle(() => this.reject(new LeadershipError('NO_LEADER', `Nobody leads slot ${slot}: there is nothing to hand off`)));
    }
    const asked = { slot, holder: leader.holder, term: leader.term };
    this.from = asked;
    if (to === asked.holder) return this.settle(() => this.resolve({ from: asked, to: asked }));
    if (to === undefined) return this.ask(asked);
    this.confirming = true;
    const waiting = Math.min(this.within, confirmWithin);
    const confirming = rollCall(this.handoffs, slot, to, waiting)
      .pipe(first((holder) => holder === to, null))
      .subscribe({
        next: (present) => {
          if (present === null) return this.refuse(asked, to, waiting);
          this.confirming = false;
          // Never asked once `within` is over: a handoff must not happen after its caller gave up.
          if (this.timedOut) this.judge(true);
          else this.ask(asked);
        },
        error: (error: unknown) => this.settle(() => this.reject(error)),
      });
    this.cleanup.add(confirming);
  }

  private ask(lease: Lease): void {
    const message: HandoffMessage = this.to === undefined ? { kind: 'asked', lease } : { kind: 'asked', lease, to: this.to };
    Promise.resolve()
      .then(() => this.handoffs.tell(message))
      .catch((error: unknown) => this.settle(() => this.reject(error)));
  }

  /** `to` did not answer: nothing was asked; the message names the candidates that do stand. */
  private refuse(leader: Lease, to: string, waited: number): void {
    const listing = rollCall(this.handoffs, this.slot, everybody, listWithin)
      .pipe(toArray())
      .subscribe({
        next: (present) => this.settle(() => this.reject(notStanding(leader, to, waited, present))),
        error: (error: unknown) => this.settle(() => this.reject(error)),
      });
    this.cleanup.add(listing);
  }

  private judge(timedOut: boolean): void {
    if (timedOut && this.confirming) return void (this.timedOut = true);
    const { from: asked, last, slot, to, window } = this;
    if (asked === undefined) return timedOut ? this.settle(() => this.reject(unanswered(slot, undefined, this.within, false))) : undefined;
    const leads =
      last?.holder != null && last.term !== null && last.term > asked.term ? { slot, holder: last.holder, term: last.term } : undefined;
    // The window itself shows `to` as the holder: only a greater term is its own tenure.
    const own = leads !== undefined && leads.holder === to && (window === undefined ? timedOut : leads.term > window);
    if (leads !== undefined && (to === undefined || own)) return this.settle(() => this.resolve({ from: asked, to: leads }));
    if (leads !== undefined && leads.holder !== to) return this.settle(() => this.reject(notTaken(asked, to as string, leads)));
    if (timedOut) this.settle(() => this.reject(unanswered(slot, asked, this.within, window !== undefined)));
  }
}

function notStanding(leader: Lease, to: string, waited: number, present: string[]): LeadershipError {
  const standing = [...present].sort();
  return new LeadershipError(
    'HANDOFF_NOT_STANDING',
    `${to} did not answer as a standing candidate of slot ${leader.slot} within ${waited} ms, so nothing was handed over: ` +
      `${leader.holder} still leads (term ${leader.term}). ` +
      (standing.length > 0 ? `Standing candidates that answered: ${standing.join(', ')}` : 'No other standing candidate answered'),
  );
}

function notTaken(from: Lease, to: string, leads: Lease): LeadershipError {
  return new LeadershipError(
    'HANDOFF_NOT_TAKEN',
    `${from.holder} (term ${from.term}) handed slot ${from.slot} over, but ${to} did not take it in its window ` +
      `(it stood by when asked: it died or stopped since): ${leads.holder} leads now (term ${leads.term})`,
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

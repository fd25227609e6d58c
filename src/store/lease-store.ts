import type { ClockReading } from '../core/monotonic-scheduler';
import { LeadershipError } from '../core/leadership-error';
import type { Eventually } from '../core/eventually';
import { Lease } from '../core/leadership-event';

/**
 * What a store throws when the lock an operation needs is held by another connection and it
 * did not wait for it: SQLite's busy wait would stop the host's event loop, PostgreSQL's crowd
 * gate is held by the follower that is taking the slot. Nothing was done; the caller tries
 * again on its own timers, a few ms later (see `LockRetry`), where any other error waits for
 * the next `retryEvery`. Its code is `DATABASE_BUSY`. Exported for stores of your own.
 *
 * @example
 * ```ts
 * import { LockTaken } from 'observe-leadership';
 *
 * function takeRowLock(tryLock: () => boolean): void {
 *   if (!tryLock()) throw new LockTaken('the lease row is locked by another connection');
 * }
 * ```
 */
export class LockTaken extends LeadershipError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DATABASE_BUSY', message, options);
  }
}

export type { ClockReading };

/** A slot's row as stored: who holds it, for which term, until when (Unix ms, by the store's clock). */
export interface LeaseRecord {
  /** The candidate that holds it. */
  readonly holder: string;
  /** Its tenure's term. */
  readonly term: number;
  /** When the lease ends unless renewed. */
  readonly expiresAt: number;
  /**
   * What its holder advertises to followers (the `advertise` option: a URL, say), where the
   * store keeps it and the holder said something; written with the tenure, and only ever
   * read back for that very tenure.
   */
  readonly advertised?: string;
}

export type { Eventually };

/**
 * Where a change came from: this connection (its candidates hear of it in turn, at once), or
 * anywhere, as a file watch or a notification reports it to every process at the same moment.
 */
export type ChangeOrigin = 'here' | 'anywhere';

/**
 * What changed: a slot was released or won, or its leader renewed; or `'unheard'`: the
 * watch has just begun (or begun again) to hear changes, so any made before may have gone
 * unheard, and whoever keeps track reads the slot. Reported to every listener.
 */
export type LeaseChange = 'release' | 'election' | 'renewal' | 'unheard';

/** Which changes a `watch` reports. */
export interface WatchOptions {
  /**
   * Also report elections, not only releases: observers want to see a new leader at once,
   * while a follower has nothing to do when another one won. Stores that cannot tell one
   * change from another report every change anyway.
   * @default false
   */
  readonly elections?: boolean;
  /**
   * Also report renewals: followers that time a lease by watching it (see
   * {@link LeaseView.observeFor}) restart their count at once. Stores whose leases need no
   * watching report none.
   * @default false
   */
  readonly renewals?: boolean;
}

/** What an acquire attempt knows of the moment it is made. */
export interface AcquireOptions {
  /**
   * `false` for attempts made when many candidates are likely trying at the same moment
   * (a release or a death was just announced): whoever goes first is probably taking the
   * slot, and a store where the others would queue behind it (PostgreSQL's row lock) throws
   * `LockTaken` to them at once instead. SQLite's store ignores it: it never waits for a lock.
   * @default true
   */
  readonly waitForLock?: boolean;
  /**
   * A tenure whose end was proven (`watchTenure` reported it): the attempt may take the slot
   * from exactly that holder and term before the lease expires. Nothing else ever may.
   */
  readonly provenEnded?: Lease;
  /**
   * The slot's lease exactly as read (holder, term and expiry), which this candidate watched
   * unchanged for its `observeFor` (see {@link LeaseView}): its holder's belief is over, and
   * the attempt may take the slot from exactly that lease. Stores that time leases themselves
   * ignore it.
   */
  readonly outwaited?: LeaseRecord;
  /** What the candidate advertises, written with the tenure if it wins (see `LeaseRecord.advertised`). */
  readonly advertised?: string;
}

/** What a renewal writes besides the lease's new end. */
export interface RenewOptions {
  /**
   * What the leader advertises now, written with the renewal (nothing: it advertises
   * nothing): how a leader changes it without a new election.
   */
  readonly advertised?: string;
}

/** Whether `lease` (a row as read, or a tenure) is the tenure `tenure`: the same holder and term. */
export function sameTenure(lease: Pick<Lease, 'holder' | 'term'>, tenure: Lease | undefined): boolean {
  return tenure !== undefined && lease.holder === tenure.holder && lease.term === tenure.term;
}

/** A follower's watch on the leader's tenure (see `LeaseStore.watchTenure`). */
export interface TenureWatch {
  /** Whether it still watches; once it stops without a word, only the lease is left to go by. */
  readonly watching: boolean;
  /** Stops watching. */
  close(): void;
}

/** A slot's lease as seen at one moment, with the time it had left then. */
export interface LeaseView {
  /** The row. */
  readonly lease: LeaseRecord;
  /**
   * Ms from that moment to the lease's expiry, by the store's clock (negative when it has
   * expired). Followers and observers time themselves with it, never by comparing their
   * own clock with `lease.expiresAt`, which another machine's clock may have written.
   */
  readonly expiresIn: number;
  /**
   * Set where no clock that cannot jump times the lease (PostgreSQL: the server's wall clock
   * wrote it, and it may step): the lease's length as its holder wrote it. Nobody knows its
   * end from `expiresIn` then; a reader that has seen this exact lease (holder, term, expiry)
   * unchanged for that long, on its own monotonic clock, knows that its holder's belief is
   * over, since the holder wrote it before the reader first saw it.
   */
  readonly observeFor?: number;
}

/** What an acquire attempt found: whether it won, and the slot's lease after the attempt. */
export interface AcquireResult extends LeaseView {
  /** Whether this attempt took the slot. */
  readonly acquired: boolean;
  /**
   * When it took the slot from another holder's tenure (one whose lease expired, or whose
   * end was proven: not a free or released slot, nor this holder's own row): that tenure.
   * A store that cannot tell leaves it out, and no lock-delay applies then.
   */
  readonly replaced?: LeaseRecord;
}

/**
 * What an observer needs of a store: a look at a slot that never writes (it works on a
 * read-only connection, and before anything was created: then nobody leads). With the
 * `changes` capability it hears of changes at once; without, it polls.
 */
export interface LeaseReader {
  /** Whose clock times what is stored (see {@link LeaseStore.clock}). */
  readonly clock: 'candidate' | 'server';
  /** The slot's lease, expired or not, or `undefined` when there is none, judged at `now`. */
  look(slot: number, now: ClockReading): Eventually<LeaseView | undefined>;
  /** What the store can do beyond these operations (see {@link StoreCapabilities}). */
  readonly capabilities?: Pick<StoreCapabilities, 'changes'>;
}

/**
 * What a tool (the command line) asks of a store beyond looking at a slot: which table the
 * leases are in, and whether it exists yet. Both stores of this library have it; the
 * library's own functions never need it. Never writes.
 */
export interface LeaseTable {
  /** The lease table, as messages name it. */
  readonly tableName: string;
  /** Whether the lease table exists: a candidate ran here once (nobody leads before). */
  hasTable(): Eventually<boolean>;
}

/**
 * Where leases live: all the SQL of one kind of database, behind the few operations the
 * campaign needs. A store never sets a timer. Time it stores comes either from `now`, the
 * candidate's clocks (SQLite: every candidate shares the host's), or from the database
 * server's clock (PostgreSQL: candidates on machines whose clocks disagree); either way a
 * lease written with `expiresAfter` lasts at least `expiresAfter` from the moment the call
 * was made, which is what the candidate's own deadline counts from. No store decides that
 * a lease has ended on a wall clock alone where a clock that cannot jump can say it: a wall
 * clock that steps must never let a follower take a lease its holder still believes in.
 *
 * Every store has these five operations (`clock`, `look`, `acquire`, `renew`, `release`);
 * what some stores can do beyond them is stated in `capabilities`, and a campaign without a
 * capability does without it (see {@link StoreCapabilities}).
 *
 * Operations return at once or a promise; errors (thrown or rejected) are only
 * `LeadershipError`s, so that the campaign can tell transient errors from terminal ones
 * without knowing the database. A store whose operations would otherwise wait for a lock
 * with the host's event loop stopped (SQLite: the connection's busy wait) never waits: it
 * throws `LockTaken` at once, and the caller tries again on its timers.
 */
export interface LeaseStore extends LeaseReader {
  /**
   * Whose clock times what is stored: `'candidate'`, the readings passed in (SQLite: every
   * candidate shares the host's clocks), or `'server'`, the database's own.
   */
  readonly clock: 'candidate' | 'server';
  /**
   * One atomic compare-and-set: takes `slot` for `holder` for `expiresAfter` ms if and only
   * if the slot is free, expired (judged on a clock that cannot jump where the store can: see
   * `LeaseView.observeFor` and `AcquireOptions.over`) or already held by `holder`. Winning
   * always starts a new tenure with a term greater than every term granted before.
   */
  acquire(slot: number, holder: string, now: ClockReading, expiresAfter: number, options?: AcquireOptions): Eventually<AcquireResult>;
  /**
   * Moves the end of `lease` to `expiresAfter` ms from now if the row still holds that holder
   * and term, which proves that nobody else took the slot since the tenure began, and
   * writes what the leader advertises now (a store that cannot keep it ignores it). Returns
   * `false` when it does not.
   */
  renew(lease: Lease, now: ClockReading, expiresAfter: number, options?: RenewOptions): Eventually<boolean>;
  /** Frees the slot if, and only if, it still holds `lease`. Returns whether it did. */
  release(lease: Lease): Eventually<boolean>;
  /** What the store can do beyond these operations (see {@link StoreCapabilities}). */
  readonly capabilities?: StoreCapabilities;
}

/**
 * The powers a store may have beyond the five operations every store has, each named and
 * each optional: a campaign or an observer asks `store.capabilities?.<name>`, and without
 * it does what a store without that power needs (polling, every follower standing by,
 * waiting for leases to expire).
 */
export interface StoreCapabilities {
  /** Word of changes, so that followers try at once and observers see at once. Without it, they poll. */
  readonly changes?: ChangeSignals;
  /** A few standby places per slot, so that a release wakes a few followers, not all. Without it, every follower stands by. */
  readonly standby?: StandbyPlaces;
  /** Proof that a tenure ended before its lease did (SQLite: its holder's process is gone). Without it, followers wait for the lease. */
  readonly tenureProof?: TenureProof;
  /** Work in one transaction with the check that a lease still holds (see `fenced`). */
  readonly fencing?: Fencing<unknown>;
  /** Messages about handoffs: a leader asked to hand its tenure over, and a tenure handed to a named successor. Without it, nobody can be asked. */
  readonly handoffs?: Handoffs;
  /** Which standing candidates prefer to lead (the `priority` option). Without it, every candidate is equal. */
  readonly priorities?: Priorities;
}

/**
 * The `priorities` capability: the candidates of a slot that declared a priority above the
 * default (0), so that the others let them take a free slot first. Best effort, and only
 * ever about order: a declaration that goes unseen costs a preference, never safety.
 */
export interface Priorities {
  /**
   * Declares that `holder` campaigns for `slot` with `priority` (above 0) for the next
   * `expiresAfter` ms, or until it withdraws (`priority` 0). Declared again before that
   * ends, as long as it campaigns. Never waits for a lock: throws `LockTaken` instead.
   */
  declare(slot: number, holder: string, priority: number, now: ClockReading, expiresAfter: number): Eventually<void>;
  /** The highest priority that a live candidate of `slot` other than `holder` declared; 0 when none did. */
  highest(slot: number, holder: string, now: ClockReading): Eventually<number>;
  /**
   * `true` when `highest` answers from declarations already heard, without a statement:
   * then it may be asked at every attempt, in a crowd too. Others are asked in a crowd only
   * by a follower that knows of a declaration.
   * @default false
   */
  readonly answersLocally?: boolean;
}

/**
 * A message about a handoff, heard by every candidate of every process that shares the store:
 * `asked`, the leader of `lease` is asked to hand its tenure to `to` (to anybody, without
 * it); `handed`, the tenure of `slot` was handed to `to`, which may take it at once: the
 * slot holds a window for `to` of term `term`, and `to`'s own tenure follows with a greater
 * one; `roll-call`, the followers of `slot` that hear it (`to`, or every one when `to` is
 * `''` (everybody: no holder is empty)) answer `present` to `replyTo`, saying who they are.
 */
export type HandoffMessage =
  | {
      /** A request to a leader. */
      readonly kind: 'asked';
      /** The tenure asked to hand over: only its holder, in that very term, acts on it. */
      readonly lease: Lease;
      /** Whom to hand over to; anybody when absent. */
      readonly to?: string;
    }
  | {
      /** The slot handed to a follower. */
      readonly kind: 'handed';
      /** Which slot. */
      readonly slot: number;
      /** The holder it was handed to. */
      readonly to: string;
      /** The window's term: the successor's own tenure has a greater one. */
      readonly term: number;
    }
  | {
      /** Who stands for a slot: a question to its followers. */
      readonly kind: 'roll-call';
      /** Which slot. */
      readonly slot: number;
      /** The candidate asked, or `''` (everybody: no holder is empty). */
      readonly to: string;
      /** Where the answers go: an address of the asker's own, heard as a holder's messages are. */
      readonly replyTo: string;
      /** Those already heard, who need not answer again (a call is made again while answers come in). */
      readonly heard?: readonly string[];
    }
  | {
      /** A follower's answer to a roll call: it stands for the slot. */
      readonly kind: 'present';
      /** Which slot it stands for. */
      readonly slot: number;
      /** The roll call's `replyTo`. */
      readonly to: string;
      /** The candidate that answers. */
      readonly holder: string;
    };

/** The addressee of a message for every candidate (a roll call of them all): no holder is empty. */
export const everybody = '';

/**
 * The `handoffs` capability: how a leader is asked to hand its tenure over, and how it
 * does. A request is only a message, never a write of the lease table: it needs no right to
 * write, and only the leader it names, in that very tenure, acts on it.
 */
export interface Handoffs {
  /**
   * Sends `message` to its addressee (see `HandoffMessage`): to the candidates of that holder in
   * every process that shares the store, or to every candidate for `''` (everybody: no holder is empty). Best
   * effort: a message may not arrive. Needs no right to write the lease table.
   */
  tell(message: HandoffMessage): Eventually<void>;
  /**
   * Ends `lease` by writing the slot to `to` for `window` ms (a lease that `to` may take at
   * once, as its own row, and nobody else before it ends), then tells `to`. Only from the
   * leader, once it no longer believes it leads. Returns the window's term, or `undefined`
   * when the slot no longer holds `lease`. A store with `tenureProof` may leave the proof
   * of the tenure's end to the leader's `endTenure`, which comes once the window is over, or
   * once the leader gives up a handover that kept failing; a failed handover must not prove
   * the end by itself, since the slot is still `lease`'s and is tried again.
   */
  handOver(lease: Lease, to: string, now: ClockReading, window: number): Eventually<number | undefined>;
  /**
   * Calls `listener` with every message addressed to `holder`, of any slot: requests to it as
   * the leader (`asked`), and the slot handed to it (`handed`), with where it came from:
   * `here` for a message told on this connection, heard inside the call that told it (a
   * campaign acts on it once that call is over), `anywhere` for one heard from another
   * process (acted on at once). Without an origin, a message counts as `here`. Returns the
   * way to stop.
   */
  watchHandoffs(holder: string, listener: (message: HandoffMessage, origin?: ChangeOrigin) => void): () => void;
}

/** The `changes` capability: word that a slot may have changed hands. */
export interface ChangeSignals {
  /**
   * Calls `listener` when a slot may have changed hands (a release, or for some stores an
   * acquisition), in this process or another, so that followers can try at once instead of
   * at their next timer. Best effort: a change may go unreported (or be reported twice),
   * which is why campaigns keep their timers. Returns the way to stop listening.
   */
  watch(listener: (origin: ChangeOrigin, change: LeaseChange) => void, options?: WatchOptions): () => void;
  /** Whether changes are being reported right now (a watch can fail, or not be possible at all). */
  isWatching(): boolean;
}

/** The `standby` capability: the few followers of a slot that watch for its release. */
export interface StandbyPlaces {
  /**
   * Keeps or takes one of the first `places` standby places of `slot` for `holder` for
   * `expiresAfter` ms, and says whether `holder` holds one now. Standby followers are the
   * ones that watch for releases, so that a release wakes a few processes, not every
   * follower. Winning the slot gives the place up. Never waits for a lock: throws
   * `LockTaken` at once instead.
   */
  standBy(slot: number, holder: string, now: ClockReading, expiresAfter: number, places: number): Eventually<boolean>;
  /** Gives up `holder`'s standby place of `slot`, if it has one. */
  leaveStandby(slot: number, holder: string): Eventually<void>;
}

/** The `tenureProof` capability, for stores whose candidates share a host. */
export interface TenureProof {
  /**
   * Calls `onEnded` if, and only if, there is positive proof that `lease`'s holder no longer
   * believes in it (its process is gone, or it gave the tenure up), so that a follower may
   * take the slot at once with `acquire(..., { provenEnded: lease })`. No word proves nothing: the
   * lease still stands.
   */
  watchTenure(lease: Lease, onEnded: () => void): TenureWatch;
  /**
   * The leader's side of `watchTenure`: this candidate no longer believes it holds `lease`
   * (it was lost), so the store may stop proving its holder alive. `release` does the same
   * by itself. Never throws.
   */
  endTenure(lease: Lease): void;
}

/**
 * The `fencing` capability: `work` in one transaction that first checks that a lease still
 * holds (see `fenced`). SQLite's runs at once, its `work` synchronous and given no client;
 * PostgreSQL's answers later, its `work` given a client of the pool.
 */
export interface Fencing<Client> {
  /**
   * Runs `work` in one transaction that first checks that `lease` still holds at `now()`,
   * read once the transaction holds its lock (a store whose server keeps the time reads its own).
   */
  fenced<T>(lease: Lease, work: (client: Client) => Eventually<T>, now: () => ClockReading): Eventually<T>;
}

/** A lease store with the `fencing` capability, whose work gets a `Client`. */
export interface FencingStore<Client> extends LeaseStore {
  /** What the store can do beyond its five operations: fencing among them. */
  readonly capabilities: FencingCapabilities<Client>;
}

/** Capabilities that include fencing whose work gets a `Client`. */
export interface FencingCapabilities<Client> extends StoreCapabilities {
  /** Work in one transaction with the check that a lease still holds (see `fenced`). */
  readonly fencing: Fencing<Client>;
}

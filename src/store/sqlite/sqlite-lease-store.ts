/*
 * Longer than the others (about 500 lines): each operation's transaction, the tenure's
 * endpoint it opens before its commit and the signal it sends after are one sequence, and
 * they read best in one place. The SQL is in sqlite-statements.ts, the connection's checks in
 * sqlite-connection.ts, the endpoints in tenure-endpoints.ts and endpoint-watch.ts, the
 * words about handoffs in handoff-mailboxes.ts.
 */
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { argumentError } from '../../core/argument-check';
import { LeadershipError } from '../../core/leadership-error';
import { Lease } from '../../core/leadership-event';
import { checkLease, stands } from '../lease-check';
import {
  AcquireOptions,
  AcquireResult,
  ChangeOrigin,
  ClockReading,
  sameTenure,
  LeaseChange,
  ChangeSignals,
  HandoffWord,
  Handoffs,
  LeaseRecord,
  LeaseStore,
  LeaseTable,
  LeaseView,
  Priorities,
  RenewOptions,
  StandbyPlaces,
  StoreCapabilities,
  TenureProof,
  TenureWatch,
} from '../lease-store';
import { ChangeListeners } from '../change-listeners';
import { toLeadershipError } from './sqlite-error';
import { installSqliteSchema } from './sqlite-schema';
import { readText, statementText } from './sqlite-statements';
import { canonicalPath, SqliteConnection } from './sqlite-connection';
import { EndpointPort, fileSideChannels, MailboxPort, SignalPort, SqliteSideChannels } from './side-channels';
import { asBetterSqlite3 } from './sqlite-driver';
import type { SqliteDatabaseLike } from './sqlite-database-like';

/** A slot's row as read, with the ms its lease has left at the reading (see `remaining`). */
interface LeaseRow extends Omit<LeaseRecord, 'advertised'> {
  readonly expiresIn: number;
  /** What the tenure's holder advertises; `null` for nothing. */
  readonly advertised: string | null;
}

/** What the statements that judge a lease need of a reading: `clock`, `now`, `wall`. */
type Judged = ClockReading & { slot: number };

interface TakeParameters extends Judged {
  holder: string;
  expiresAt: number;
}

interface DeadlineParameters extends Lease {
  clock: string;
  deadline: number;
}

/** What a tenure's holder advertises (see `writeAdvertised`). */
type Advertised = string | undefined;

interface EndedTenure {
  endedHolder: string | null;
  endedTerm: number | null;
}

interface StandbyPlace {
  place: number;
  holder: string;
  expiresAt: number;
}

interface StandbyClaim {
  slot: number;
  place: number;
  holder: string;
  now: number;
  expiresAt: number;
}

interface Statements {
  read: Statement<[Judged], LeaseRow>;
  standbyRead: Statement<[number], StandbyPlace>;
  standbyClaim: Statement<[StandbyClaim]>;
  standbyLeave: Statement<[{ slot: number; holder: string }]>;
  declare: Statement<[{ slot: number; holder: string; priority: number; clock: string; expiresAt: number }]>;
  undeclare: Statement<[{ slot: number; holder: string }]>;
  highest: Statement<[{ slot: number; holder: string } & ClockReading], number>;
  acquire: Transaction<
    (
      parameters: TakeParameters & EndedTenure,
      deadline: number,
      advertised: Advertised,
      openEndpoint: (tenure: Lease) => void,
    ) => { acquired: boolean; lease: LeaseRow; replaced?: LeaseRecord }
  >;
  renew: Transaction<(lease: Lease, now: ClockReading, expiresAfter: number, advertised: Advertised) => boolean>;
  release: Statement<[Lease]>;
  /** The window's term, or `undefined` when the slot no longer held the lease. */
  handOver: Transaction<(lease: Lease, to: string, now: ClockReading, window: number) => number | undefined>;
  fenced: Transaction<(lease: Lease, now: () => ClockReading, work: () => unknown) => unknown>;
}

/** The row as a view: the lease, and the time it has left. */
function viewOf(row: LeaseRow): LeaseView {
  return { lease: recordOf(row), expiresIn: row.expiresIn };
}

function recordOf({ holder, term, expiresAt, advertised }: LeaseRow): LeaseRecord {
  return advertised === null ? { holder, term, expiresAt } : { holder, term, expiresAt, advertised };
}

/**
 * The end of a lease written at `now` on the reading's clock, rounded up: a follower may
 * take the slot only once its own reading is past it, and so past the holder's belief,
 * which counts from when it sent the write, before this reading.
 */
function deadlineOf(now: ClockReading, expiresAfter: number): number {
  return Math.ceil(now.now + expiresAfter);
}

const stores = new WeakMap<Database, SqliteLeaseStore>();

/**
 * The lease store of a SQLite connection (better-sqlite3's `Database`, node:sqlite's
 * `DatabaseSync` or bun:sqlite's `Database`), made once per connection so that its
 * statements are prepared once: what `observeLeadership(db)` campaigns through. For tools
 * that look at a slot (`look`, with `readClocks()`), ask whether a candidate ever ran there
 * (`hasTable`), or time the store's own operations, as the benchmark does; a program that
 * elects a leader needs only `observeLeadership`.
 *
 * @example
 * ```ts
 * import Database from 'better-sqlite3';
 * import { readClocks, sqliteLeaseStore } from 'observe-leadership';
 *
 * const store = sqliteLeaseStore(new Database('jobs.db', { readonly: true }));
 * const view = store.look(0, readClocks());
 * console.log(view === undefined ? 'nobody ever led' : `${view.lease.holder}, ${view.expiresIn} ms left`);
 * ```
 */
export function sqliteLeaseStore(db: SqliteDatabaseLike): SqliteLeaseStore {
  const database = asBetterSqlite3(db);
  if (database === undefined) throw argumentError(TypeError, 'db', 'a SQLite database (better-sqlite3, node:sqlite or bun:sqlite)', db);
  let store = stores.get(database);
  if (!store) stores.set(database, (store = new SqliteLeaseStore(database)));
  return store;
}

/**
 * Leases in a SQLite database, in the original worker's `worker_leadership` table (see
 * {@link sqliteLeaseStore}, which makes it). Nothing touches the database before the first
 * operation, which creates what is missing of the schema and prepares the statements.
 */
export class SqliteLeaseStore implements LeaseStore, LeaseTable, ChangeSignals, StandbyPlaces, TenureProof, Handoffs, Priorities {
  /** Every candidate of a SQLite file shares the host's clock: what is stored is timed by theirs. */
  readonly clock = 'candidate';
  /** The original worker's table. */
  readonly tableName = 'worker_leadership';
  /** Releases signalled through a file, standby places and priorities in tables, tenures proven over by their endpoints, fencing in one of its transactions, handoffs by a file of words. */
  readonly capabilities: StoreCapabilities = {
    changes: this,
    standby: this,
    tenureProof: this,
    fencing: { fenced: (lease, work, now) => this.fencedSync(lease, now, () => work(undefined)) },
    handoffs: this,
    priorities: this,
  };
  /** The connection, checked before each operation, used without the busy wait. */
  private readonly connection: SqliteConnection;
  /** The connection's statements, shared by every store made on it (see `Prepared`). */
  private readonly prepared: Prepared;
  private readonly listeners = new ChangeListeners({
    added: () => this.startWatching(),
    emptied: () => this.stopWatching(),
  });
  private watcher: { close(): void } | undefined;
  /** Where releases and elections are signalled to other processes; none for a database in memory. */
  private readonly signalFile: SignalPort | undefined;
  /** How followers on this host learn at once that a leader's process is gone; none in memory. */
  private readonly endpoints: EndpointPort | undefined;
  /** Where words about handoffs go, to this connection's candidates and to other processes. */
  private readonly mailboxes: MailboxPort;

  /**
   * The election this store campaigns in, as this process tells its candidates apart (see
   * `enrollCandidate`): its database's file, so that two connections of one process to one
   * file are one election; none for a database in memory, where each connection is its own.
   */
  readonly election: string | undefined;

  /**
   * @internal Made by {@link sqliteLeaseStore}, one per connection, with the files and
   * sockets beside the database as its side channels; the simulator gives its own, and no
   * election (`null`: each of its processes has its own candidates).
   */
  constructor(
    private readonly db: Database,
    channels: SqliteSideChannels = fileSideChannels(db.memory ? undefined : canonicalPath(db.name), () => db.open),
    election: string | null = db.memory ? null : `sqlite ${canonicalPath(db.name)}`,
  ) {
    this.election = election ?? undefined;
    this.prepared = preparedOn(db);
    this.connection = this.prepared.connection;
    this.signalFile = channels.signals;
    this.endpoints = channels.endpoints;
    this.mailboxes = channels.mailboxes;
  }

  /**
   * Reads first, which keeps followers off the write lock while a live lease stands; but not
   * in a crowd (`waitForLock: false`: a release or a death was just announced, and the slot is
   * most likely free). There, in a rollback journal, the crowd's reads would keep the one that
   * writes from committing (a commit needs every reader gone), and with no busy wait it would
   * give up: each of the crowd asks for the write lock at once instead, one gets it, and the
   * others meet it taken and hold no lock at all while it commits.
   */
  acquire(
    slot: number,
    holder: string,
    now: ClockReading,
    expiresAfter: number,
    { waitForLock = true, ended, advertised }: AcquireOptions = {},
  ): AcquireResult {
    return this.guard((statements) => {
      const answer = (acquired: boolean, row: LeaseRow): AcquireResult => ({ acquired, ...viewOf(row) });
      const judged = { slot, ...now };
      const seen = waitForLock ? statements.read.get(judged) : undefined;
      if (seen !== undefined && seen.holder !== holder && stands(seen.expiresIn) && !sameTenure(seen, ended)) return answer(false, seen);
      const parameters = {
        ...judged,
        holder,
        expiresAt: now.wall + expiresAfter,
        endedHolder: ended?.holder ?? null,
        endedTerm: ended?.term ?? null,
      };
      // The tenure whose endpoint the transaction opened, before its commit.
      let opened: Lease | undefined;
      const openEndpoint = (tenure: Lease) => {
        this.endpoints?.openFor(tenure);
        opened = tenure;
      };
      let taken: { acquired: boolean; lease: LeaseRow; replaced?: LeaseRecord };
      try {
        taken = statements.acquire.immediate(parameters, deadlineOf(now, expiresAfter), advertised, openEndpoint);
      } catch (error) {
        // The commit failed (better-sqlite3 commits after the transaction's function): the
        // tenure never was, and nobody may ever reach its endpoint.
        if (opened !== undefined) this.endpoints?.closeFor(opened);
        throw error;
      }
      const { acquired, lease, replaced } = taken;
      if (acquired) {
        this.signalFile?.signal(); // for observers; standbys find it taken
        if (ended !== undefined) this.endpoints?.removeLeftover(ended); // its end was proven: a file left over
      }
      return replaced === undefined ? answer(acquired, lease) : { ...answer(acquired, lease), replaced };
    });
  }

  renew(lease: Lease, now: ClockReading, expiresAfter: number, { advertised }: RenewOptions = {}): boolean {
    return this.guard((statements) => statements.renew.immediate(lease, now, expiresAfter, advertised));
  }

  /** Frees the slot if it still holds `lease`; this candidate stops proving that it lives either way. */
  release(lease: Lease): boolean {
    let released: boolean;
    try {
      released = this.guard((statements) => statements.release.run(lease).changes === 1);
    } finally {
      this.endpoints?.closeFor(lease);
    }
    if (released) {
      this.listeners.notify('here'); // candidates on this connection
      this.signalFile?.signal(); // everybody else
    }
    return released;
  }

  /**
   * Sends a word about a handoff: written to its addressee's mailbox file (see
   * `HandoffMailboxes`), never to the database, so a read-only connection may tell too.
   * Candidates of this connection hear it at once, the others through the file.
   */
  tell(word: HandoffWord): void {
    this.connection.run(() => undefined); // a closed connection says so
    this.mailboxes.tell(word);
  }

  /**
   * Writes the slot to `to` for `window` ms if it still holds `lease` (a new term, and a
   * deadline on the monotonic clock: a wall clock that steps neither stretches nor cuts the
   * window), and tells `to`. The endpoint of `lease` stays open until the caller ends it
   * (`endTenure`), once `to` had its window: closing it now would send every standby to the
   * write lock at the moment `to` needs it. Open longer than the belief, it only delays a
   * proof. If the slot no longer holds `lease`, it closes at once, as after a release. A
   * handover that failed (the lock taken at its commit, say) leaves it open too: the slot is
   * still `lease`'s, and a proof of its end now would let a standby take it from under the
   * handover's next try; the caller ends it if it gives up.
   */
  handOver(lease: Lease, to: string, now: ClockReading, window: number): number | undefined {
    const term = this.guard((statements) => statements.handOver.immediate(lease, to, now, window));
    if (term === undefined) this.endpoints?.closeFor(lease);
    else this.mailboxes.tell({ kind: 'handed', slot: lease.slot, to, term });
    return term;
  }

  /**
   * Priorities are timed on the host's monotonic clock, as leases are: a declaration that
   * outlived its candidate (killed) holds the others back for its length, and no longer. On
   * the wall clock, the declaration of a candidate whose clock had stepped forward held every
   * lower one back for the step's length, the slot free meanwhile (the simulator found a
   * slot without a leader until its run ended, after a candidate's clock stepped 216 s).
   */
  declare(slot: number, holder: string, priority: number, now: ClockReading, expiresAfter: number): void {
    this.guard((statements) =>
      priority > 0
        ? statements.declare.run({ slot, holder, priority, clock: now.clock, expiresAt: deadlineOf(now, expiresAfter) })
        : statements.undeclare.run({ slot, holder }),
    );
  }

  highest(slot: number, holder: string, now: ClockReading): number {
    return Number(this.guard((statements) => statements.highest.get({ slot, holder, ...now })));
  }

  /** Every word addressed to `holder`, from this connection and, through its mailbox's file, from every other. */
  watchHandoffs(holder: string, listener: (word: HandoffWord, origin: ChangeOrigin) => void): () => void {
    return this.mailboxes.watch(holder, listener);
  }

  endTenure(lease: Lease): void {
    this.endpoints?.closeFor(lease);
  }

  /** The listening socket of `lease`'s endpoint, while this candidate holds it (see TenureEndpoints). */
  endpointDescriptor(lease: Lease): number | undefined {
    return this.endpoints?.descriptorOf(lease);
  }

  watchTenure(lease: Lease, onEnded: () => void): TenureWatch {
    return this.endpoints?.watch(lease, onEnded) ?? { watching: false, close: () => undefined };
  }

  /**
   * Standby places are timed by the wall clock: they only decide who is woken first, never
   * who leads, and a step costs at most a place held for its length by a follower gone.
   */
  standBy(slot: number, holder: string, { wall: now }: ClockReading, expiresAfter: number, places: number): boolean {
    const expiresAt = now + expiresAfter;
    return this.guard((statements) => {
      const taken = statements.standbyRead.all(slot);
      const own = taken.find((place) => place.holder === holder);
      const live = new Set(taken.filter((place) => place.expiresAt >= now).map((place) => place.place));
      const place = own?.place ?? Array.from({ length: places }, (_, index) => index).find((index) => !live.has(index));
      if (place === undefined) return false;
      return statements.standbyClaim.run({ slot, place, holder, now, expiresAt }).changes === 1;
    });
  }

  leaveStandby(slot: number, holder: string): void {
    this.guard((statements) => statements.standbyLeave.run({ slot, holder }));
  }

  /** Releases, and elections by other processes; never renewals, which need no watching here (see LeaseView). */
  watch(listener: (origin: ChangeOrigin, change: LeaseChange) => void): () => void {
    return this.listeners.add(listener, {});
  }

  isWatching(): boolean {
    return this.watcher !== undefined;
  }

  /**
   * The slot's current lease, expired or not, with the time it has left at `now`, or
   * `undefined` when there is none: what observers look at. Never writes: works on a
   * read-only connection, and before the schema exists (then there is no row).
   */
  look(slot: number, now: ClockReading): LeaseView | undefined {
    return this.connection.run(() => {
      this.watchIfWanted();
      const row = this.reader()?.get({ slot, ...now });
      return row && viewOf(row);
    });
  }

  /** Whether the lease table exists (a candidate, or the original worker, ran here). Never writes. */
  hasTable(): boolean {
    return this.connection.run(() => this.reader() !== undefined);
  }

  /**
   * Creates what is missing of the schema, as every candidate's first operation does, first
   * setting WAL if `wal` (which the file keeps); says which journal mode the file is in.
   */
  install({ wal = false }: { wal?: boolean } = {}): string {
    return this.connection.run(() => {
      if (wal) this.db.pragma('journal_mode = WAL');
      this.ready();
      return this.db.pragma('journal_mode', { simple: true }) as string;
    });
  }

  /**
   * Runs `work` in one write transaction that first checks that `lease` is held and not
   * expired at `now()`, read once the transaction holds the write lock; throws
   * `LeadershipError` `LEASE_LOST`, writing nothing, if not. Unlike the library's other
   * statements, it waits for the write lock as the connection's busy timeout says: the
   * user's work needs that lock, and the user chose how long to wait for it.
   */
  fencedSync<T>(lease: Lease, now: () => ClockReading, work: () => T): T {
    const statements = this.guard((prepared) => prepared);
    // Errors of the user's work pass through untouched; only the library's own are translated.
    let inWork = false;
    const runWork = (): T => {
      inWork = true;
      const result = work();
      if (typeof (result as { then?: unknown } | undefined)?.then === 'function') {
        throw new TypeError('Expected `work` to return synchronously: it runs inside a SQLite transaction');
      }
      inWork = false;
      return result;
    };
    try {
      return statements.fenced.immediate(lease, now, runWork) as T;
    } catch (error) {
      throw inWork ? error : toLeadershipError(error, this.db);
    }
  }

  private guard<T>(operation: (statements: Statements) => T): T {
    return this.connection.run(() => {
      this.watchIfWanted();
      return operation(this.ready());
    });
  }

  private watchIfWanted(): void {
    if (this.listeners.any && this.watcher === undefined) this.startWatching();
    this.mailboxes.rewatch();
  }

  /**
   * The read statement, for reading without writing: `read` serves observers, which may
   * hold a read-only connection and come before any candidate made the schema. No lease
   * table yet means no lease; a lease table without the terms (only the original worker
   * ever ran) means term 0.
   */
  private reader(): Statement<[Judged], LeaseRow> | undefined {
    if (this.prepared.wholeRead) return this.prepared.wholeRead;
    const tables = this.db
      .prepare<[], string>(
        `SELECT name FROM sqlite_master
          WHERE name IN ('worker_leadership', 'worker_leadership_term', 'worker_leadership_deadline', 'worker_leadership_advertised')`,
      )
      .pluck()
      .all();
    if (!tables.includes('worker_leadership')) return undefined;
    const terms = tables.includes('worker_leadership_term');
    const deadlines = tables.includes('worker_leadership_deadline');
    const advertised = tables.includes('worker_leadership_advertised');
    const statement = this.db.prepare<[Judged], LeaseRow>(readText({ terms, deadlines, advertised }));
    // Kept only once the schema is whole: until then a candidate may yet complete it.
    if (terms && deadlines && advertised) this.prepared.wholeRead = statement;
    return statement;
  }

  /**
   * Watches the signal file, creating it first if it is missing (on a read-only connection
   * too: it is not the database, and an observer that starts first must hear of the first
   * election); tried again at the next operation if that fails or the file goes.
   */
  private startWatching(): void {
    if (this.watcher !== undefined || this.signalFile === undefined || !this.db.open) return;
    this.signalFile.create();
    this.watcher = this.signalFile.watch(
      () => this.listeners.notify('anywhere'),
      () => {
        this.watcher = undefined;
        this.listeners.notify('anywhere');
      },
    );
  }

  private stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /**
   * The statements, each prepared at its first use: a candidate that never leads never
   * prepares a leader's, and one that starts often (a worker pool, the simulator's
   * restarts) pays for what it runs. The schema is made, and checked, at the first call.
   */
  private ready(): Statements {
    if (this.prepared.statements) return this.prepared.statements;
    if (this.db.readonly) throw new LeadershipError('DATABASE_READONLY', 'The database connection is read-only');
    installSqliteSchema(this.db);
    const read = this.reader() as Statement<[Judged], LeaseRow>; // the schema is whole now
    return (this.prepared.statements = statementsOn(this.db, read));
  }
}

/** The store's statements and transactions on `db`, whose schema is whole (see `SqliteLeaseStore.ready`), each prepared at its first use. */
function statementsOn(db: Database, read: Statement<[Judged], LeaseRow>): Statements {
  const prepared = <P extends unknown[], R = unknown>(text: string) => onFirstUse(() => db.prepare<P, R>(text));
  const take = prepared<[TakeParameters & EndedTenure]>(statementText.take);
  const renew = prepared<[Lease & { expiresAt: number }]>(statementText.renew);
  const writeDeadline = prepared<[DeadlineParameters]>(statementText.writeDeadline);
  const standbyLeave = prepared<[{ slot: number; holder: string }]>(statementText.standbyLeave);
  const mayWrite = prepared(statementText.mayWrite);
  const advertise = advertiseStatement(prepared);
  return onFirstUseEach<Statements>({
    read: () => read,
    standbyRead: () => db.prepare(statementText.standbyRead),
    standbyClaim: () => db.prepare(statementText.standbyClaim),
    standbyLeave,
    declare: () => db.prepare(statementText.declare),
    undeclare: () => db.prepare(statementText.undeclare),
    highest: () => db.prepare<[{ slot: number; holder: string } & ClockReading], number>(statementText.highest).pluck(),
    // A leader is nobody's standby: winning gives its standby place up, if it had one. Its
    // endpoint opens before the commit, so that whoever reads the tenure can reach it; if
    // the commit fails, nobody ever could, and it closes. The row and the deadline are
    // written together: nobody ever reads one without the other.
    acquire: () =>
      db.transaction(
        (parameters: TakeParameters & EndedTenure, deadline: number, advertised: Advertised, openEndpoint: (tenure: Lease) => void) => {
          const before = read.get(parameters); // under the write lock: exactly what the take replaces
          const acquired = take().run(parameters).changes === 1;
          const lease = read.get(parameters) as LeaseRow;
          if (!acquired) return { acquired, lease };
          const tenure = { slot: parameters.slot, holder: lease.holder, term: lease.term };
          writeDeadline().run({ ...tenure, clock: parameters.clock, deadline });
          advertise(tenure, advertised);
          standbyLeave().run({ slot: parameters.slot, holder: parameters.holder });
          openEndpoint(tenure);
          const replaced = before !== undefined && before.holder !== parameters.holder ? viewOf(before).lease : undefined;
          return { acquired, lease: { ...lease, advertised: advertised ?? null, expiresIn: deadline - parameters.now }, replaced };
        },
      ),
    renew: () =>
      db.transaction((lease: Lease, now: ClockReading, expiresAfter: number, advertised: Advertised) => {
        if (renew().run({ ...lease, expiresAt: now.wall + expiresAfter }).changes !== 1) return false;
        writeDeadline().run({ ...lease, clock: now.clock, deadline: deadlineOf(now, expiresAfter) });
        advertise(lease, advertised);
        return true;
      }),
    release: () => db.prepare(statementText.release),
    handOver: () => handOverTransaction(db, read, writeDeadline()),
    // The check and the work share one IMMEDIATE transaction: a takeover needs the write
    // lock, so it cannot fall between them, however long this process pauses. The time is
    // read once the lock is held, not before: waiting for the lock may outlast the lease.
    // A read-only connection fails first, with DATABASE_READONLY, on every driver.
    fenced: () =>
      db.transaction((held: Lease, now: () => ClockReading, runWork: () => unknown) => {
        mayWrite().run();
        const row = read.get({ slot: held.slot, ...now() });
        checkLease(held, row && recordOf(row), () => stands((row as LeaseRow).expiresIn));
        return runWork();
      }),
  });
}

/**
 * What a connection prepared: its checks, the read of the whole schema once it exists (see
 * `reader`), and the other statements once the schema was made (see `ready`). Statements
 * belong to their connection, not to a store: every store made on it shares them, so that
 * one made again (the simulator's next process on the connection its last one left)
 * prepares nothing again.
 */
interface Prepared {
  readonly connection: SqliteConnection;
  wholeRead?: Statement<[Judged], LeaseRow>;
  statements?: Statements;
}

const preparedOnConnection = new WeakMap<Database, Prepared>();

function preparedOn(db: Database): Prepared {
  let prepared = preparedOnConnection.get(db);
  if (prepared === undefined) preparedOnConnection.set(db, (prepared = { connection: new SqliteConnection(db) }));
  return prepared;
}

/** `make()`'s value, made at the first call and kept. */
function onFirstUse<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

/** An object whose every property is made by its maker at its first read, then kept. */
function onFirstUseEach<T extends object>(makers: { [Name in keyof T]: () => T[Name] }): T {
  const made = {} as T;
  for (const name of Object.keys(makers) as Array<keyof T>) {
    Object.defineProperty(made, name, {
      configurable: true,
      get: () => {
        const value = makers[name]();
        Object.defineProperty(made, name, { value });
        return value;
      },
    });
  }
  return made;
}

/** Writes what the holder of `tenure` advertises, or that it advertises nothing. */
function advertiseStatement(
  prepared: <P extends unknown[]>(text: string) => () => Statement<P>,
): (tenure: Lease, advertised: Advertised) => void {
  const write = prepared<[Lease & { value: string }]>(statementText.writeAdvertised);
  const clear = prepared<[{ slot: number }]>(statementText.clearAdvertised);
  return (tenure, advertised) => void (advertised === undefined ? clear().run(tenure) : write().run({ ...tenure, value: advertised }));
}

/** The handover's transaction: the row and its deadline together, as at a take; the window is timed on the monotonic clock. */
function handOverTransaction(
  db: Database,
  read: Statement<[Judged], LeaseRow>,
  writeDeadline: Statement<[DeadlineParameters]>,
): Statements['handOver'] {
  const handOver = db.prepare<[Lease & { to: string; expiresAt: number }]>(statementText.handOver);
  return db.transaction((lease: Lease, to: string, now: ClockReading, window: number) => {
    if (handOver.run({ ...lease, to, expiresAt: now.wall + window }).changes !== 1) return undefined;
    const { term } = read.get({ slot: lease.slot, ...now }) as LeaseRow;
    writeDeadline.run({ slot: lease.slot, holder: to, term, clock: now.clock, deadline: deadlineOf(now, window) });
    return term;
  });
}

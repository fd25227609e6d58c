/*
 * The SQLite store: its five operations, each capability in a file of its own (changes.ts,
 * standby.ts, tenure-proof.ts, handoffs.ts, priorities.ts, each with its tables and SQL),
 * the statements of the five in sqlite-prepared.ts, their SQL in sqlite-statements.ts, the connection's checks
 * in sqlite-connection.ts, the side channels (signal file, endpoints, mailboxes) in
 * side-channels.ts.
 */
import type { Database, Statement } from 'better-sqlite3';
import { argumentError } from '../../core/argument-check';
import { LeadershipError } from '../../core/leadership-error';
import { Lease } from '../../core/leadership-event';
import { stands } from '../lease-check';
import {
  AcquireOptions,
  AcquireResult,
  ClockReading,
  FencingCapabilities,
  sameTenure,
  LeaseRecord,
  LeaseStore,
  LeaseTable,
  LeaseView,
  RenewOptions,
  StoreCapabilities,
} from '../lease-store';
import { toLeadershipError } from './sqlite-error';
import { installSqliteSchema } from './sqlite-schema';
import { readText } from './sqlite-statements';
import { Judged, LeaseRow, Prepared, preparedOn, Statements, statementsOn, viewOf } from './sqlite-prepared';
import { deadlineOf, Operate } from './sqlite-capability';
import { SqliteChanges } from './changes';
import { SqliteStandby, standbyStatements } from './standby';
import { SqliteTenureProof } from './tenure-proof';
import { handoffStatements, SqliteHandoffs } from './handoffs';
import { priorityStatements, SqlitePriorities } from './priorities';
import { canonicalPath, SqliteConnection } from './sqlite-connection';
import { EndpointPort, fileSideChannels, MailboxPort, SqliteSideChannels } from './side-channels';
import { asBetterSqlite3 } from './sqlite-driver';
import type { SqliteDatabaseLike } from './sqlite-database-like';

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
export class SqliteLeaseStore implements LeaseStore, LeaseTable {
  /** Every candidate of a SQLite file shares the host's clock: what is stored is timed by theirs. */
  readonly clock = 'candidate';
  /** The original worker's table. */
  readonly tableName = 'worker_leadership';
  /** Every capability, each in a file of its own (changes.ts, standby.ts, tenure-proof.ts, handoffs.ts, priorities.ts); fencing in one of its transactions. */
  readonly capabilities: Required<StoreCapabilities> & FencingCapabilities<undefined>;
  /** What its operations tell of changes (see `SqliteChanges`). */
  private readonly changes: SqliteChanges;
  /** Its tenures' endpoints, which the command line hands to the command it runs. */
  private readonly tenureProof: SqliteTenureProof;
  /** The connection, checked before each operation, used without the busy wait. */
  private readonly connection: SqliteConnection;
  /** The connection's statements, shared by every store made on it (see `Prepared`). */
  private readonly prepared: Prepared;
  /** How followers on this host learn at once that a leader's process is gone; none in memory. */
  private readonly endpoints: EndpointPort | undefined;
  /** Where messages about handoffs go, to this connection's candidates and to other processes. */
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
    this.endpoints = channels.endpoints;
    this.mailboxes = channels.mailboxes;
    this.changes = new SqliteChanges(channels.signals, () => db.open);
    this.tenureProof = new SqliteTenureProof(channels.endpoints);
    this.capabilities = {
      changes: this.changes,
      standby: new SqliteStandby(this.operateOn(standbyStatements)),
      tenureProof: this.tenureProof,
      fencing: { fenced: (lease, work, now) => this.fencedSync(lease, now, () => work(undefined)) },
      handoffs: new SqliteHandoffs(this.operateOn(handoffStatements), this.connection, channels.mailboxes, channels.endpoints),
      priorities: new SqlitePriorities(this.operateOn(priorityStatements)),
    };
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
    { waitForLock = true, provenEnded, advertised }: AcquireOptions = {},
  ): AcquireResult {
    return this.operate((statements) => {
      const answer = (acquired: boolean, row: LeaseRow): AcquireResult => ({ acquired, ...viewOf(row) });
      const judged = { slot, ...now };
      const seen = waitForLock ? statements.read.get(judged) : undefined;
      if (seen !== undefined && seen.holder !== holder && stands(seen.expiresIn) && !sameTenure(seen, provenEnded))
        return answer(false, seen);
      const parameters = {
        ...judged,
        holder,
        expiresAt: now.wall + expiresAfter,
        endedHolder: provenEnded?.holder ?? null,
        endedTerm: provenEnded?.term ?? null,
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
        this.changes.elected();
        if (provenEnded !== undefined) this.endpoints?.removeLeftover(provenEnded); // its end was proven: a file left over
      }
      return replaced === undefined ? answer(acquired, lease) : { ...answer(acquired, lease), replaced };
    });
  }

  renew(lease: Lease, now: ClockReading, expiresAfter: number, { advertised }: RenewOptions = {}): boolean {
    return this.operate((statements) => statements.renew.immediate(lease, now, expiresAfter, advertised));
  }

  /** Frees the slot if it still holds `lease`; this candidate stops proving that it lives either way. */
  release(lease: Lease): boolean {
    let released: boolean;
    try {
      released = this.operate((statements) => statements.release.run(lease).changes === 1);
    } finally {
      this.endpoints?.closeFor(lease);
    }
    if (released) this.changes.released();
    return released;
  }

  /** @internal The listening socket of `lease`'s endpoint, while this candidate holds it (see TenureEndpoints). */
  endpointDescriptor(lease: Lease): number | undefined {
    return this.tenureProof.endpointDescriptor(lease);
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
      this.statements();
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
    const statements = this.operate((prepared) => prepared);
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

  /** Runs `operation` on the checked connection, with the schema made; the store's watches restarted if they were lost. */
  private readonly operate: Operate<Statements> = (operation) =>
    this.connection.run(() => {
      this.watchIfWanted();
      return operation(this.statements());
    });

  /** How a capability runs an operation on its own statements (`statementsOf`, from its home), as the store runs its own. */
  private operateOn<S>(statementsOf: (db: Database) => S): Operate<S> {
    return (operation) => this.operate(() => operation(statementsOf(this.db)));
  }

  private watchIfWanted(): void {
    this.changes.watchIfWanted();
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
   * The statements, each prepared at its first use: a candidate that never leads never
   * prepares a leader's, and one that starts often (a worker pool, the simulator's
   * restarts) pays for what it runs. The schema is made, and checked, at the first call.
   */
  private statements(): Statements {
    if (this.prepared.statements) return this.prepared.statements;
    if (this.db.readonly) throw new LeadershipError('DATABASE_READONLY', 'The database connection is read-only');
    installSqliteSchema(this.db);
    const read = this.reader() as Statement<[Judged], LeaseRow>; // the schema is whole now
    return (this.prepared.statements = statementsOn(this.db, read));
  }
}

import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { ulid } from 'ulid';
import { argumentError, expectConfig, expectInteger, expectObject, expectString, MAX_DELAY } from '../../core/argument-check';
import { Lease } from '../../core/leadership-event';
import { checkLease } from '../lease-check';
import {
  AcquireOptions,
  AcquireResult,
  ChangeOrigin,
  ClockReading,
  LeaseChange,
  ChangeSignals,
  Fencing,
  FencingCapabilities,
  FencingStore,
  LeaseView,
  StandbyPlaces,
  LockTaken,
  WatchOptions,
} from '../lease-store';
import { LeadershipError } from '../../core/leadership-error';
import { ChangeListeners } from '../change-listeners';
import { toLeadershipError } from './postgres-error';
import { installPostgresSchema, PostgresLeaseTable, qualifiedNames } from './postgres-schema';
import { channel, idleBound, keepsOff, Row, statementsFor, toRecord, toView } from './postgres-statements';
import { inTransaction } from './postgres-transaction';

/** Options of {@link postgresLeaseStore}. */
export interface PostgresLeaseStoreConfig {
  /**
   * The schema of the lease table, created if missing.
   * @default 'public'
   */
  schema?: string;
  /**
   * The lease table, created if missing, with its term sequence `<table>_term` beside it.
   * @default 'worker_leadership'
   */
  table?: string;
  /**
   * Ms after which a statement of the store that got no answer fails (`pg`'s `query_timeout`),
   * as a transient error: a campaign makes one call at a time, and a call that hangs on a
   * dead connection must not keep it from the next. It does not bound the wait for a
   * connection from the pool: set the pool's `connectionTimeoutMillis` for that.
   * @default 5_000
   */
  queryTimeout?: number;
}

const nothing = () => undefined;

/** The key of `holder`'s standby place of `slot` among the places a store holds. */
const placeOf = (slot: number, holder: string) => `${slot} ${holder}`;

interface Privileges extends QueryResultRow {
  role: string;
  standby: boolean;
  missing: string[];
  sequence: boolean;
}

/**
 * The connection a store holds while anything of this process listens: it listens for
 * elections and releases, and carries every statement of the store meanwhile, so that the
 * store holds one connection, not two.
 */
interface Session {
  readonly client: PoolClient;
  /** Gives the connection back: destroyed after `error`, else after UNLISTEN, once the statements queued on it are done. */
  close(error?: Error): void;
}

/** Whether `error` is the server's answer to a statement (a SQLSTATE), after which the connection is as good as before. */
function isServerAnswer(error: unknown): boolean {
  const { code } = (error ?? {}) as { code?: unknown };
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('57P') && !code.startsWith('08');
}

/** undefined_table, invalid_schema_name: nothing was created yet, so nobody leads. */
const nothingYet = new Set(['42P01', '3F000']);

const stores = new WeakMap<Pool, Map<string, PostgresLeaseStore>>();

/**
 * The lease store of a PostgreSQL database, for `observeLeadership` and `fenced`:
 * every candidate of every machine that shares the table takes part in one election.
 *
 * Everything stored is timed by the server's clock, so machines whose clocks disagree still
 * agree on who leads; a candidate's own belief is timed by its local monotonic clock, from
 * when it sent each write. Each operation is one statement, and the store sends one at a
 * time: it needs one connection of the pool, whatever the number of slots, candidates and
 * observers. While any of them listens (followers and observers do), that connection is
 * one the store holds: it listens for elections and releases (`LISTEN`), so that a
 * graceful handoff takes milliseconds and observers see a new leader at once, and carries
 * the statements meanwhile. Nothing depends on it staying open: if it goes, statements
 * take any connection of the pool and followers poll until it is back. Behind a pooler
 * that lends server connections per transaction (PgBouncer's transaction mode),
 * notifications cannot reach it: the store finds that out, warns once
 * (`process.emitWarning`, code `OBSERVE_LEADERSHIP_NO_NOTIFICATIONS`) and polls. A
 * candidate first checks that its role may write the table and draw terms, and ends with
 * `DATABASE_READONLY` at once if not. `fenced` takes a connection of its own for each
 * transaction: a pool needs `max` >= 2 (its default is 10).
 *
 * One store per pool and table: calling again with the same pool and options returns the
 * same store. Nothing touches the database before the first operation, which creates the
 * table if missing. The store listens for the pool's `error` events (idle connections that
 * the server or the network closed), which would otherwise end the process: they count as
 * transient, and the next operation takes another connection.
 *
 * @example
 * ```ts
 * import { Pool } from 'pg';
 * import { observeLeadership } from 'observe-leadership';
 * import { postgresLeaseStore } from 'observe-leadership/postgres';
 *
 * const pool = new Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 5_000 });
 * const store = postgresLeaseStore(pool);
 * const subscription = observeLeadership(store, { renewEvery: 5_000, expiresAfter: 15_000 }).subscribe(console.log);
 * process.once('SIGTERM', async () => {
 *   subscription.unsubscribe(); // starts the release at once
 *   await store.settled(); // and this waits for it
 *   await pool.end();
 * });
 * ```
 */
export function postgresLeaseStore(pool: Pool, config: PostgresLeaseStoreConfig = {}): PostgresLeaseStore {
  const pg = expectObject('pool', pool, 'a pg Pool') as Record<string, unknown>;
  if (typeof pg.query !== 'function' || typeof pg.connect !== 'function' || typeof pg.on !== 'function') {
    throw argumentError(TypeError, 'pool', 'a pg Pool', pool);
  }
  expectConfig(config, ['schema', 'table', 'queryTimeout']);
  const { schema = 'public', table = 'worker_leadership', queryTimeout = 5_000 } = config;
  // PostgreSQL names are at most 63 bytes; the term sequence adds `_term` to the table's.
  expectString('schema', schema, 63);
  expectString('table', table, 58);
  expectInteger('queryTimeout', queryTimeout, 1, MAX_DELAY);
  const key = JSON.stringify([schema, table, queryTimeout]);
  let forPool = stores.get(pool);
  if (!forPool) stores.set(pool, (forPool = new Map()));
  let store = forPool.get(key);
  if (!store) forPool.set(key, (store = new PostgresLeaseStore(pool, { schema, table }, queryTimeout)));
  return store;
}

/** See {@link postgresLeaseStore}. */
export class PostgresLeaseStore implements FencingStore<PoolClient>, ChangeSignals, StandbyPlaces, Fencing<PoolClient> {
  readonly clock = 'server';
  /** Notifications, standby places as advisory locks, and fencing under the row's lock; no proof of a tenure's end across hosts. */
  readonly capabilities: FencingCapabilities<PoolClient> = { changes: this, standby: this, fencing: this };
  private readonly statements: ReturnType<typeof statementsFor>;
  /** The table and its term sequence, quoted. */
  private readonly qualified: { readonly table: string; readonly termSequence: string };
  /** What is announced on the channel: an election or a release of this table, and no other that shares the server. */
  private readonly payloads: { readonly elected: string; readonly released: string; readonly renewed: string };
  private schemaReady: Promise<void> | undefined;
  /** Set once a candidate found it may write the table (see `mayCampaign`). */
  private writable: Promise<void> | undefined;
  private readonly listeners = new ChangeListeners(
    () => this.startListening(),
    () => this.stopListening(),
  );
  /** The connection that listens (and carries the statements), once there is one. */
  private listening: Session | undefined;
  /** The session being opened, if it is. */
  private opening: Promise<Session | undefined> | undefined;
  /** Standby places held on the session, by `slot holder`. */
  private readonly places = new Map<string, number>();
  /** How many standBy calls wait for the session, which must stay meanwhile. */
  private seekingPlaces = 0;
  /** The end of the store's last statement (see `statement`). */
  private turn: Promise<void> = Promise.resolve();
  /** Set once a notification from another connection reached a listening one: later ones need no probe. */
  private notificationsWork = false;
  /** Set when notifications were found not to reach a listening connection (PgBouncer in transaction mode): followers poll. */
  private notificationsUnavailable = false;
  /** Every operation not yet settled, so that `settled()` can wait for them. */
  private readonly pending = new Set<Promise<unknown>>();
  /** Releases that failed since `settled()` last reported. */
  private failedReleases: unknown[] = [];

  /** @internal Made by {@link postgresLeaseStore}, one per pool and table. */
  constructor(
    private readonly pool: Pool,
    private readonly names: PostgresLeaseTable,
    private readonly queryTimeout: number,
  ) {
    this.qualified = qualifiedNames(names);
    this.statements = statementsFor(this.qualified);
    const { table } = this.qualified;
    this.payloads = { elected: `elected ${table}`, released: `released ${table}`, renewed: `renewed ${table}` };
    // An idle connection closed by the server or the network is reported here, and would
    // end the process if nobody listened. The next operation simply takes another one.
    pool.on('error', () => undefined);
  }

  /**
   * `waitForLock: false` marks an attempt made when a release was just announced: the slot is
   * most likely free, so it goes straight to the compare-and-set, one round trip sooner, and
   * only one of the crowd makes it; the others get `LockTaken` at once and step aside.
   */
  acquire(slot: number, holder: string, now: ClockReading, expiresAfter: number, options: AcquireOptions = {}): Promise<AcquireResult> {
    const { waitForLock = true, over } = options;
    return this.operation(async () => {
      const answer = (acquired: boolean, row: Row): AcquireResult => ({ acquired, ...toView(row) });
      await this.mayCampaign();
      // Otherwise reading first keeps followers off the row's lock while a live lease stands.
      if (waitForLock) {
        const [seen] = await this.query<Row>(this.statements.read, [slot]);
        if (seen !== undefined && seen.holder !== holder && keepsOff(seen, over)) return answer(false, seen);
      }
      const parameters = [
        slot,
        holder,
        expiresAfter,
        this.payloads.elected,
        over?.holder ?? null,
        over?.term ?? null,
        over?.expiresAt ?? null,
      ];
      const [taken] = waitForLock ? await this.query<Row>(this.statements.take, parameters) : await this.takeInCrowd(parameters);
      if (taken !== undefined) {
        void this.leaveStandby(slot, holder).catch(nothing); // a leader is nobody's standby
        return answer(true, taken);
      }
      const [seen] = await this.query<Row>(this.statements.read, [slot]);
      // Taken by another in between, or released again since: either way not ours.
      return seen === undefined ? this.acquire(slot, holder, now, expiresAfter, options) : answer(false, seen);
    });
  }

  /** The crowd's compare-and-set (see the statement); `LockTaken` for those who did not get the gate. */
  private async takeInCrowd(parameters: unknown[]): Promise<Row[]> {
    const [result] = await this.query<Row & { open: boolean }>(this.statements.takeInCrowd, parameters);
    if (!result.open) throw new LockTaken('Another candidate of the crowd is taking the slot');
    return result.holder === null ? [] : [result];
  }

  renew({ slot, holder, term }: Lease, _now: ClockReading, expiresAfter: number): Promise<boolean> {
    return this.operation(async () => {
      const rows = await this.query(this.statements.renew, [slot, holder, term, expiresAfter, this.payloads.renewed]);
      return rows.length === 1;
    });
  }

  release({ slot, holder, term }: Lease): Promise<boolean> {
    const released = this.operation(async () => {
      const rows = await this.query(this.statements.release, [slot, holder, term, this.payloads.released]);
      return rows.length === 1;
    });
    // Kept for whoever awaits `settled()`: releases mostly run after the subscriber left.
    released.catch((error: unknown) => this.failedReleases.push(error));
    return released;
  }

  /**
   * Keeps or takes one of the first `places` standby places of `slot`: a session advisory
   * lock on the store's session (`pg_try_advisory_lock`, never waiting), which the server
   * lets go when the session ends, however it ends. Only standbys listen for releases, so
   * that a release wakes a few processes, not every follower of the fleet. Where
   * notifications cannot work (PgBouncer's transaction mode), there are no places: every
   * follower polls as a standby would.
   */
  standBy(slot: number, holder: string, _now: ClockReading, _expiresAfter: number, places: number): Promise<boolean> {
    const key = placeOf(slot, holder);
    return this.operation(async () => {
      this.seekingPlaces++;
      try {
        const session = await this.session();
        if (session === undefined) return true; // nobody can be told: every follower polls
        if (this.places.has(key)) return true;
        const { rows } = await this.onTurn(() =>
          session.client.query<{ place: number }>(this.config(this.statements.standBy, [this.placesKey(slot), places])),
        );
        if (rows.length === 0 || this.listening !== session) return false; // a session gone took its lock with it
        this.places.set(key, rows[0].place);
        return true;
      } finally {
        this.seekingPlaces--;
        this.stopListening();
      }
    });
  }

  /** Gives up `holder`'s standby place of `slot`, if it has one. */
  leaveStandby(slot: number, holder: string): Promise<void> {
    const key = placeOf(slot, holder);
    const place = this.places.get(key);
    const session = this.listening;
    if (place === undefined || session === undefined) return Promise.resolve();
    this.places.delete(key);
    return this.operation(async () => {
      if (this.listening === session) {
        await this.onTurn(() => session.client.query(this.config(this.statements.leaveStandby, [this.placesKey(slot), place])));
      }
      this.stopListening();
    });
  }

  /** The advisory lock key of a slot's standby places: this table's, not another's that shares the server. */
  private placesKey(slot: number): string {
    return `${this.payloads.released} ${slot}`;
  }

  /** Releases are reported to every listener; elections and renewals only to those that ask. */
  watch(listener: (origin: ChangeOrigin, change: LeaseChange) => void, options?: WatchOptions): () => void {
    return this.listeners.add(listener, options);
  }

  /** Whether notifications are known to reach this process now: it listens, and a probe made the round trip. */
  isWatching(): boolean {
    return this.listening !== undefined && this.notificationsWork;
  }

  /**
   * The slot's current row, expired or not, with the time it had left by the server's
   * clock, or `undefined` when there is none. Never writes, so it creates nothing: before
   * any candidate made the table, nobody leads. (The server's clock judges: it takes no
   * reading of this host's clocks.)
   */
  look(slot: number): Promise<LeaseView | undefined> {
    if (this.listeners.any) this.startListening();
    return (async () => {
      try {
        const [row] = await this.query<Row>(this.statements.read, [slot]);
        return row && toView(row);
      } catch (error) {
        if (nothingYet.has((error as { code?: string }).code ?? '')) return undefined;
        throw toLeadershipError(error);
      }
    })();
  }

  /**
   * Runs `work` with a client in one transaction that first locks the lease row and checks
   * that `lease` holds it and has not expired by the server's clock; rejects with
   * `LeadershipError` `LEASE_LOST`, writing nothing, if not. A takeover must lock the same
   * row, so it waits until this transaction ends: a deposed leader's writes never commit
   * after a new term began. If the process stalls inside the transaction past the lease's
   * end, the server ends its session (`idle_in_transaction_session_timeout`), which rolls it
   * back and lets the next leader in.
   */
  async fenced<T>(lease: Lease, work: (client: PoolClient) => Promise<T>): Promise<T> {
    // Errors of the user's work pass through untouched; only the library's own are translated.
    let inWork = false;
    try {
      await this.ready();
      return await inTransaction(this.pool, async (client) => {
        // Before the row is locked: a process cut off from the server between the lock and the
        // next statement would otherwise leave a session idle in its transaction, holding the
        // row (and the slot) until the server notices the dead connection, hours later.
        await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${this.queryTimeout}`);
        const [row] = (await client.query<Row>(this.config(this.statements.lockForFencing, [lease.slot]))).rows;
        // Holder and term under the row's lock prove that nobody took the slot since the tenure
        // began, and nobody can until this transaction ends. The server's clock is not asked
        // whether the lease still stands: it may have stepped, and a leader's writes must not
        // fail because it did. A row without its length (an earlier version's) is, as then.
        checkLease(lease, row && toRecord(row), () => row.lease_ms !== null || Number(row.expires_at) >= Number(row.now));
        await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${idleBound(row)}`);
        inWork = true;
        const result = await work(client);
        inWork = false;
        return result;
      });
    } catch (error) {
      throw inWork ? error : toLeadershipError(error);
    }
  }

  /**
   * Resolves once every operation of this store in progress has settled, the releases that
   * unsubscribing started included: await it before `pool.end()` or `process.exit()`.
   * Rejects with the error of a release that failed (the lease then expires by itself).
   */
  async settled(): Promise<void> {
    while (this.pending.size > 0) {
      await Promise.allSettled([...this.pending]);
      // A campaign releases once the operation it had in flight is handled: let that happen.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const [failed] = this.failedReleases;
    this.failedReleases = [];
    if (failed !== undefined) throw failed;
  }

  private operation<T>(run: () => Promise<T>): Promise<T> {
    const promise = (async () => {
      try {
        await this.ready();
        if (this.listeners.any) this.startListening();
        return await run();
      } catch (error) {
        throw toLeadershipError(error);
      }
    })();
    this.pending.add(promise);
    const forget = () => this.pending.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  private ready(): Promise<void> {
    this.schemaReady ??= installPostgresSchema(this.pool, this.names).catch((error: unknown) => {
      this.schemaReady = undefined; // tried again at the next operation
      throw error;
    });
    return this.schemaReady;
  }

  private config(text: string, values: unknown[]): QueryConfig & { query_timeout: number } {
    return { text, values, query_timeout: this.queryTimeout };
  }

  private async query<R extends QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.statement<R>(text, values)).rows;
  }

  /**
   * One statement: on the listening connection when there is one, else on a connection of
   * the pool; one statement of the store at a time either way, so that the store needs one
   * connection whatever the number of slots, candidates and observers.
   */
  private async statement<R extends QueryResultRow>(text: string, values: unknown[]): Promise<QueryResult<R>> {
    return this.onTurn(async () => {
      const session = this.listening;
      if (session === undefined) return this.pool.query<R>(this.config(text, values));
      try {
        return await session.client.query<R>(this.config(text, values));
      } catch (error) {
        // A statement that got no answer may leave the connection stuck behind it: never reuse it.
        if (!isServerAnswer(error)) session.close(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }
    });
  }

  /** Runs `run` once every statement of the store sent before it has settled. */
  private onTurn<T>(run: () => Promise<T>): Promise<T> {
    const result = this.turn.then(run);
    this.turn = result.then(nothing, nothing);
    return result;
  }

  /**
   * Checks once that this role may campaign (write the table, draw terms) on a server that
   * accepts writes, so that a role that may only read learns it when its candidate starts,
   * not when the slot first falls free.
   */
  private mayCampaign(): Promise<void> {
    this.writable ??= (async () => {
      const { table, termSequence } = this.qualified;
      const [found] = await this.query<Privileges>(this.statements.privileges, [table, termSequence]);
      if (found.standby) {
        throw new LeadershipError(
          'DATABASE_READONLY',
          'The server is a standby, which accepts no writes: candidates must connect to the primary',
        );
      }
      const missing: string[] = [];
      if (found.missing.length > 0) missing.push(`${found.missing.join(', ')} on ${table}`);
      if (!found.sequence) missing.push(`USAGE on ${termSequence}`);
      if (missing.length > 0) {
        throw new LeadershipError(
          'DATABASE_READONLY',
          `Role ${found.role} may not campaign: it lacks ${missing.join(', ')} (grant them, or only watch with observeLeader)`,
        );
      }
    })().catch((error: unknown) => {
      this.writable = undefined; // asked again next time: a grant may come
      throw error;
    });
    return this.writable;
  }

  /** Whether the store needs its session: somebody listens, or holds or seeks a standby place. */
  private wantsSession(): boolean {
    return this.listeners.any || this.places.size > 0 || this.seekingPlaces > 0;
  }

  private startListening(): void {
    void this.session();
  }

  private stopListening(): void {
    if (!this.wantsSession()) this.listening?.close();
  }

  /**
   * The store's session once it listens, opening it if needed, or `undefined` if it cannot
   * (notifications do not reach it, or the connection failed: tried again at the next
   * operation). A new session checks, once a store, that a notification sent from another
   * connection reaches it before the answer to its next statement (the server delivers it
   * then at the latest): behind a pooler that lends server connections per transaction
   * (PgBouncer's transaction mode) it does not, and the store says so once and lets its
   * followers poll.
   */
  private session(): Promise<Session | undefined> {
    if (this.listening !== undefined) return Promise.resolve(this.listening);
    if (this.notificationsUnavailable) return Promise.resolve(undefined);
    this.opening ??= this.openChecked()
      .catch(() => undefined)
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async openChecked(): Promise<Session | undefined> {
    // After the schema is made, if a candidate is making it (an observer makes nothing).
    await this.schemaReady?.catch(nothing);
    const probe = `probe ${ulid()}`;
    let probed = false;
    // Taken in the store's turn: no statement of the store holds another connection meanwhile.
    const session = await this.onTurn(() => this.openSession((payload) => (probed ||= payload === probe)));
    if (session === undefined || this.notificationsWork) return session;
    // From another connection, closed at once so that the store keeps to one; statements go
    // on meanwhile on the session.
    const notifier = await this.pool.connect();
    try {
      await notifier.query(this.config('SELECT pg_notify($1, $2)', [channel, probe]));
    } finally {
      notifier.release(true);
    }
    if (this.listening !== session) return undefined;
    await this.onTurn(() => session.client.query(this.config('SELECT 1', [])));
    if (this.listening !== session) return undefined;
    if (probed) {
      this.notificationsWork = true;
      return session;
    }
    this.notificationsUnavailable = true;
    session.close();
    process.emitWarning(
      `observe-leadership: notifications do not reach this connection (a pooler in transaction mode, such as PgBouncer's?): ` +
        `followers and observers of ${this.qualified.table} poll instead`,
      { code: 'OBSERVE_LEADERSHIP_NO_NOTIFICATIONS' },
    );
    return undefined;
  }

  /** A connection that listens, which becomes the store's session while it is wanted; `undefined` if it no longer is. */
  private async openSession(onOther: (payload: string) => void): Promise<Session | undefined> {
    const client = await this.pool.connect();
    let closed = false;
    const session: Session = {
      client,
      close: (error?: Error) => {
        if (closed) return;
        closed = true;
        if (this.listening === session) {
          this.listening = undefined;
          this.places.clear(); // the server lets the session's advisory locks go with it
        }
        const release = (broken?: Error) => {
          client.removeAllListeners('notification');
          client.removeListener('error', session.close);
          client.release(broken);
        };
        // Statements sent before run first; a broken connection is destroyed, a good one goes
        // back to the pool, with neither a LISTEN nor an advisory lock left on it.
        if (error !== undefined) release(error);
        else
          this.onTurn(() => client.query('UNLISTEN *; SELECT pg_advisory_unlock_all()')).then(
            () => release(),
            (failed: Error) => release(failed),
          );
      },
    };
    client.on('error', session.close);
    client.on('notification', ({ channel: name, payload = '' }) => {
      if (name !== channel) return;
      if (payload === this.payloads.released) this.listeners.notify('anywhere');
      else if (payload === this.payloads.elected) this.listeners.notify('anywhere', 'election');
      else if (payload === this.payloads.renewed) this.listeners.notify('anywhere', 'renewal');
      else onOther(payload);
    });
    try {
      await client.query(this.config(`LISTEN ${channel}`, []));
    } catch (error) {
      session.close(error as Error);
      throw error;
    }
    if (!this.wantsSession()) return void session.close();
    this.listening = session;
    return session;
  }
}

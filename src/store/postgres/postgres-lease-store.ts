import type { Eventually } from '../../core/eventually';
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { Lease } from '../../core/leadership-event';
import { checkLease } from '../lease-check';
import {
  AcquireOptions,
  AcquireResult,
  ClockReading,
  Fencing,
  FencingCapabilities,
  FencingStore,
  LeaseTable,
  LeaseView,
  LockTaken,
  RenewOptions,
  StoreCapabilities,
} from '../lease-store';
import { PostgresLeaseStoreConfig, resolvePostgresConfig } from './postgres-config';
import { toLeadershipError } from './postgres-error';
import { checkMayCampaign } from './postgres-privileges';
import { describeTable, installPostgresSchema, PostgresLeaseTable, qualifiedNames } from './postgres-schema';
import { StoreSession } from './postgres-session';
import { PostgresStandby, StandbyLocks } from './standby';
import { PostgresChanges } from './changes';
import { PostgresHandoffs } from './handoffs';
import { PostgresPriorities } from './priorities';
import type { PostgresRunner } from './postgres-runner';
import { idleBound, keepsOff, replacedOf, Row, statementsFor, toRecord, toView } from './postgres-statements';
import { inTransaction } from './postgres-transaction';

export type { PostgresLeaseStoreConfig };

const nothing = () => undefined;

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
  const { names, queryTimeout, key } = resolvePostgresConfig(pool, config);
  let forPool = stores.get(pool);
  if (!forPool) stores.set(pool, (forPool = new Map()));
  let store = forPool.get(key);
  if (!store) forPool.set(key, (store = new PostgresLeaseStore(pool, names, queryTimeout)));
  return store;
}

/** What `acquire` answers for `row`: the lease, and the tenure it replaced when it took the slot. */
function answerOf(acquired: boolean, row: Row): AcquireResult {
  const replaced = acquired ? replacedOf(row) : undefined;
  return replaced === undefined ? { acquired, ...toView(row) } : { acquired, ...toView(row), replaced };
}

/** Tries of one `acquire` that each found the slot held, then free at the read after. */
const takeTries = 3;

/** See {@link postgresLeaseStore}. */
export class PostgresLeaseStore implements FencingStore<PoolClient>, LeaseTable, Fencing<PoolClient> {
  readonly clock = 'server';
  /** `schema.table`, as messages name it. */
  readonly tableName: string;
  /** Each in a file of its own (changes.ts, standby.ts, handoffs.ts, priorities.ts), fencing under the row's lock; no proof of a tenure's end across hosts. */
  readonly capabilities: Required<Omit<StoreCapabilities, 'tenureProof'>> & FencingCapabilities<PoolClient>;
  private readonly changes: PostgresChanges;
  private readonly standbyPlaces: PostgresStandby;
  private readonly handoffs: PostgresHandoffs;
  private readonly priorities: PostgresPriorities;
  private readonly statements: ReturnType<typeof statementsFor>;
  /** The table and its term sequence, quoted. */
  private readonly qualified: { readonly table: string; readonly termSequence: string };
  /** What is announced on the channel: an election or a release of this table, and no other that shares the server. */
  private readonly payloads: {
    readonly elected: string;
    readonly released: string;
    readonly renewed: string;
    /** The start of a message about a handoff (see `HandoffMessage`), followed by its JSON. */
    readonly handoff: string;
    /** The start of a candidate's declared priority, followed by its JSON (see `declare`). */
    readonly priority: string;
  };
  /** The schema being made, or made; unset again if making it failed. */
  private schemaReady: Promise<void> | undefined;
  /** The check that this role may campaign, once one was made and passed (see `checkMayCampaign`). */
  private campaignAllowed: Promise<void> | undefined;
  /** One statement at a time, on the session that listens when there is one. */
  private readonly session: StoreSession;
  private readonly standby: StandbyLocks;
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
    this.tableName = `${names.schema}.${names.table}`;
    this.statements = statementsFor(this.qualified);
    const { table } = this.qualified;
    this.payloads = {
      elected: `elected ${table}`,
      released: `released ${table}`,
      renewed: `renewed ${table}`,
      handoff: `handoff ${table} `,
      priority: `priority ${table} `,
    };
    this.session = new StoreSession(pool, queryTimeout, table, {
      wanted: () => this.listening || this.standby.wanted,
      notified: (payload) => this.onNotification(payload),
      ended: () => this.standby.forget(),
      hearing: () => this.changes.heard('unheard'),
      schemaMade: () => this.schemaReady,
    });
    this.standby = new StandbyLocks(this.session, (slot) => `${this.payloads.released} ${slot}`);
    const { session } = this;
    this.changes = new PostgresChanges({
      start: () => session.start(),
      unwanted: () => session.stopIfUnwanted(),
      get hearing() {
        return session.hearing;
      },
    });
    const runner: PostgresRunner = {
      operation: (run) => this.operation(run),
      query: (text, values) => this.query(text, values),
      listened: () => this.listened(),
    };
    const { tell } = this.statements;
    this.handoffs = new PostgresHandoffs(runner, { ...this.qualified, tell, payload: this.payloads.handoff }, () =>
      session.stopIfUnwanted(),
    );
    this.priorities = new PostgresPriorities(runner, tell, this.payloads.priority);
    this.standbyPlaces = new PostgresStandby(this.standby, runner.operation);
    this.capabilities = {
      changes: this.changes,
      standby: this.standbyPlaces,
      fencing: this,
      handoffs: this.handoffs,
      priorities: this.priorities,
    };
    // An idle connection closed by the server or the network is reported here, and would
    // end the process if nobody listened. The next operation simply takes another one.
    pool.on('error', () => undefined);
  }

  /**
   * `waitForLock: false` marks an attempt made when a release was just announced: the slot is
   * most likely free, so it goes straight to the compare-and-set, one round trip sooner, and
   * only one of the crowd makes it; the others get `LockTaken` at once and step aside.
   */
  acquire(slot: number, holder: string, _now: ClockReading, expiresAfter: number, options: AcquireOptions = {}): Promise<AcquireResult> {
    return this.operation(async () => {
      await this.mayCampaign();
      for (let tries = 0; tries < takeTries; tries++) {
        const answer = await this.tryToTake(slot, holder, expiresAfter, options);
        if (answer !== undefined) return answer;
      }
      // Others take and release it as fast as it reads: contention, tried again a few ms later.
      throw new LockTaken(`The slot was freed again between each of ${takeTries} takes and the read after it`);
    });
  }

  /**
   * One try of `acquire`: its answer, or `undefined` when it must try again: the slot was
   * freed between the take that found it held and the read after it.
   */
  private async tryToTake(
    slot: number,
    holder: string,
    expiresAfter: number,
    { waitForLock = true, outwaited, advertised }: AcquireOptions,
  ): Promise<AcquireResult | undefined> {
    // Otherwise reading first keeps followers off the row's lock while a live lease stands.
    if (waitForLock) {
      const [seen] = await this.query<Row>(this.statements.read, [slot]);
      if (seen !== undefined && seen.holder !== holder && keepsOff(seen, outwaited)) return answerOf(false, seen);
    }
    const parameters = [
      slot,
      holder,
      expiresAfter,
      this.payloads.elected,
      outwaited?.holder ?? null,
      outwaited?.term ?? null,
      outwaited?.expiresAt ?? null,
      advertised ?? null,
    ];
    const [taken] = waitForLock ? await this.query<Row>(this.statements.take, parameters) : await this.takeInCrowd(parameters);
    if (taken !== undefined) {
      void this.standbyPlaces.leaveStandby(slot, holder).catch(nothing); // a leader is nobody's standby
      return answerOf(true, taken);
    }
    const [seen] = await this.query<Row>(this.statements.read, [slot]);
    // Taken by another in between (not ours), or released again since (try again).
    return seen === undefined ? undefined : answerOf(false, seen);
  }

  /** The crowd's compare-and-set (see the statement); `LockTaken` for those who did not get the gate. */
  private async takeInCrowd(parameters: unknown[]): Promise<Row[]> {
    const [result] = await this.query<Row & { open: boolean }>(this.statements.takeInCrowd, parameters);
    if (!result.open) throw new LockTaken('Another candidate of the crowd is taking the slot');
    return result.holder === null ? [] : [result];
  }

  renew({ slot, holder, term }: Lease, _now: ClockReading, expiresAfter: number, { advertised }: RenewOptions = {}): Promise<boolean> {
    return this.operation(async () => {
      const rows = await this.query(this.statements.renew, [slot, holder, term, expiresAfter, this.payloads.renewed, advertised ?? null]);
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

  /** Whether anybody listens to this store (changes or handoffs): the session must, then. */
  private get listening(): boolean {
    return this.changes.wanted || this.handoffs.wanted;
  }

  /**
   * The slot's current row, expired or not, with the time it had left by the server's
   * clock, or `undefined` when there is none. Never writes, so it creates nothing: before
   * any candidate made the table, nobody leads. (The server's clock judges: it takes no
   * reading of this host's clocks.)
   */
  look(slot: number): Promise<LeaseView | undefined> {
    if (this.changes.wanted) this.session.start();
    return (async () => {
      try {
        const [row] = await this.query<Row>(this.statements.read, [slot]);
        return row && toView(row);
      } catch (error) {
        const code = (error as { code?: string }).code ?? '';
        if (nothingYet.has(code)) return undefined;
        // A column missing: the error says which, and the statement that adds it.
        if (code === '42703') await describeTable((text, values) => this.query(text, values), this.names);
        throw toLeadershipError(error);
      }
    })();
  }

  /** Whether the lease table exists (a candidate ran here once). Never writes, and creates nothing. */
  async hasTable(): Promise<boolean> {
    try {
      const [{ found }] = await this.query<{ found: boolean }>(this.statements.hasTable, []);
      return found;
    } catch (error) {
      throw toLeadershipError(error);
    }
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
  async fenced<T>(lease: Lease, work: (client: PoolClient) => Eventually<T>): Promise<T> {
    // Errors of the user's work pass through untouched; only the library's own are translated.
    let inWork = false;
    try {
      await this.ready();
      return await inTransaction(this.pool, async (client) => {
        // Before the row is locked: a process cut off from the server between the lock and the
        // next statement would otherwise leave a session idle in its transaction, holding the
        // row (and the slot) until the server notices the dead connection, hours later.
        await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${this.queryTimeout}`);
        const [row] = (await client.query<Row>(this.session.config(this.statements.lockForFencing, [lease.slot]))).rows;
        // Holder and term under the row's lock prove that nobody took the slot since the tenure
        // began, and nobody can until this transaction ends. The server's clock is not asked
        // whether the lease still stands: it may have stepped, and a leader's writes must not
        // fail because it did. A row without its length (written by hand) is judged by it.
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
        await this.listened();
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

  /**
   * A session that is wanted is waited for (it is opened in a few ms, or found impossible):
   * a statement sent meanwhile would take a second connection of the pool, which then stays
   * idle in it for pg's idleTimeoutMillis.
   */
  private async listened(): Promise<void> {
    if (this.listening) await this.session.get();
  }

  private ready(): Promise<void> {
    this.schemaReady ??= installPostgresSchema(this.pool, this.names).catch((error: unknown) => {
      this.schemaReady = undefined; // tried again at the next operation
      throw error;
    });
    return this.schemaReady;
  }

  private query<R extends QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return this.session.query<R>(text, values);
  }

  /** Checks once that this role may campaign; asked again after a failure, since a grant may come. */
  private mayCampaign(): Promise<void> {
    this.campaignAllowed ??= checkMayCampaign((text, values) => this.query(text, values), this.statements.privileges, this.qualified).catch(
      (error: unknown) => {
        this.campaignAllowed = undefined;
        throw error;
      },
    );
    return this.campaignAllowed;
  }

  private onNotification(payload: string): void {
    const { payloads } = this;
    if (payload === payloads.released) this.changes.heard();
    else if (payload === payloads.elected) this.changes.heard('election');
    else if (payload === payloads.renewed) this.changes.heard('renewal');
    else if (payload.startsWith(payloads.handoff)) this.handoffs.hear(payload.slice(payloads.handoff.length));
    else if (payload.startsWith(payloads.priority)) this.priorities.hear(payload.slice(payloads.priority.length));
  }
}

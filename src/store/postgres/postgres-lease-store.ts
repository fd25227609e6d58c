import type { Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { argumentError, expectConfig, expectInteger, expectObject, expectString, MAX_DELAY } from '../../argument-check';
import { Lease } from '../../leadership-event';
import { checkLease } from '../lease-check';
import { AcquireOptions, AcquireResult, ChangeOrigin, LeaseReader, LeaseRecord, LeaseStore, LeaseView } from '../lease-store';
import { ChangeListeners } from '../change-listeners';
import { toLeadershipError } from './postgres-error';
import { installPostgresSchema, PostgresLeaseTable, qualifiedNames } from './postgres-schema';
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

/** The server's clock, in Unix ms: the one clock every candidate of every machine agrees on. */
const serverNow = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/** The channel on which releases are announced; the payload says which table. */
const releaseChannel = 'observe_leadership';

interface Row extends QueryResultRow {
  holder: string;
  term: string;
  expires_at: string;
  now: string;
}

function statementsFor(names: PostgresLeaseTable) {
  const { table, termSequence } = qualifiedNames(names);
  return {
    read: `SELECT holder, term, expires_at, ${serverNow} AS now FROM ${table} WHERE slot = $1`,
    // $3 is the lease's length: the server's clock sets its end. Taking a free, expired or
    // own row draws a new term from the sequence, evaluated under the row's lock, after
    // every tenure granted before.
    take: `INSERT INTO ${table} AS lease (slot, holder, expires_at, term)
      SELECT $1, $2, clock.now + $3, nextval('${termSequence}') FROM (SELECT ${serverNow} AS now) AS clock
      ON CONFLICT (slot) DO UPDATE
        SET holder = excluded.holder, expires_at = excluded.expires_at, term = nextval('${termSequence}')
        WHERE lease.expires_at < excluded.expires_at - $3 OR lease.holder = excluded.holder
      RETURNING holder, term, expires_at, expires_at - $3 AS now`,
    renew: `UPDATE ${table} SET expires_at = ${serverNow} + $4 WHERE slot = $1 AND holder = $2 AND term = $3`,
    // Deletes the row, as the original worker does, and wakes the followers that listen.
    release: `WITH released AS (DELETE FROM ${table} WHERE slot = $1 AND holder = $2 AND term = $3 RETURNING slot)
      SELECT pg_notify('${releaseChannel}', $4) FROM released`,
    // The lock comes first, the clock after it: the outer select runs once the row is locked.
    lockForFencing: `SELECT lease.holder, lease.term, lease.expires_at, ${serverNow} AS now
      FROM (SELECT holder, term, expires_at FROM ${table} WHERE slot = $1 FOR UPDATE) AS lease`,
  };
}

function toRecord(row: Row): LeaseRecord {
  return { holder: row.holder, term: Number(row.term), expiresAt: Number(row.expires_at) };
}

/** The row with the time it had left by the server's clock, read in the same statement. */
function toView(row: Row): LeaseView {
  return { lease: toRecord(row), expiresIn: Number(row.expires_at) - Number(row.now) };
}

/** undefined_table, invalid_schema_name: nothing was created yet, so nobody leads. */
const nothingYet = new Set(['42P01', '3F000']);

const stores = new WeakMap<Pool, Map<string, PostgresLeaseStore>>();

/**
 * The lease store of a PostgreSQL database, for {@link observeLeadership} and `fenced`:
 * every candidate of every machine that shares the table takes part in one election.
 *
 * Everything stored is timed by the server's clock, so machines whose clocks disagree still
 * agree on who leads; a candidate's own belief is timed by its local monotonic clock, from
 * when it sent each write. Each operation is one statement on whichever connection the pool
 * lends: nothing depends on one connection staying open. Followers listen for releases on
 * one pooled connection of their own (`LISTEN`), so a graceful handoff takes milliseconds;
 * if that connection goes, they poll until it is back.
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
export class PostgresLeaseStore implements LeaseStore, LeaseReader {
  readonly clock = 'server';
  private readonly statements: ReturnType<typeof statementsFor>;
  /** Who is announced on the release channel: this table, and no other that shares the server. */
  private readonly channelPayload: string;
  private schemaReady: Promise<void> | undefined;
  private readonly listeners = new ChangeListeners(() => this.startListening(), () => this.stopListening());
  /** The connection that listens for releases, once it does. */
  private listening: PoolClient | undefined;
  private connectingListener = false;
  /** Every operation not yet settled, so that `settled()` can wait for them. */
  private readonly pending = new Set<Promise<unknown>>();
  /** Releases that failed since `settled()` last reported. */
  private failedReleases: unknown[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly names: PostgresLeaseTable,
    private readonly queryTimeout: number,
  ) {
    this.statements = statementsFor(names);
    this.channelPayload = qualifiedNames(names).table;
    // An idle connection closed by the server or the network is reported here, and would
    // end the process if nobody listened. The next operation simply takes another one.
    pool.on('error', () => undefined);
  }

  /**
   * `waitForLock: false` marks an attempt made when a release was just announced: the slot is
   * most likely free, so it goes straight to the compare-and-set, one round trip sooner.
   */
  acquire(slot: number, holder: string, _now: number, expiresAfter: number, { waitForLock = true }: AcquireOptions = {}): Promise<AcquireResult> {
    return this.operation(async () => {
      const answer = (acquired: boolean, row: Row): AcquireResult => ({ acquired, ...toView(row) });
      // Otherwise reading first keeps followers off the row's lock while a live lease stands.
      if (waitForLock) {
        const [seen] = await this.query<Row>(this.statements.read, [slot]);
        if (seen !== undefined && seen.holder !== holder && Number(seen.expires_at) >= Number(seen.now)) {
          return answer(false, seen);
        }
      }
      const [taken] = await this.query<Row>(this.statements.take, [slot, holder, expiresAfter]);
      if (taken !== undefined) return answer(true, taken);
      const [now] = await this.query<Row>(this.statements.read, [slot]);
      // Taken by another in between, or released again since: either way not ours.
      return now === undefined ? this.acquire(slot, holder, _now, expiresAfter, { waitForLock }) : answer(false, now);
    });
  }

  renew({ slot, holder, term }: Lease, _now: number, expiresAfter: number): Promise<boolean> {
    return this.operation(async () => {
      const result = await this.pool.query(this.config(this.statements.renew, [slot, holder, term, expiresAfter]));
      return result.rowCount === 1;
    });
  }

  release({ slot, holder, term }: Lease): Promise<boolean> {
    const released = this.operation(async () => {
      const rows = await this.query(this.statements.release, [slot, holder, term, this.channelPayload]);
      return rows.length === 1;
    });
    // Kept for whoever awaits `settled()`: releases mostly run after the subscriber left.
    released.catch((error: unknown) => this.failedReleases.push(error));
    return released;
  }

  /**
   * Every follower stands by: a notification reaches every listening connection at once, and
   * PostgreSQL has no database-wide write lock for a crowd to queue on.
   */
  standBy(): boolean {
    return true;
  }

  leaveStandby(): void {}

  watch(listener: (origin: ChangeOrigin) => void): () => void {
    return this.listeners.add(listener);
  }

  isWatching(): boolean {
    return this.listening !== undefined;
  }

  /**
   * The slot's current row, expired or not, with the time it had left by the server's
   * clock, or `undefined` when there is none. Never writes, so it creates nothing: before
   * any candidate made the table, nobody leads.
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
        checkLease(lease, row && toRecord(row), (record) => record.expiresAt >= Number(row.now));
        const untilExpiry = Number(row.expires_at) - Number(row.now);
        await client.query(`SET LOCAL idle_in_transaction_session_timeout = ${Math.max(1, Math.min(untilExpiry, MAX_DELAY))}`);
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
    return (await this.pool.query<R>(this.config(text, values))).rows;
  }


  /** Listens for releases on a connection of its own; tried again at the next operation if it fails or goes. */
  private startListening(): void {
    if (this.listening !== undefined || this.connectingListener) return;
    this.connectingListener = true;
    const listen = async () => {
      const client = await this.pool.connect();
      let dropped = false;
      const drop = (error?: Error) => {
        if (dropped) return;
        dropped = true;
        client.removeAllListeners('notification');
        if (this.listening === client) this.listening = undefined;
        client.release(error ?? true); // a listening connection is never lent to anybody else
      };
      client.on('error', drop);
      client.on('notification', ({ channel, payload }) => {
        if (channel === releaseChannel && payload === this.channelPayload) this.listeners.notify('anywhere');
      });
      try {
        await client.query(`LISTEN ${releaseChannel}`);
      } catch (error) {
        drop(error as Error);
        return;
      }
      if (!this.listeners.any) return drop();
      this.listening = client;
    };
    listen()
      .catch(() => undefined) // followers poll until the next operation tries again
      .finally(() => (this.connectingListener = false));
  }

  private stopListening(): void {
    const client = this.listening;
    this.listening = undefined;
    if (client) {
      client.removeAllListeners('notification');
      client.release(true);
    }
  }
}

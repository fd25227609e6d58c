import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { ulid } from 'ulid';
import { channel } from './postgres-statements';

/** A connection the store holds while it is wanted: it listens, and carries every statement meanwhile. */
export interface Session {
  readonly client: PoolClient;
  /** Gives the connection back: destroyed after `error`, else after UNLISTEN, once the statements queued on it are done. */
  close(error?: Error): void;
}

/** What the session asks of the store it serves. */
export interface SessionOwner {
  /** Whether anything of the store needs the session now (a listener, a standby place). */
  wanted(): boolean;
  /** A notification on the channel (the session's own probe aside). */
  notified(payload: string): void;
  /** The session ended: what it held on the server (advisory locks) went with it. */
  ended(): void;
  /** Notifications reach the store from now on; those sent before it listened did not. */
  hearing(): void;
  /** Settles once the schema is made, if a candidate is making it (an observer makes nothing). */
  schemaMade(): Promise<unknown> | undefined;
}

const nothing = () => undefined;

/** The server backend that runs a statement, which a pooler per transaction may change from one statement to the next. */
const backendPid = 'pg_backend_pid() AS backend';
const backendOf = (result: QueryResult) => Number((result.rows[0] as { backend: unknown }).backend);

/**
 * How many probes in a row must reach a new session before the store relies on
 * notifications. Through this project's PgBouncer in transaction mode, 11 probes in 3,000
 * were heard by chance, 5 of them on the session's own backend (see `probe`).
 */
const probeRounds = 3;

/** Whether `error` is the server's answer to a statement (a SQLSTATE), after which the connection is as good as before. */
function isServerAnswer(error: unknown): boolean {
  const { code } = (error ?? {}) as { code?: unknown };
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('57P') && !code.startsWith('08');
}

/**
 * How the PostgreSQL store talks to its server: one statement at a time, on the session
 * when there is one, else on any connection of the pool, so that the store needs one
 * connection whatever the number of slots, candidates and observers.
 *
 * The session is the connection the store holds while anything of it listens: it listens
 * for elections and releases (`LISTEN`) and carries the statements meanwhile. Nothing
 * depends on it staying open: if it goes, statements take any connection of the pool and
 * followers poll until it is back. A new session checks, once a store, that notifications
 * sent from another connection reach it before the answer to its next statement (the
 * server delivers them then at the latest), on the backend that listens: behind a pooler
 * that lends server connections per transaction (PgBouncer's transaction mode) they do not,
 * and the store says so once (`process.emitWarning`, code `OBSERVE_LEADERSHIP_NO_NOTIFICATIONS`)
 * and lets its followers poll.
 */
export class StoreSession {
  /** The session, once there is one. */
  private current: Session | undefined;
  /** The session being opened, if it is. */
  private opening: Promise<Session | undefined> | undefined;
  /** The end of the store's last statement (see `statement`). */
  private turn: Promise<void> = Promise.resolve();
  /** Set once a notification from another connection reached a session: later ones need no probe. */
  private notificationsWork = false;
  /** Set when notifications were found not to reach a session (PgBouncer in transaction mode): followers poll. */
  private notificationsUnavailable = false;

  constructor(
    private readonly pool: Pool,
    private readonly queryTimeout: number,
    /** The table, quoted, as the warning names it. */
    private readonly table: string,
    private readonly owner: SessionOwner,
  ) {}

  /** A statement's text and values with the store's timeout. */
  config(text: string, values: unknown[]): QueryConfig & { query_timeout: number } {
    return { text, values, query_timeout: this.queryTimeout };
  }

  /** The session as it is now, if there is one. */
  get open(): Session | undefined {
    return this.current;
  }

  /** Whether `pool.end()` was called (pg's pool says so in `ending`). */
  private get poolEnding(): boolean {
    return (this.pool as { ending?: boolean }).ending === true;
  }

  /** Whether notifications are known to reach this process now: a session listens, and a probe made the round trip. */
  get hearing(): boolean {
    return this.current !== undefined && this.notificationsWork;
  }

  async query<R extends QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.statement<R>(text, values)).rows;
  }

  /** One statement, on the session when there is one, else on a connection of the pool; one at a time either way. */
  statement<R extends QueryResultRow>(text: string, values: unknown[]): Promise<QueryResult<R>> {
    return this.onTurn(async () => {
      // The pool was ended (`pool.end()` waits for every connection given out): the session
      // gives its own back, and the statement meets the ended pool (DATABASE_CLOSED).
      if (this.poolEnding) this.current?.close();
      const session = this.current;
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
  onTurn<T>(run: () => Promise<T>): Promise<T> {
    const result = this.turn.then(run);
    this.turn = result.then(nothing, nothing);
    return result;
  }

  /** Opens the session if it is not open, without waiting for it. */
  start(): void {
    void this.get();
  }

  /** Closes the session once nothing wants it. */
  stopIfUnwanted(): void {
    if (!this.owner.wanted()) this.current?.close();
  }

  /**
   * The session once it listens, opening it if needed, or `undefined` if it cannot be had
   * (notifications do not reach it, or the connection failed: tried again at the next call).
   */
  get(): Promise<Session | undefined> {
    if (this.current !== undefined) return Promise.resolve(this.current);
    if (this.notificationsUnavailable || this.poolEnding) return Promise.resolve(undefined);
    this.opening ??= this.openChecked()
      .catch(() => undefined)
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async openChecked(): Promise<Session | undefined> {
    await this.owner.schemaMade()?.catch(nothing);
    const heardProbes = new Set<string>();
    // Taken in the store's turn: no statement of the store holds another connection meanwhile.
    const opened = await this.onTurn(() => this.openSession((payload) => heardProbes.add(payload)));
    if (opened === undefined) return opened;
    const { session, listener } = opened;
    if (this.notificationsWork) return this.heard(session);
    let notifier: PoolClient | undefined;
    try {
      // Notifications come from another connection, closed after the probes so that the
      // store keeps to one; statements go on meanwhile on the session.
      notifier = await this.pool.connect();
      notifier.on('error', nothing); // its next query fails, if it has one
      for (let round = 0; round < probeRounds; round += 1) {
        const reached = await this.probe(session, listener, notifier, heardProbes);
        if (this.current !== session) return undefined;
        if (!reached) return this.withoutNotifications(session);
      }
    } catch (error) {
      session.close(); // unprobed, it would never be: the next one is
      throw error;
    } finally {
      notifier?.release(true);
    }
    this.notificationsWork = true;
    return this.heard(session);
  }

  /**
   * Whether a notification sent from another connection reached `session` before the answer
   * to its next statement, on the server backend that listens (`listener`). Behind a pooler that lends
   * server connections per transaction, the answer is no, but only most of the time: other
   * backends listen too (LISTENs left on pooled connections), and one of them may deliver a
   * notification to whichever client it serves at that instant. So the probe also fails when
   * the notifier was lent the session's backend, or the session was lent another one, which
   * neither a direct connection nor a pooler per session ever does.
   */
  private async probe(session: Session, listener: number, notifier: PoolClient, heardProbes: Set<string>): Promise<boolean> {
    const payload = `probe ${ulid()}`;
    const notifierBackend = backendOf(await notifier.query(this.config(`SELECT pg_notify($1, $2), ${backendPid}`, [channel, payload])));
    if (this.current !== session) return false;
    const sessionBackend = backendOf(await this.onTurn(() => session.client.query(this.config(`SELECT ${backendPid}`, []))));
    return heardProbes.has(payload) && sessionBackend === listener && notifierBackend !== listener;
  }

  /** Says once that notifications cannot reach the store, which polls from now on. */
  private withoutNotifications(session: Session): undefined {
    this.notificationsUnavailable = true;
    session.close();
    process.emitWarning(
      `observe-leadership: notifications do not reach this connection (a pooler in transaction mode, such as PgBouncer's?): ` +
        `followers and observers of ${this.table} poll instead`,
      { code: 'OBSERVE_LEADERSHIP_NO_NOTIFICATIONS' },
    );
    return undefined;
  }

  /** `session`, once its owner knows that changes are heard from now on (a look it made before may be out of date). */
  private heard(session: Session): Session {
    this.owner.hearing();
    return session;
  }

  /**
   * A connection that listens, which becomes the session while it is wanted, with the server
   * backend that ran its LISTEN; `undefined` if it no longer is wanted.
   */
  private async openSession(onOther: (payload: string) => void): Promise<{ session: Session; listener: number } | undefined> {
    const client = await this.pool.connect();
    let closed = false;
    const session: Session = {
      client,
      close: (error?: Error) => {
        if (closed) return;
        closed = true;
        if (this.current === session) {
          this.current = undefined;
          this.owner.ended(); // the server lets the session's advisory locks go with it
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
      if (payload.startsWith('probe ')) onOther(payload);
      else this.owner.notified(payload);
    });
    let listener: number;
    try {
      // One transaction for both, so that a pooler per transaction runs both on one backend.
      const [, answer] = (await client.query(this.config(`LISTEN ${channel}; SELECT ${backendPid}`, []))) as unknown as QueryResult[];
      listener = backendOf(answer);
    } catch (error) {
      session.close(error as Error);
      throw error;
    }
    if (!this.owner.wanted()) return void session.close();
    this.current = session;
    return { session, listener };
  }
}

/**
 * The PostgreSQL server of a simulated run. The store's real statements run on PGlite
 * (PostgreSQL compiled to WebAssembly, in this process: `PgEngine`, one a thread, reused run
 * after run), one at a time, when the timeline says. One PGlite session plays every
 * connection (`Backend`); what a session is on a real server, this adds:
 *
 * - the server's clock: `clock_timestamp()` and `statement_timestamp()` read the simulated
 *   true time (the server's wall clock), through functions of the schema `sim`, which comes
 *   before `pg_catalog` in the search path;
 * - session advisory locks (`pg_try_advisory_lock`, `pg_advisory_unlock`,
 *   `pg_advisory_unlock_all`, with their counts), in a table, by connection;
 * - who listens: a notification reaches every connection that listens on its channel, each
 *   by its own way there (late, twice, lost, as the world draws);
 * - transactions one at a time: while a connection's transaction is open, the others'
 *   statements wait until it ends, as if every transaction locked the table;
 * - a connection's end (its process killed, the server or the network cutting it, the
 *   idle-in-transaction timeout): its transaction rolled back, its locks and its LISTEN gone.
 *
 * What it cannot see: two statements running at once (a renewal queued on the row's lock
 * behind a take, a crowd at the gate: here one runs after the other, which a real server
 * may do too), and the server's own faults (a restart, a failover to a standby).
 */
import type { PGlite } from '@electric-sql/pglite';
import type { SimProcessClock, Timeline } from '../timeline';

/** The schema every run's tables live in: dropped and made again before each run. */
export const runSchema = 'sim_run';

/** One PGlite, for run after run on one thread. */
export class PgEngine {
  private constructor(readonly db: PGlite) {}

  static async start(): Promise<PgEngine> {
    // int8 and numeric as text, as pg gives them.
    // Loaded here, not with the module: a run on SQLite needs none of it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { PGlite: Engine } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');
    const db = await Engine.create({ parsers: { 20: (text: string) => text, 1700: (text: string) => text } });
    await db.exec(serverFunctions);
    return new PgEngine(db);
  }

  /** A clean database for the next run. */
  async reset(): Promise<void> {
    await this.db.exec(`ROLLBACK; DROP SCHEMA IF EXISTS ${runSchema} CASCADE; DELETE FROM sim.locks; SET search_path = sim, pg_catalog;
      CREATE SCHEMA ${runSchema}; CREATE TABLE ${runSchema}.sim_ledger (slot int, holder text, term bigint)`);
  }
}

/** This thread's engine, started at the first PostgreSQL run (it takes a few seconds). */
let threadEngine: Promise<PgEngine> | undefined;

export function engineOfThread(): Promise<PgEngine> {
  return (threadEngine ??= PgEngine.start());
}

/** Closes this thread's engine, if it started one: its timers would keep the thread alive. */
export async function closeEngineOfThread(): Promise<void> {
  const engine = threadEngine;
  threadEngine = undefined;
  await (await engine)?.db.close();
}

/** What the schema `sim` shadows of `pg_catalog`: the clock, the session advisory locks and the backend's id. */
const serverFunctions = `
  CREATE SCHEMA sim;
  CREATE TABLE sim.locks (key1 int, key2 int, backend int NOT NULL, count int NOT NULL, PRIMARY KEY (key1, key2));
  CREATE FUNCTION sim.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE
    AS $$ SELECT to_timestamp(current_setting('sim.now')::float8 / 1000) $$;
  CREATE FUNCTION sim.statement_timestamp() RETURNS timestamptz LANGUAGE sql STABLE
    AS $$ SELECT to_timestamp(current_setting('sim.arrival')::float8 / 1000) $$;
  CREATE FUNCTION sim.pg_try_advisory_lock(int, int) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      INSERT INTO sim.locks VALUES ($1, $2, current_setting('sim.backend')::int, 1)
        ON CONFLICT (key1, key2) DO UPDATE SET count = sim.locks.count + 1 WHERE sim.locks.backend = excluded.backend;
      RETURN EXISTS (SELECT FROM sim.locks WHERE key1 = $1 AND key2 = $2 AND backend = current_setting('sim.backend')::int);
    END $$;
  CREATE FUNCTION sim.pg_advisory_unlock(int, int) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    DECLARE mine boolean;
    BEGIN
      UPDATE sim.locks SET count = count - 1 WHERE key1 = $1 AND key2 = $2 AND backend = current_setting('sim.backend')::int
        RETURNING true INTO mine;
      DELETE FROM sim.locks WHERE count = 0;
      RETURN coalesce(mine, false);
    END $$;
  CREATE FUNCTION sim.pg_backend_pid() RETURNS int LANGUAGE sql STABLE
    AS $$ SELECT current_setting('sim.backend')::int $$;
  CREATE FUNCTION sim.pg_advisory_unlock_all() RETURNS void LANGUAGE sql VOLATILE
    AS $$ DELETE FROM sim.locks WHERE backend = current_setting('sim.backend')::int $$;
  LISTEN observe_leadership;
  SET search_path = sim, pg_catalog;
`;

export interface Result {
  rows: Record<string, unknown>[];
  command: string;
  rowCount: number;
}

/** A statement's answer: a text of several statements (pg's simple protocol) has one result each. */
export type Outcome = { result: Result | Result[] } | { error: Error };

/** One connection as the server sees it. */
export interface Backend {
  readonly id: number;
  /** The process of its client: what reaches the client waits while it is paused, and never reaches it dead. */
  readonly owner: SimProcessClock;
  /** Until the server ends it (after what its client sent before it closed it). */
  alive: boolean;
  /** Once its client closed it: it sends nothing more. */
  closed: boolean;
  readonly listening: Set<string>;
  /** Where its answers, notifications and its end go (the client, on its process's time). */
  readonly client: {
    answer(outcome: Outcome): void;
    notified(channel: string, payload: string): void;
    ended(error: Error): void;
  };
  /** When its last statement arrives, and when the last message to its client does: a connection's messages arrive in the order sent, each way. */
  arrivesAt: number;
  reachesAt: number;
}

interface Work {
  readonly backend: Backend;
  readonly text: string;
  readonly values: unknown[];
  /** The server's wall clock when it arrived (`statement_timestamp()`). */
  readonly arrivedAt: number;
}

/** The server's behaviour the world decides: how long a message takes each way, and a notification's fate. */
export interface ServerNoise {
  /** Ms from a client to the server, or back. */
  travel(backend: Backend): number;
  /** Whether the connection is cut as the statement runs: `before` it runs, `after` (its answer lost), or not. */
  cut(backend: Backend): 'before' | 'after' | undefined;
  /** How many copies of a notification reach `backend`, and how late. */
  fate(backend: Backend): { copies: number; delay: number };
  /** The server's wall clock, Unix ms, at true time `at`. */
  wall(at: number): number;
}

/** The server of one run, on its timeline. */
export class SimServer {
  private backends = 0;
  /** The connection whose transaction is open: the others wait. */
  private inTransaction: Backend | undefined;
  /** Whether that transaction had a statement fail: COMMIT then answers ROLLBACK. */
  private failed = false;
  /** Ms a transaction may sit idle (`SET LOCAL idle_in_transaction_session_timeout`), and its timer. */
  private idleTimeout = 0;
  private idleTimer: { cancelled: boolean } | undefined;
  private readonly waiting: Array<Work | { end: Backend }> = [];
  private busy = false;
  private readonly heard: Array<{ channel: string; payload: string }> = [];
  /** Every connection of the run, in the order they came. */
  private readonly known: Backend[] = [];

  constructor(
    private readonly engine: PgEngine,
    private readonly timeline: Timeline,
    private readonly noise: ServerNoise,
  ) {
    this.stopHearing = engine.db.onNotification((channel, payload) => this.heard.push({ channel, payload }));
  }

  /** The run is over: the engine's notifications are no longer this server's. */
  readonly stopHearing: () => void;

  /** Whether a statement is running on PGlite, or could: the world waits for it before the next event. */
  get working(): boolean {
    return this.busy;
  }

  connect(owner: SimProcessClock, client: Backend['client']): Backend {
    const backend: Backend = {
      id: ++this.backends,
      owner,
      alive: true,
      closed: false,
      listening: new Set(),
      client,
      arrivesAt: 0,
      reachesAt: 0,
    };
    this.known.push(backend);
    return backend;
  }

  /** A statement sent by `backend` now: it arrives after its travel, runs in its turn, and its answer travels back. */
  send(backend: Backend, text: string, values: unknown[]): void {
    const arrival = this.arrival(backend);
    this.timeline.at(arrival - this.timeline.now, () => {
      if (this.inTransaction === backend && this.idleTimer !== undefined) this.idleTimer.cancelled = true;
      this.waiting.push({ backend, text, values, arrivedAt: this.noise.wall(this.timeline.now) });
      this.pump();
    });
  }

  /** The client closed the connection (released it broken, or its process died): the server notices after what it sent. */
  close(backend: Backend): void {
    if (backend.closed) return;
    backend.closed = true;
    this.timeline.at(this.arrival(backend) - this.timeline.now, () => {
      if (!backend.alive) return;
      backend.alive = false;
      this.end(backend);
    });
  }

  /** The server ends the connection now (an administrator, the network): its client hears of it after the travel. */
  terminate(backend: Backend, error: Error): void {
    if (!backend.alive) return;
    backend.alive = false;
    this.end(backend);
    this.toClient(backend, 0, () => backend.client.ended(error));
  }

  /**
   * Sends `message` to `backend`'s client: after its travel (and `delay`), and after what was
   * sent to it before. A notification sent before an answer arrives before it, as on one socket.
   */
  private toClient(backend: Backend, delay: number, message: () => void): void {
    backend.reachesAt = Math.max(backend.reachesAt, this.timeline.now + this.noise.travel(backend) + delay);
    this.timeline.at(backend.reachesAt - this.timeline.now, message, backend.owner);
  }

  private arrival(backend: Backend): number {
    backend.arrivesAt = Math.max(backend.arrivesAt, this.timeline.now + this.noise.travel(backend));
    return backend.arrivesAt;
  }

  /** A connection gone: its waiting statements dropped, its transaction rolled back, its locks and LISTEN gone. */
  private end(backend: Backend): void {
    backend.listening.clear();
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const work = this.waiting[i];
      if ('text' in work && work.backend === backend) this.waiting.splice(i, 1);
    }
    this.waiting.unshift({ end: backend });
    this.pump();
  }

  /** Runs the next statement that may run, if none runs. */
  private pump(): void {
    if (this.busy) return;
    const index = this.waiting.findIndex(
      (work) => 'end' in work || this.inTransaction === undefined || work.backend === this.inTransaction,
    );
    if (index < 0) return;
    const [work] = this.waiting.splice(index, 1);
    this.busy = true;
    const done = 'end' in work ? this.ended(work.end) : this.execute(work);
    void done.then(() => {
      this.busy = false;
      this.pump();
    });
  }

  private async ended(backend: Backend): Promise<void> {
    await this.engine.db.query(`SELECT set_config('sim.backend', $1, false)`, [String(backend.id)]);
    if (this.inTransaction === backend) await this.finishTransaction('ROLLBACK');
    await this.engine.db.exec(`SELECT pg_advisory_unlock_all()`);
  }

  private async finishTransaction(how: 'COMMIT' | 'ROLLBACK'): Promise<string> {
    const failed = this.failed;
    this.inTransaction = undefined;
    this.failed = false;
    this.idleTimeout = 0;
    if (this.idleTimer !== undefined) this.idleTimer.cancelled = true;
    await this.engine.db.exec(how);
    return failed ? 'ROLLBACK' : how;
  }

  private async execute(work: Work): Promise<void> {
    const { backend } = work;
    if (!backend.alive) return;
    const cut = this.noise.cut(backend);
    if (cut === 'before') return this.terminate(backend, new Error('Connection terminated unexpectedly'));
    const outcome = await this.run(work);
    this.deliverHeard();
    if (cut === 'after') return this.terminate(backend, new Error('Connection terminated unexpectedly'));
    if (this.inTransaction === backend && this.idleTimeout > 0) this.armIdleTimer(backend);
    this.toClient(backend, 0, () => backend.client.answer(outcome));
  }

  /** The statement, with what PGlite's one session cannot do for several connections done here. */
  private async run({ backend, text, values, arrivedAt }: Work): Promise<Outcome> {
    const listen = /^\s*(UN)?LISTEN\s+(\S+?)\s*(?:;\s*(.*))?$/is.exec(text);
    if (listen !== null) {
      const [, un, channel, rest] = listen;
      if (un === undefined) backend.listening.add(channel);
      else if (channel === '*') backend.listening.clear();
      else backend.listening.delete(channel);
      const listened: Result = { rows: [], command: un ? 'UNLISTEN' : 'LISTEN', rowCount: 0 };
      if (rest === undefined || rest.trim() === '') return { result: listened };
      const after = await this.run({ backend, text: rest, values, arrivedAt });
      return 'error' in after ? after : { result: [listened, ...[after.result].flat()] };
    }
    const idle = /^\s*SET LOCAL idle_in_transaction_session_timeout = (\d+)\s*$/i.exec(text);
    if (idle !== null) {
      if (this.inTransaction === backend) this.idleTimeout = Number(idle[1]);
      return { result: { rows: [], command: 'SET', rowCount: 0 } };
    }
    const { db } = this.engine;
    try {
      await db.query(
        `SELECT set_config('sim.now', $1, false), set_config('sim.arrival', $2, false), set_config('sim.backend', $3, false)`,
        [String(this.noise.wall(this.timeline.now)), String(arrivedAt), String(backend.id)],
      );
      const word = /^\s*(BEGIN|COMMIT|ROLLBACK)\s*$/i.exec(text)?.[1].toUpperCase();
      if (word === 'BEGIN') {
        await db.exec('BEGIN');
        this.inTransaction = backend;
        return { result: { rows: [], command: 'BEGIN', rowCount: 0 } };
      }
      if (word === 'COMMIT' || word === 'ROLLBACK') {
        if (this.inTransaction !== backend) return { result: { rows: [], command: word, rowCount: 0 } };
        return { result: { rows: [], command: await this.finishTransaction(word), rowCount: 0 } };
      }
      const result = values.length > 0 ? await db.query(text, values) : (await db.exec(text)).at(-1);
      const rows = (result?.rows ?? []) as Record<string, unknown>[];
      return { result: { rows, command: (result as { command?: string } | undefined)?.command ?? 'SELECT', rowCount: rows.length } };
    } catch (error) {
      if (this.inTransaction === backend) this.failed = true;
      return { error: error as Error };
    }
  }

  /** What was notified meanwhile (at a commit, or by a statement outside a transaction), to every connection that listens. */
  private deliverHeard(): void {
    for (const { channel, payload } of this.heard.splice(0)) {
      // The server's own LISTEN hears every notification; only the connections that listen get it.
      for (const backend of this.known) {
        if (!backend.alive || !backend.listening.has(channel)) continue;
        const { copies, delay } = this.noise.fate(backend);
        for (let copy = 0; copy < copies; copy++) {
          this.toClient(backend, delay, () => backend.client.notified(channel, payload));
        }
      }
    }
  }

  private armIdleTimer(backend: Backend): void {
    const timer = { cancelled: false };
    this.idleTimer = timer;
    this.timeline.at(this.idleTimeout, () => {
      if (timer.cancelled || this.inTransaction !== backend) return;
      const error = Object.assign(new Error('terminating connection due to idle-in-transaction timeout'), { code: '25P03' });
      this.terminate(backend, error);
    });
  }
}

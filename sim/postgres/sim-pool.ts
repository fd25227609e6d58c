/**
 * A simulated process's `pg` pool: what the PostgreSQL store uses of pg's `Pool` and
 * `PoolClient`, as pg does it, on the simulated server (sim-server.ts) and on the process's
 * own time. A client sends one query at a time, in the order asked (pg queues the others);
 * `query_timeout` rejects a query whose answer has not come in that many ms of the
 * process's time, its answer dropped if it comes later; a connection the server ends fails
 * the query on it, or else is reported as an `error` event, as pg reports it. Released, a
 * client goes back to the pool for the next `connect`; released with an error (or `true`),
 * it is closed. The pool keeps idle clients for ever (pg closes them after 10 s idle): the
 * store needs none.
 */
import { EventEmitter } from 'node:events';
import type { SimProcessClock, Timeline } from '../timeline';
import type { Backend, Outcome, Result, SimServer } from './sim-server';

type QueryArguments = [config: string | { text: string; values?: unknown[]; query_timeout?: number }, values?: unknown[]];

interface Query {
  readonly text: string;
  readonly values: unknown[];
  settle(outcome: Outcome): void;
  /** Set when `query_timeout` rejected it: its answer, when it comes, is dropped. */
  abandoned: boolean;
}

export class SimClient extends EventEmitter {
  private readonly backend: Backend;
  private readonly queue: Query[] = [];
  /** The query sent, waiting for its answer. */
  private active: Query | undefined;
  private ended: Error | undefined;

  constructor(
    private readonly server: SimServer,
    private readonly timeline: Timeline,
    private readonly owner: SimProcessClock,
    private readonly pool: SimPool,
  ) {
    super();
    this.backend = server.connect(owner, {
      answer: (outcome) => this.answered(outcome),
      notified: (channel, payload) => this.emit('notification', { channel, payload, processId: 0 }),
      ended: (error) => this.endedBy(error),
    });
  }

  query(...[config, given]: QueryArguments): Promise<Result | Result[]> {
    const { text, values = given ?? [], query_timeout: timeout } = typeof config === 'string' ? { text: config } : config;
    return new Promise<Result | Result[]>((resolve, reject) => {
      const query: Query = {
        text,
        values,
        abandoned: false,
        settle: (outcome) => ('error' in outcome ? reject(outcome.error) : resolve(outcome.result)),
      };
      if (this.ended !== undefined) return reject(new Error('Client has encountered a connection error and is not queryable'));
      if (timeout !== undefined) {
        this.timeline.at(
          timeout,
          () => {
            if (query.abandoned || !this.pending(query)) return;
            query.abandoned = true;
            query.settle({ error: new Error('Query read timeout') });
          },
          this.owner,
        );
      }
      this.queue.push(query);
      this.sendNext();
    });
  }

  /** pg's `release(error)`: back to the pool, or closed if given an error (or `true`). */
  release(error?: Error | boolean): void {
    if (error !== undefined && error !== false) this.close();
    else this.pool.idle.push(this);
  }

  /** Closed by its process (released broken, or the process died): the server notices after what was sent. */
  close(): void {
    this.server.close(this.backend);
    this.ended ??= new Error('Connection terminated');
  }

  /** Ended by the server (an administrator): the client hears of it after the travel. */
  cut(error: Error): void {
    this.server.terminate(this.backend, error);
  }

  get usable(): boolean {
    return this.ended === undefined;
  }

  private pending(query: Query): boolean {
    return this.active === query || this.queue.includes(query);
  }

  private sendNext(): void {
    if (this.active !== undefined || this.ended !== undefined) return;
    const next = this.queue.shift();
    if (next === undefined) return;
    this.active = next;
    this.server.send(this.backend, next.text, next.values);
  }

  private answered(outcome: Outcome): void {
    const query = this.active;
    this.active = undefined;
    if (query !== undefined && !query.abandoned) query.settle(outcome);
    this.sendNext();
  }

  /** The server ended the connection: the query on it fails with its error, the others as pg fails them; else an `error` event. */
  private endedBy(error: Error): void {
    if (this.ended !== undefined && this.active === undefined && this.queue.length === 0) return;
    this.ended = error;
    const failed = [this.active, ...this.queue.splice(0)].filter((query): query is Query => query !== undefined && !query.abandoned);
    this.active = undefined;
    if (failed.length === 0) {
      // pg-pool listens on the clients it keeps idle, and passes their errors on to the pool.
      if (this.pool.idle.includes(this)) this.pool.emit('error', error, this);
      else this.emit('error', error);
      return;
    }
    const [first, ...rest] = failed;
    first.settle({ error });
    for (const query of rest) query.settle({ error: new Error('Connection terminated') });
  }
}

export class SimPool extends EventEmitter {
  ending = false;
  readonly idle: SimClient[] = [];
  /** Every client it opened, for the process's death. */
  private readonly clients: SimClient[] = [];

  constructor(
    private readonly server: SimServer,
    private readonly timeline: Timeline,
    private readonly owner: SimProcessClock,
    /** Ms a new connection takes to open. */
    private readonly opening: () => number,
  ) {
    super();
  }

  connect(): Promise<SimClient> {
    for (let client = this.idle.pop(); client !== undefined; client = this.idle.pop()) {
      if (client.usable) return Promise.resolve(client);
    }
    if (this.ending) return Promise.reject(new Error('Cannot use a pool after calling end on the pool'));
    return new Promise((resolve) =>
      this.timeline.at(
        this.opening(),
        () => {
          const client = new SimClient(this.server, this.timeline, this.owner, this);
          this.clients.push(client);
          resolve(client);
        },
        this.owner,
      ),
    );
  }

  async query(...args: QueryArguments): Promise<Result | Result[]> {
    const client = await this.connect();
    try {
      const result = await client.query(...args);
      client.release();
      return result;
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
  }

  /** Its process died, or the run ended: every connection closed. */
  closeAll(): void {
    this.ending = true;
    for (const client of this.clients) client.close();
  }

  /** Every connection cut by the server (the `close` fault). */
  clientsOpen(): SimClient[] {
    return this.clients.filter((client) => client.usable);
  }
}

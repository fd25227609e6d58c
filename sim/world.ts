/**
 * One simulated run of a scenario (scenario.ts): candidates in simulated processes, each a
 * real `observeLeadership` subscription on the real SQLite store and its real statements, on
 * one database file, all on one timeline (timeline.ts); every event recorded on true time for
 * the checker (check.ts).
 */
import { AsyncHook, createHook } from 'node:async_hooks';
import Database from 'better-sqlite3';
import { interval, Subject, Subscription, tap } from 'rxjs';
import { Eventually, isPromiseLike, valueNow } from '../src/core/eventually';
import { errorText } from '../src/core/error-text';
import { Lease, LeadershipEvent } from '../src/core/leadership-event';
import { whileLeader } from '../src/surface/operators/while-leader';
import { observeLeadership } from '../src/surface/observe-leadership';
import { LeadershipError } from '../src/core/leadership-error';
import { AcquireResult, LeaseStore, LockTaken } from '../src/store/lease-store';
import type { SqliteLeaseStore } from '../src/store/sqlite/sqlite-lease-store';
import type { PostgresLeaseStore } from '../src/store/postgres/postgres-lease-store';
import { mulberry32 } from '../test-kit/seeded-random';
import type { PlannedFault, Scenario } from './scenario';
import { ms } from './check';
import { Choice, Chooser } from './chooser';
import { SimAnswer } from './sim-answer';
import { SimChannels } from './sim-channels';
import { SimHost, SimProcessClock, SimScheduler, Timeline, wallEpoch } from './timeline';
import type { SimConnection } from './sim-connection';
import { SqliteConnection } from './sqlite-connection';
import { PostgresConnection } from './postgres/postgres-connection';
import { PgEngine, ServerNoise, SimServer } from './postgres/sim-server';

/** What the checker reads: events, faults and (traced) operations on true time, ms from the run's start. */
export interface SimRecord {
  at: number;
  process: string;
  /** The process's holder (a restarted process may keep its predecessor's). */
  holder: string;
  /**
   * `unhandled`: something a real process would not survive or that escapes the simulated
   * time (see `run`); `write`: a leader's job wrote through `fenced`; `take`: a candidate
   * took the slot from a tenure whose holder still believed in it, alive (paused, say), so
   * that nothing could have proven its end: its lock-delay applies.
   */
  kind: 'event' | 'fault' | 'error' | 'operation' | 'unhandled' | 'write' | 'take';
  slot?: number;
  type: string;
  term?: number;
  /** For `elected` and `renewed`: the end of the belief, on true time. */
  deadline?: number;
  detail?: string;
  /** How far the process's wall clock is from true time (its steps), where it is not 0. */
  wall?: number;
  /** For noise that lasts (a slow answer, a late message): until when, on true time. */
  until?: number;
  /** For a `take`: the lock-delay of the subscription that took it, and the process whose tenure it took. */
  lockDelay?: number;
  believer?: string;
  /** For a `fenced` write: the slot's tenure as the database had it when the write committed, and the ms its lease had left. */
  tenure?: { holder: string; term: number; left: number };
}

export interface SimHistory {
  scenario: Scenario;
  records: SimRecord[];
  /** When the quiet time began (the last fault is before it) and when the run ended. */
  quietFrom: number;
  endedAt: number;
  faults: number;
  /** For each of the scenario's faults, the birth of the process it was aimed at, if it came to one. */
  aimed: Array<number | undefined>;
  /** For a run of an exhaustive search: every choice it made, and of how many. */
  choices?: Choice[];
}

class SimProcess implements SimProcessClock {
  alive = true;
  paused = false;
  held = [];
  wallOffset = 0;
  readonly subscriptions: Subscription[] = [];
  /** The lock-delay of its subscription for each slot (0: none). */
  readonly lockDelays = new Map<number, number>();
  readonly stepDown = new Subject<void>();
  /**
   * Its own stream of noise, from the scenario's seed and its birth: a fault added or
   * removed (as the shrinker does) changes the draws of the processes it touches, not all.
   */
  readonly random: () => number;
  readonly scheduler: SimScheduler;
  /** Its database: the store as its campaigns see it, and its leader's fenced writes. */
  readonly connection: SimConnection;

  constructor(
    readonly name: string,
    readonly holder: string,
    readonly birth: number,
    world: World,
  ) {
    this.random = mulberry32((Math.imul(world.scenario.seed, 0x9e3779b1) + birth) >>> 0);
    const { lateness: late, early } = world.scenario.noise;
    this.scheduler = new SimScheduler(
      world.timeline,
      world.host,
      this,
      () => (late && this.random() >= 0.8 ? this.random() * 3 : 0) - (early && this.random() < 0.1 ? this.random() * 2 : 0),
    );
    this.connection = world.connect(this);
  }

  get store(): LeaseStore {
    return this.connection.store;
  }
}

export class World {
  readonly timeline = new Timeline((error, owner) => this.unhandled(owner as SimProcess | undefined, `uncaught ${errorText(error)}`));
  readonly host: SimHost = { name: 'sim host', offset: 5_000_000 };
  readonly random: () => number;
  readonly channels: SimChannels;
  readonly records: SimRecord[] = [];
  private readonly processes: SimProcess[] = [];
  /** `process slot` of each candidate that believes it leads, as its events said. */
  private readonly leading = new Map<string, Lease>();
  private born = 0;
  private faults = 0;
  /** The birth of the process each fault was aimed at (see `PlannedFault.target`). */
  private readonly aimed = new Map<PlannedFault, number>();
  /** For a run of an exhaustive search: the choices, instead of the noise. */
  private readonly chooser: Chooser | undefined;

  /** On PostgreSQL, the run's server, and how far its wall clock stepped from true time. */
  private readonly server: SimServer | undefined;
  private serverWallOffset = 0;
  /** SQLite connections that dead processes left, for the next to open (see `connect`). */
  private readonly idle: Database.Database[] = [];

  constructor(
    readonly scenario: Scenario,
    /** The run's database: a SQLite file (created; removed by the caller), or a PGlite to run PostgreSQL on (reset first). */
    readonly database: { file: string } | { engine: PgEngine },
    /** Whether every operation is recorded too, with its answer (for a timeline to read). */
    private readonly trace = false,
  ) {
    // The noise and the candidates' options, drawn as the run goes: a scenario replays exactly.
    this.random = mulberry32(scenario.seed);
    const { exhaustive } = scenario;
    if (exhaustive !== undefined) {
      const chooser = new Chooser(exhaustive.choices, exhaustive.delays, exhaustive.horizon, () => this.timeline.now);
      this.timeline.choose = (count) => chooser.choose(count);
      this.chooser = chooser;
    }
    const { lateness, channels } = scenario.noise;
    this.channels = new SimChannels(this.timeline, (receiver, what) => {
      const fate = channels ? this.fateOf(receiver as SimProcess, what) : { copies: 1, late: 0 };
      const delay = fate.late + (lateness ? this.random() * 2 : 0);
      if (fate.late > 0) {
        const until = this.timeline.now + delay;
        this.record(receiver as SimProcess, { kind: 'fault', type: 'late', detail: `${what}, ${ms(delay)}`, until });
      }
      return { copies: fate.copies, delay };
    });
    if ('engine' in database) {
      this.server = new SimServer(database.engine, this.timeline, this.serverNoise());
      return;
    }
    const setup = new Database(database.file);
    if (scenario.journal !== 'delete') setup.pragma('journal_mode = WAL');
    setup.exec('CREATE TABLE sim_ledger (slot INTEGER, holder TEXT, term INTEGER, at REAL)');
    setup.close();
  }

  /** A new process's database: a connection to the run's file, or a pool on its server. */
  connect(process: SimProcess): SimConnection {
    const { server, database } = this;
    if (server === undefined) {
      return new SqliteConnection({
        open: () => this.idle.pop() ?? new Database((database as { file: string }).file, { timeout: 0 }),
        leave: (db) => this.idle.push(db),
        now: () => this.timeline.now,
        clocks: () => process.scheduler.readClocks(),
        channels: this.channels.of(process),
        seen: (store, killed) => this.withLatency(store, process, killed),
      });
    }
    return new PostgresConnection(
      server,
      this.timeline,
      process,
      () => this.travel(process),
      (store) => this.seenOnPostgres(store, process),
    );
  }

  /** How the server of a PostgreSQL run behaves: on true time, with the noise of the process it talks to. */
  private serverNoise(): ServerNoise {
    const { failures, channels, lateness } = this.scenario.noise;
    return {
      travel: (backend) => this.travel(backend.owner as SimProcess),
      cut: (backend) => {
        const process = backend.owner as SimProcess;
        if (!failures || process.random() >= 0.01) return undefined;
        const when = process.random() < 0.5 ? 'before' : 'after';
        this.faults++;
        this.record(process, { kind: 'fault', type: `cut-${when}` });
        return when;
      },
      // Late now and then, and the connection's later messages with it; never lost, never
      // twice: a live connection does neither (one that ends loses what was on its way).
      fate: (backend) => {
        const process = backend.owner as SimProcess;
        const late = channels && process.random() < 0.05 ? process.random() * this.scenario.timing.expiresAfter : 0;
        if (late > 0)
          this.record(process, { kind: 'fault', type: 'late', detail: `notification, ${ms(late)}`, until: this.timeline.now + late });
        return { copies: 1, delay: late + (lateness ? process.random() * 2 : 0) };
      },
      wall: (at) => wallEpoch + at + this.serverWallOffset,
    };
  }

  /** Ms a message takes between `process` and the server: up to 3, one in 200 up to a lease (with `latency`). */
  private travel(process: SimProcess): number {
    if (!this.scenario.noise.latency) return 0.25;
    const { random } = process;
    if (random() < 0.995) return random() * 3;
    const late = random() * this.scenario.timing.expiresAfter;
    this.record(process, { kind: 'fault', type: 'slow', detail: ms(late), until: this.timeline.now + late });
    return late;
  }

  /**
   * The PostgreSQL store as the campaigns see it: as it is, its operations traced if asked,
   * its takes noted. Traced or not, each answer takes the same steps: a step more would
   * reorder what the promises of one event do, and the draws of the noise with it, so that
   * a run told with its operations would not be the run found.
   */
  private seenOnPostgres(store: PostgresLeaseStore, owner: SimProcess): LeaseStore {
    const traced =
      <A extends unknown[], T>(name: string, operation: (...args: A) => Promise<T>) =>
      (...args: A) =>
        operation(...args).then(
          (answer) => {
            if (this.trace) this.record(owner, { kind: 'operation', type: name, detail: describe(answer) });
            return answer;
          },
          (error: { code?: string }) => {
            if (this.trace) this.record(owner, { kind: 'operation', type: name, detail: `fails ${error.code ?? String(error)}` });
            throw error;
          },
        );
    return {
      clock: store.clock,
      capabilities: store.capabilities,
      look: traced('look', (slot: number) => store.look(slot)),
      acquire: traced('acquire', (...args: Parameters<LeaseStore['acquire']>) =>
        store.acquire(...args).then((result) => this.noteTake(owner, args[0], result)),
      ),
      renew: traced('renew', (...args: Parameters<LeaseStore['renew']>) => store.renew(...args)),
      release: traced('release', (lease: Lease) => store.release(lease)),
    };
  }

  /** Runs the whole run: the candidates, the faults until `duration`, then the quiet time. */
  run(): SimHistory {
    const leave = this.enter(realAsync);
    try {
      this.begin();
      this.timeline.runUntil(this.scenario.duration);
      const quietFrom = this.timeline.now;
      this.timeline.runUntil(this.quietEnd());
      return this.finish(quietFrom);
    } finally {
      leave();
    }
  }

  /**
   * The same on PostgreSQL, whose store goes on in promises: after each event, what it
   * started runs to its end (the statements it sent wait for their time on the timeline),
   * before the next event. The store reads `performance.now()` (the priorities it heard
   * keep so long): the simulated host's monotonic clock here.
   */
  async runOnPostgres(): Promise<SimHistory> {
    const { engine } = this.database as { engine: PgEngine };
    await engine.reset();
    // The store's own promises are its way; a timer, an immediate or a tick would still escape the simulated time.
    const leave = this.enter(new Set(['Timeout', 'Immediate', 'TickObject']));
    const performanceNow = performance.now;
    performance.now = () => this.timeline.now + this.host.offset;
    const rejected = (error: unknown) =>
      this.unhandled(this.timeline.running as SimProcess | undefined, `a rejection nobody handled: ${errorText(error)}`);
    process.on('unhandledRejection', rejected);
    const settle = async () => {
      do await this.realTurn();
      while (this.server?.working);
    };
    try {
      this.begin();
      await settle();
      await this.timeline.runUntilSettled(this.scenario.duration, settle);
      const quietFrom = this.timeline.now;
      await this.timeline.runUntilSettled(this.quietEnd(), settle);
      return this.finish(quietFrom);
    } finally {
      process.off('unhandledRejection', rejected);
      performance.now = performanceNow;
      this.server?.stopHearing();
      leave();
    }
  }

  /** The hook that catches anything asynchronous a run starts for real (see `enter`). */
  private escapes: AsyncHook | undefined;

  /** One turn of the real event loop: every promise the last event settled runs its handlers meanwhile. */
  private realTurn(): Promise<void> {
    this.escapes?.disable();
    try {
      return new Promise((resolve) => setImmediate(resolve));
    } finally {
      this.escapes?.enable();
    }
  }

  /**
   * Makes the run's draws the seed's, and watches for anything asynchronous of `kinds` that
   * it starts for real; returns what undoes both.
   */
  private enter(kinds: ReadonlySet<string>): () => void {
    // The library's own draws (the jitter of its lock retries) come from the seed too: from
    // the stream of the process whose event runs.
    const random = Math.random;
    Math.random = () => ((this.timeline.running as SimProcess | undefined)?.random ?? this.random)();
    // Nothing of a run may start anything asynchronous for real: a promise, a timer, a tick.
    // It would run after the whole run, outside the simulated time, where its errors go
    // unseen; and an error RxJS cannot deliver (a subscriber without an error handler, one
    // that throws) is reported through a real timer, which this catches too.
    const escapes = createHook({
      init: (_id, type) => {
        if (!kinds.has(type)) return;
        const stack = new Error().stack?.split('\n') ?? [];
        // PGlite's own timer: PostgreSQL flushes its statistics 10 s after its backend went idle. It changes no answer.
        if (stack.some((line) => line.includes('__setitimer_js'))) return;
        const where = stack.find((line) => line.includes('/src/')) ?? stack.slice(2, 8).join(' <');
        this.unhandled(this.timeline.running as SimProcess | undefined, `a real ${type} started ${where.trim()}`);
      },
    }).enable();
    this.escapes = escapes;
    return () => {
      escapes.disable();
      this.escapes = undefined;
      Math.random = random;
    };
  }

  /**
   * How many times a side channel's message reaches `receiver` (now and then none, or two),
   * and how late. Drawn from the message itself (the seed, its receiver, what it is and when),
   * not from a stream: a fault the shrinker removes leaves the fate of every message that
   * still goes at the same time as it was.
   */
  private fateOf(receiver: SimProcess, what: string): { copies: number; late: number } {
    const draw = mulberry32(hashOf(this.scenario.seed, receiver.birth, what, Math.round(this.timeline.now * 1_000)));
    const fate = draw();
    if (fate >= 0.09) return { copies: 1, late: 0 };
    if (fate >= 0.04) return { copies: 1, late: draw() * this.scenario.timing.expiresAfter };
    this.faults++;
    this.record(receiver, { kind: 'fault', type: fate < 0.02 ? 'lost' : 'twice', detail: what });
    return { copies: fate < 0.02 ? 0 : 2, late: 0 };
  }

  /** Something a real process would not survive, or that escapes the simulated time. */
  unhandled(process: SimProcess | undefined, detail: string): void {
    this.records.push({
      at: this.timeline.now,
      process: process?.name ?? '-',
      holder: process?.holder ?? '-',
      kind: 'unhandled',
      type: 'unhandled',
      detail,
    });
  }

  /** The candidates started, the faults planned. */
  private begin(): void {
    for (let i = 1; i <= this.scenario.candidates; i++) this.start(i, `h${i}`);
    for (const fault of this.scenario.faults) this.timeline.at(fault.at, () => this.fault(fault));
  }

  /** The end of the quiet time: every pause ends (its own event), the slots settle. */
  private quietEnd(): number {
    const { duration, timing } = this.scenario;
    return duration + 6 * (timing.expiresAfter + timing.retryEvery) + 4 * timing.expiresAfter;
  }

  private finish(quietFrom: number): SimHistory {
    for (const process of this.processes) this.end(process);
    for (const db of this.idle.splice(0)) db.close();
    return {
      scenario: this.scenario,
      records: this.records,
      quietFrom,
      endedAt: this.timeline.now,
      faults: this.faults,
      aimed: this.scenario.faults.map((fault) => this.aimed.get(fault)),
      ...(this.chooser !== undefined && { choices: this.chooser.made }),
    };
  }

  private record(process: SimProcess, record: Omit<SimRecord, 'at' | 'process' | 'holder'>): void {
    if (!process.alive) return; // a dead process says nothing
    this.records.push({
      at: this.timeline.now,
      process: process.name,
      holder: process.holder,
      ...record,
      ...(process.wallOffset !== 0 && { wall: process.wallOffset }),
    });
  }

  /**
   * The store as the campaign sees it: most operations answer at once (SQLite's way), some
   * later (PostgreSQL's), the statement running some time after it was sent.
   */
  withLatency(store: SqliteLeaseStore, owner: SimProcess, killed: () => boolean): LeaseStore {
    const { timeline } = this;
    const { random } = owner;
    const { latency, failures } = this.scenario.noise;
    // Now and then an operation fails: before its statement ran (a lock taken, an I/O error),
    // or, for an answer that comes later, after it ran (the connection lost with the answer).
    const failure = (when: 'before' | 'after'): LeadershipError => {
      const busy = random() < 0.5;
      this.record(owner, { kind: 'fault', type: `${busy ? 'busy' : 'io-error'}-${when}` });
      this.faults++;
      return busy
        ? new LockTaken('simulated: another connection holds the lock')
        : new LeadershipError('DATABASE_ERROR', `simulated: an I/O error ${when} the statement ran`);
    };
    const traced = <T>(name: string, operation: () => T): (() => T) =>
      this.trace
        ? () => {
            try {
              const answer = operation();
              this.record(owner, { kind: 'operation', type: name, detail: describe(answer) });
              return answer;
            } catch (error) {
              this.record(owner, { kind: 'operation', type: name, detail: `throws ${(error as LeadershipError).code ?? error}` });
              throw error;
            }
          }
        : operation;
    /**
     * `operation` run `toStatement()` ms from now, and its outcome (turned into a failure if
     * `failsAfter()`) answered `toAnswer()` ms after that: drawn in that order, as the run goes.
     */
    const answered = <T>(
      name: string,
      operation: () => T,
      toStatement: () => number,
      toAnswer: () => number,
      failsAfter: () => boolean,
    ) => {
      const answer = new SimAnswer<T>(timeline, owner, (error) =>
        this.unhandled(owner, `a rejection nobody handled, of ${name}: ${errorText(error)}`),
      );
      timeline.at(
        toStatement(),
        () => {
          let outcome: { value: T } | { error: unknown };
          try {
            outcome = { value: operation() };
            if (failsAfter()) outcome = { error: failure('after') };
          } catch (error) {
            outcome = { error };
          }
          timeline.at(toAnswer(), () => answer.settle(outcome), owner);
        },
        owner,
      );
      return answer;
    };
    const chosen = <T>(name: string, operation: () => T): T | PromiseLike<T> => {
      const latency = (this.chooser as Chooser).latency();
      if (latency === 0) return operation();
      const toAnswer = latency === 1 ? 1 : this.scenario.timing.expiresAfter;
      if (latency === 2)
        this.record(owner, { kind: 'fault', type: 'slow', detail: `${name}, a lease`, until: timeline.now + 1 + toAnswer });
      return answered(
        name,
        operation,
        () => 1,
        () => toAnswer,
        () => false,
      );
    };
    const later = <T>(name: string, statement: () => T): T | PromiseLike<T> => {
      // A killed process's connection went back to the world (see `connect`): what its
      // teardown still asks fails as on the closed connection the kernel left it.
      const operation = traced(name, () => {
        if (killed()) throw new LeadershipError('DATABASE_CLOSED', 'The database connection is closed');
        return statement();
      });
      if (this.chooser !== undefined) return chosen(name, operation);
      if (failures && random() < 0.01) throw failure('before');
      if (!latency || random() < 0.7) return operation();
      const delay = () => {
        if (random() < 0.95) return random() * 3;
        const late = random() * this.scenario.timing.expiresAfter;
        // Until its answer, at the latest: the other leg (statement or answer) takes 3 ms at most, unless slow too (recorded then).
        this.record(owner, { kind: 'fault', type: 'slow', detail: `${name}, ${ms(late)}`, until: timeline.now + late + 3 });
        return late;
      };
      return answered(name, operation, delay, delay, () => failures && random() < 0.01);
    };
    // Every call that may answer later does so here, as on PostgreSQL: the capabilities' too.
    const { standby, priorities, handoffs } = store.capabilities;
    return {
      clock: store.clock,
      capabilities: {
        ...store.capabilities,
        standby: {
          standBy: (...args) => later('standBy', () => atOnce(standby.standBy(...args))),
          leaveStandby: (...args) => later('leaveStandby', () => atOnce(standby.leaveStandby(...args))),
        },
        priorities: {
          declare: (...args) => later('declare', () => atOnce(priorities.declare(...args))),
          highest: (...args) => later('highest', () => atOnce(priorities.highest(...args))),
        },
        handoffs: {
          tell: (...args) => later('tell', () => atOnce(handoffs.tell(...args))),
          handOver: (...args) => later('handOver', () => atOnce(handoffs.handOver(...args))),
          watchHandoffs: (...args) => handoffs.watchHandoffs(...args),
        },
      },
      look: (...args) => later('look', () => store.look(...args)),
      acquire: (...args) => later('acquire', () => this.noteTake(owner, args[0], store.acquire(...args))),
      renew: (...args) => later('renew', () => store.renew(...args)),
      release: (...args) => later('release', () => store.release(...args)),
    };
  }

  /**
   * A new process. Its `birth` names its stream of noise: the candidate's number for those
   * of the start, the time of the fault that restarted it for the others, so that a fault the
   * shrinker removes renames and reseeds no process born of another.
   */
  private start(birth: number, holder: string): SimProcess {
    const process = new SimProcess(`p${++this.born}`, holder, birth, this);
    this.processes.push(process);
    this.subscribe(process);
    return process;
  }

  private subscribe(process: SimProcess): void {
    const { slots, timing } = this.scenario;
    for (let slot = 0; slot < slots; slot++) {
      const options = this.optionsOf(process.random);
      process.lockDelays.set(slot, options.lockDelay ?? 0);
      this.record(process, { kind: 'event', slot, type: 'subscribed', detail: JSON.stringify(options).slice(1, -1) || undefined });
      const key = `${process.name} ${slot}`;
      const record = (event: LeadershipEvent) => {
        if (event.type === 'elected') this.leading.set(key, { slot, holder: event.holder, term: event.term });
        else if (event.type === 'lost') this.leading.delete(key);
        const deadline = 'expiresAt' in event && event.expiresAt !== undefined ? event.expiresAt - this.host.offset : undefined;
        this.record(process, {
          kind: 'event',
          slot,
          type: event.type,
          ...('term' in event && { term: event.term }),
          ...(deadline !== undefined && { deadline }),
          ...(event.type === 'error' && { detail: event.error.code }),
          ...(event.type === 'lost' && { detail: event.reason }),
        });
      };
      const config = { slot, holder: process.holder, ...timing, ...options, stepDown: process.stepDown, scheduler: process.scheduler };
      // Its leader's job, as users write one: a fenced write now and then while it leads.
      const job = (lease: Lease) => interval(timing.renewEvery * 0.75, process.scheduler).pipe(tap(() => this.fencedWrite(process, lease)));
      process.subscriptions.push(
        observeLeadership(process.store, config)
          .pipe(tap(record), whileLeader(job))
          .subscribe({
            error: (error: { code?: string; message?: string }) => {
              this.leading.delete(key);
              this.record(process, { kind: 'error', slot, type: 'terminated', detail: `${error.code}: ${error.message}` });
            },
          }),
      );
    }
  }

  /**
   * Records a take of a tenure whose holder is alive and has not said `lost` for it: its
   * end cannot have been proven (a holder's endpoint closes only after its `lost`, or with
   * its process), so the taker's lock-delay applies (see `checkRun`).
   */
  private noteTake(process: SimProcess, slot: number, result: AcquireResult): AcquireResult {
    const { replaced } = result;
    if (!result.acquired || replaced === undefined) return result;
    const believer = this.processes.find((other) => {
      const lease = this.leading.get(`${other.name} ${slot}`);
      return other.alive && lease?.holder === replaced.holder && lease.term === replaced.term;
    });
    if (believer !== undefined) {
      this.record(process, {
        kind: 'take',
        slot,
        type: 'unproven',
        term: result.lease.term,
        detail: `from ${replaced.holder} term ${replaced.term} (${believer.name})`,
        lockDelay: process.lockDelays.get(slot) ?? 0,
        believer: believer.name,
      });
    }
    return result;
  }

  /**
   * A row written through the store's `fenced`, with the slot's tenure read by a statement
   * of the simulator's own inside the same transaction: the checker compares the two.
   */
  private fencedWrite(process: SimProcess, lease: Lease): void {
    process.connection.write(lease, (outcome) => {
      if ('refused' in outcome) {
        this.record(process, { kind: 'write', slot: lease.slot, type: 'refused', term: lease.term, detail: outcome.refused });
      } else this.record(process, { kind: 'write', slot: lease.slot, type: 'fenced', term: lease.term, tenure: outcome.tenure });
    });
  }

  /** A subscription's options beside its timing: now and then a priority (preempting or not), a lock-delay. */
  private optionsOf(random: () => number): { priority?: number; preempt?: boolean; lockDelay?: number } {
    if (!this.scenario.noise.options) return {};
    const priority = random() < 0.3 ? 1 + Math.floor(random() * 3) : 0;
    const preempt = priority > 0 && random() < 0.5;
    const lockDelay = random() < 0.2 ? Math.round((random() * this.scenario.timing.expiresAfter) / 2) : 0;
    return { ...(priority > 0 && { priority }), ...(preempt && { preempt }), ...(lockDelay > 0 && { lockDelay }) };
  }

  private unsubscribe(process: SimProcess): void {
    for (const subscription of process.subscriptions.splice(0)) subscription.unsubscribe();
    for (let slot = 0; slot < this.scenario.slots; slot++) this.leading.delete(`${process.name} ${slot}`);
  }

  private fault(fault: PlannedFault): void {
    const live = this.processes.filter((p) => p.alive);
    const leaders = live.filter((p) => [...Array(this.scenario.slots).keys()].some((slot) => this.leading.has(`${p.name} ${slot}`)));
    const among = fault.atLeader && leaders.length > 0 ? leaders : live;
    const pinned = fault.target === undefined ? undefined : live.find((process) => process.birth === fault.target);
    if (among.length === 0) return;
    const target = pinned ?? among[Math.min(among.length - 1, Math.floor(fault.pick * among.length))];
    this.aimed.set(fault, target.birth);
    const { expiresAfter, retryEvery } = this.scenario.timing;
    const note = (type: string, detail?: string) => this.record(target, { kind: 'fault', type, ...(detail && { detail }) });
    this.faults++;
    switch (fault.kind) {
      case 'kill':
      case 'restart':
        note(fault.kind);
        this.kill(target);
        this.timeline.at(retryEvery * (0.5 + 2 * fault.size), () =>
          this.start(bornOf(fault), fault.kind === 'kill' ? target.holder : `h${fault.at}`),
        );
        return;
      case 'close':
        // On SQLite, its candidates end with DATABASE_CLOSED at their next operation; then it
        // exits, and is restarted. On PostgreSQL, the server cuts its connections: it connects again.
        if (target.connection.close() === 'cut') return note('cut');
        note('close');
        this.timeline.at(expiresAfter, () => (this.kill(target), this.start(bornOf(fault), target.holder)), target);
        return;
      case 'pause': {
        if (target.paused) return;
        const length = expiresAfter * (0.1 + 3 * fault.size);
        this.record(target, { kind: 'fault', type: 'pause', detail: `${Math.round(length)} ms`, until: this.timeline.now + length });
        target.paused = true;
        this.timeline.at(length, () => {
          target.paused = false;
          this.timeline.resume(target);
        });
        return;
      }
      case 'unsubscribe':
        // Done when it happens: a paused process unsubscribes at its resumption; one that
        // already did, and has not subscribed again yet, has nothing to unsubscribe.
        this.timeline.at(
          0,
          () => {
            if (target.subscriptions.length === 0) return;
            note('unsubscribe');
            this.unsubscribe(target);
            this.timeline.at(retryEvery * fault.size, () => this.subscribe(target), target);
          },
          target,
        );
        return;
      case 'wall-step': {
        const step = Math.round((fault.size - 0.5) * 1_200_000);
        // On PostgreSQL the store reads the server's wall clock, not its own: one in two steps is the server's.
        if (this.server !== undefined && fault.pick < 0.5) {
          this.serverWallOffset += step;
          return note('wall-step', `${step} ms, the server's`);
        }
        note('wall-step', `${step} ms`);
        target.wallOffset += step;
        return;
      }
      case 'step-down':
        // Asked of a paused process, it steps down at its resumption.
        this.timeline.at(0, () => (note('step-down'), target.stepDown.next()), target);
        return;
      case 'handoff':
        return this.askHandoff(fault, target, live, note);
    }
  }

  /** A live process that runs asks the target's tenure to hand over (see `FaultKind`), as `handOff` does once its checks passed. */
  private askHandoff(fault: PlannedFault, target: SimProcess, live: SimProcess[], note: (type: string, detail?: string) => void): void {
    const lease = [...this.leading].find(([key]) => key.startsWith(`${target.name} `))?.[1];
    const askers = live.filter((p) => !p.paused);
    if (lease === undefined || askers.length === 0) return;
    const asker = askers[Math.floor(fault.pick * 7919) % askers.length];
    // Named, a candidate that campaigns: subscribed, running, its connection open.
    const followers = live.filter((p) => p !== target && p.subscriptions.length > 0 && !p.paused && p.connection.open);
    const to =
      fault.size < 0.5 ? followers[Math.floor(fault.size * 2 * followers.length)]?.holder : fault.size < 0.75 ? undefined : 'nobody';
    note('handoff', `slot ${lease.slot} term ${lease.term} to ${to ?? 'anybody'}, asked by ${asker.name}`);
    try {
      const told = asker.store.capabilities?.handoffs?.tell({ kind: 'asked', lease, ...(to !== undefined && { to }) });
      // Its failure caught, as handOff's is.
      if (told instanceof Promise) told.catch(() => undefined);
      else if (told !== undefined) valueNow(told);
    } catch {
      // the message never went: as after a failed handOff
    }
  }

  /** Killed: no release; the kernel closes its endpoints. */
  private kill(process: SimProcess): void {
    if (!process.alive) return;
    process.alive = false;
    this.channels.killed(process);
    process.connection.kill();
    // Its memory goes with it: what it had in the library's process-wide state too (its
    // candidates' enrolment, their beliefs, which `whileLeader` and `holdsLease` ask). Torn
    // down with its connection closed and its timers dead, it writes and records nothing, and
    // draws from its own stream.
    const running = this.timeline.running;
    this.timeline.running = process;
    try {
      this.unsubscribe(process);
    } finally {
      this.timeline.running = running;
    }
  }

  private end(process: SimProcess): void {
    if (!process.alive) return;
    process.alive = false;
    this.unsubscribe(process);
    process.connection.kill();
  }
}

/** A 32-bit hash of numbers and a text. */
function hashOf(...parts: Array<number | string>): number {
  let hash = 0x811c9dc5;
  for (const part of parts) {
    const text = String(part);
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    hash = Math.imul(hash ^ 0xff, 0x01000193);
  }
  return hash >>> 0;
}

/** The birth of a process a fault started: after every candidate's number (64 at most). */
function bornOf(fault: PlannedFault): number {
  return 100 + fault.at;
}

/** The kinds of async resource (async_hooks) that run outside the simulated time. */
const realAsync = new Set(['PROMISE', 'Timeout', 'Immediate', 'TickObject', 'Microtask']);

/** An operation's answer, in a few words. */
function describe(answer: unknown): string {
  if (typeof answer !== 'object' || answer === null) return String(answer);
  const { acquired, lease, expiresIn } = answer as { acquired?: boolean; lease?: { holder: string; term: number }; expiresIn?: number };
  const left = expiresIn === undefined ? '' : `, ${expiresIn.toFixed(1)} ms left`;
  const seen = lease ? `${lease.holder} term ${lease.term}${left}` : 'no lease';
  return acquired === undefined ? seen : `${acquired ? 'acquired' : 'refused'}: ${seen}`;
}

/** What a capability of the SQLite store answers: at once, never a promise (its statements are synchronous). */
function atOnce<T>(answer: Eventually<T>): T {
  if (isPromiseLike(answer)) throw new Error('A SQLite capability answered with a promise');
  return answer;
}

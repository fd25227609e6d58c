/**
 * One simulated run: candidates in simulated processes, each a real `observeLeadership`
 * subscription on the real SQLite store and its real statements, on one database file, all
 * on one timeline (timeline.ts); faults drawn from the seed; every event recorded on true
 * time for the checker (check.ts).
 */
import Database from 'better-sqlite3';
import { Subscription } from 'rxjs';
import { LeadershipEvent } from '../src/core/leadership-event';
import { observeLeadership } from '../src/surface/observe-leadership';
import { LeadershipError } from '../src/core/leadership-error';
import { LeaseStore, LockTaken } from '../src/store/lease-store';
import { SqliteLeaseStore } from '../src/store/sqlite/sqlite-lease-store';
import { mulberry32 } from '../test-kit/seeded-random';
import { SimChannels } from './sim-channels';
import { SimHost, SimProcessClock, SimScheduler, Timeline } from './timeline';

export interface SimOptions {
  seed: number;
  /** Candidate processes at any time (each killed one is restarted as a new one). */
  candidates: number;
  slots: number;
  /** Simulated ms of faults, followed by a quiet time for the slots to settle. */
  duration: number;
  /** The candidates' timing. */
  renewEvery: number;
  expiresAfter: number;
  retryEvery: number;
  /** A file for the run's database (created; removed by the caller). */
  file: string;
}

/** What the checker reads: events and faults on true time, ms from the run's start. */
export interface SimRecord {
  at: number;
  process: string;
  kind: 'event' | 'fault' | 'error';
  slot?: number;
  holder?: string;
  type: string;
  term?: number;
  /** For `elected` and `renewed`: the end of the belief, on true time. */
  deadline?: number;
  detail?: string;
}

export interface SimHistory {
  options: SimOptions;
  records: SimRecord[];
  /** When the quiet time began (the last fault is before it) and when the run ended. */
  quietFrom: number;
  endedAt: number;
  /** The processes alive at the end, with the holders of their candidates. */
  live: Array<{ process: string; holders: string[] }>;
  faults: number;
}

class SimProcess implements SimProcessClock {
  alive = true;
  paused = false;
  held = [];
  wallOffset = 0;
  readonly subscriptions: Subscription[] = [];
  readonly db: Database.Database;
  readonly store: LeaseStore;
  readonly scheduler: SimScheduler;

  constructor(
    readonly name: string,
    world: World,
  ) {
    this.db = new Database(world.options.file, { timeout: 0 });
    this.scheduler = new SimScheduler(world.timeline, world.host, this, () => (world.random() < 0.8 ? 0 : world.random() * 3));
    const store = new SqliteLeaseStore(this.db, world.channels.of(this));
    this.store = world.withLatency(store, this);
  }
}

export class World {
  readonly timeline = new Timeline();
  readonly host: SimHost = { name: 'sim host', offset: 5_000_000 };
  readonly random: () => number;
  readonly channels: SimChannels;
  readonly records: SimRecord[] = [];
  private readonly processes: SimProcess[] = [];
  private born = 0;
  private faults = 0;

  constructor(readonly options: SimOptions) {
    // One generator per run, so that a seed replays the run exactly.
    this.random = mulberry32(options.seed);
    this.channels = new SimChannels(this.timeline, () => this.random() * 2);
    const setup = new Database(options.file);
    setup.pragma('journal_mode = WAL');
    setup.close();
  }

  /** Runs the whole run: the candidates, the faults until `duration`, then the quiet time. */
  run(): SimHistory {
    // The library's own draws (the jitter of its lock retries) come from the seed too.
    const random = Math.random;
    Math.random = this.random;
    try {
      return this.runSeeded();
    } finally {
      Math.random = random;
    }
  }

  private runSeeded(): SimHistory {
    const { candidates, duration, expiresAfter, retryEvery } = this.options;
    for (let i = 0; i < candidates; i++) this.start();
    for (let at = expiresAfter; at < duration; at += expiresAfter * (0.3 + this.random())) {
      this.timeline.at(at, () => this.fault());
    }
    this.timeline.runUntil(duration);
    const quietFrom = this.timeline.now;
    // Quiet: every pause ends (its own event), the slots settle.
    this.timeline.runUntil(duration + 6 * (expiresAfter + retryEvery) + 4 * expiresAfter);
    const live = this.processes.filter((p) => p.alive && !p.paused).map((p) => ({ process: p.name, holders: [this.holderOf(p.name)] }));
    for (const process of this.processes) this.end(process);
    return { options: this.options, records: this.records, quietFrom, endedAt: this.timeline.now, live, faults: this.faults };
  }

  /**
   * The store as the campaign sees it: most operations answer at once (SQLite's way), some
   * later (PostgreSQL's), the statement running some time after it was sent.
   */
  withLatency(store: SqliteLeaseStore, owner: SimProcess): LeaseStore {
    const timeline = this.timeline;
    const random = this.random;
    // Now and then an operation fails: before its statement ran (a lock taken, an I/O error),
    // or, for an answer that comes later, after it ran (the connection lost with the answer).
    const failure = (when: 'before' | 'after'): LeadershipError => {
      const busy = random() < 0.5;
      this.records.push({ at: timeline.now, process: owner.name, kind: 'fault', type: `${busy ? 'busy' : 'io-error'}-${when}` });
      this.faults++;
      return busy
        ? new LockTaken('simulated: another connection holds the lock')
        : new LeadershipError('DATABASE_ERROR', `simulated: an I/O error ${when} the statement ran`);
    };
    const later = <T>(operation: () => T): T | PromiseLike<T> => {
      if (random() < 0.01) throw failure('before');
      if (random() < 0.7) return operation();
      const latency = () => (random() < 0.95 ? random() * 3 : random() * this.options.expiresAfter);
      const answer: PromiseLike<T> = {
        then: ((onResult?: (value: T) => unknown, onError?: (error: unknown) => unknown) => {
          timeline.at(
            latency(),
            () => {
              let outcome: { value: T } | { error: unknown };
              try {
                outcome = { value: operation() };
                if (random() < 0.01) outcome = { error: failure('after') };
              } catch (error) {
                outcome = { error };
              }
              timeline.at(latency(), () => ('value' in outcome ? onResult?.(outcome.value) : onError?.(outcome.error)), owner);
            },
            owner,
          );
          return answer;
        }) as PromiseLike<T>['then'],
      };
      return answer;
    };
    return {
      clock: store.clock,
      capabilities: store.capabilities,
      look: (...args) => later(() => store.look(...args)),
      acquire: (...args) => later(() => store.acquire(...args)),
      renew: (...args) => later(() => store.renew(...args)),
      release: (...args) => later(() => store.release(...args)),
    };
  }

  private holderOf(process: string): string {
    return `${process}`;
  }

  private start(): SimProcess {
    const process = new SimProcess(`p${++this.born}`, this);
    this.processes.push(process);
    this.subscribe(process);
    return process;
  }

  private subscribe(process: SimProcess): void {
    const { slots, renewEvery, expiresAfter, retryEvery } = this.options;
    const holder = this.holderOf(process.name);
    for (let slot = 0; slot < slots; slot++) {
      const record = (event: LeadershipEvent) => {
        const deadline = 'expiresAt' in event && event.expiresAt !== undefined ? event.expiresAt - this.host.offset : undefined;
        this.records.push({
          at: this.timeline.now,
          process: process.name,
          kind: 'event',
          slot,
          holder,
          type: event.type,
          ...('term' in event && { term: event.term }),
          ...(deadline !== undefined && { deadline }),
          ...(event.type === 'error' && { detail: event.error.code }),
          ...(event.type === 'lost' && { detail: event.reason }),
        });
      };
      process.subscriptions.push(
        observeLeadership(process.store, { slot, holder, renewEvery, expiresAfter, retryEvery, scheduler: process.scheduler }).subscribe({
          next: record,
          error: (error: { code?: string; message?: string }) =>
            this.records.push({
              at: this.timeline.now,
              process: process.name,
              kind: 'error',
              slot,
              holder,
              type: 'terminated',
              detail: `${error.code}: ${error.message}`,
            }),
        }),
      );
    }
  }

  private unsubscribe(process: SimProcess): void {
    for (const subscription of process.subscriptions.splice(0)) subscription.unsubscribe();
  }

  private fault(): void {
    const live = this.processes.filter((p) => p.alive);
    if (live.length === 0) return;
    const target = live[Math.floor(this.random() * live.length)];
    const pick = this.random();
    const { expiresAfter, retryEvery } = this.options;
    const note = (type: string, detail?: string) =>
      this.records.push({ at: this.timeline.now, process: target.name, kind: 'fault', type, ...(detail && { detail }) });
    this.faults++;
    if (pick < 0.35) {
      // Killed: no release; the kernel closes its endpoints; a new process takes its place later.
      note('kill');
      target.alive = false;
      this.channels.killed(target);
      target.db.close();
      this.timeline.at(retryEvery * (0.5 + 2 * this.random()), () => this.start());
    } else if (pick < 0.6) {
      if (target.paused) return;
      const length = expiresAfter * (0.1 + 3 * this.random());
      note('pause', `${Math.round(length)} ms`);
      target.paused = true;
      this.timeline.at(length, () => {
        target.paused = false;
        this.timeline.resume(target);
      });
    } else if (pick < 0.8) {
      // Unsubscribed (the lease released), subscribed again a little later.
      // Noted when it happens: a paused process unsubscribes at its resumption.
      this.timeline.at(0, () => (note('unsubscribe'), this.unsubscribe(target)), target);
      this.timeline.at(retryEvery * this.random(), () => this.subscribe(target), target);
    } else {
      // The process's wall clock steps, forward or back, by up to ten minutes.
      const step = Math.round((this.random() - 0.5) * 1_200_000);
      note('wall-step', `${step} ms`);
      target.wallOffset += step;
    }
  }

  private end(process: SimProcess): void {
    if (!process.alive) return;
    process.alive = false;
    this.unsubscribe(process);
    process.db.close();
  }
}

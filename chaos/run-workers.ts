import { uncommittedSeq, WorkerRecord } from '../test-kit/history';
import { SteppedClock } from '../test-kit/stepped-clock';
import type { WorkerOptions } from '../test-kit/worker-options';
import { sleep, WorkerKind, WorkerProcess } from '../test-kit/worker-process';
import { moment, Moment } from './moments';

/** A host of a PostgreSQL run: how to run a program there, the server's URL from there, and its link. */
export interface ChaosHost {
  readonly launcher: string[];
  readonly url: string;
  cut(): void;
  heal(): void;
}

export interface Timing {
  renewEvery: number;
  expiresAfter: number;
  retryEvery: number;
}

/** Where a run's workers run and how they open the database. */
export interface RunWorkersSetup {
  readonly workerOptions: WorkerOptions;
  readonly timing: Timing;
  /** PostgreSQL: the hosts, and the URL the processes use instead of the server's. */
  readonly hosts: readonly ChaosHost[];
  readonly workerUrl?: string;
  /** The wall clock that steps, if it does: SQLite workers run on it. */
  readonly clock?: SteppedClock;
}

/**
 * The worker processes of one chaos run, across their restarts: what they report, who leads,
 * and the things still in progress (restarts, fault ends) that the quiet end waits for.
 */
export class RunWorkers {
  /** What every worker reported, in the order it came. */
  readonly records: WorkerRecord[] = [];
  /** Every process started, living or not. */
  readonly all: WorkerProcess[] = [];
  /** Set once the run's quiet end began: nobody is restarted any more. */
  stopping = false;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly setup: RunWorkersSetup,
    private readonly log: (line: string) => void,
  ) {}

  /** Keeps `promise` for `settled()`. */
  track(promise: Promise<unknown>): void {
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise));
  }

  /** Resolves once everything tracked so far has settled. */
  async settled(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  /** The host of worker `w<i>`: the same across its restarts. */
  hostOf(name: string): ChaosHost | undefined {
    const { hosts } = this.setup;
    return hosts[(Number(name.slice(1)) - 1) % hosts.length] as ChaosHost | undefined;
  }

  start(name: string, kind: WorkerKind): WorkerProcess {
    const { workerOptions, workerUrl, clock } = this.setup;
    const { postgres } = workerOptions;
    const host = this.hostOf(name);
    const url = host?.url ?? workerUrl;
    const worker = new WorkerProcess(
      name,
      kind,
      url && postgres ? { ...workerOptions, postgres: { ...postgres, url } } : workerOptions,
      (record) => this.records.push({ ...record, worker: name }),
      (text) => this.log(`stderr ${text.trimEnd()}`),
      // On SQLite, every process of the host sees the steps; on PostgreSQL, the server does.
      [...(clock && !postgres ? clock.launcher : []), ...(host?.launcher ?? [])],
    );
    this.all.push(worker);
    return worker;
  }

  live(): WorkerProcess[] {
    return this.all.filter((w) => w.alive);
  }

  leaderOf(slot: number): WorkerProcess | undefined {
    return this.live().find((w) => w.leading.has(slot) && !w.paused);
  }

  /** Resolves when `worker` is campaigning (or gone): a loaded machine may take seconds to start a process. */
  async campaigning(worker: WorkerProcess): Promise<Moment> {
    for (const end = Date.now() + 60_000; worker.alive && Date.now() < end; await sleep(10)) {
      if (worker.records.some((r) => r.type === 'subscribed')) break;
    }
    return moment();
  }

  /** Restarts `worker` once it exited, and resolves when the new process campaigns, so that the quiet end waits for it. */
  restartLater(worker: WorkerProcess): Promise<Moment | undefined> {
    const restarted = worker.exited
      .then(() => sleep(this.setup.timing.retryEvery))
      .then(() => (this.stopping ? undefined : this.campaigning(this.start(worker.name, worker.kind))));
    this.track(restarted);
    return restarted;
  }

  /** Whether `worker` reported that it blocked inside a fenced transaction on `slot`, within a lease (or `within` ms). */
  async hangOf(worker: WorkerProcess, slot: number, since: number, within = this.setup.timing.expiresAfter): Promise<boolean> {
    const deadline = Date.now() + within;
    // On the monotonic clock: a worker's wall clock may have been stepped.
    const reported = (type: string) =>
      worker.records.some((r) => r.type === type && r.slot === slot && r.seq === uncommittedSeq && (r.mono as number) >= since);
    while (Date.now() < deadline && worker.alive) {
      if (reported('fenced-hang')) return true;
      if (reported('fenced-rejected')) return false;
      await sleep(5);
    }
    return false;
  }
}

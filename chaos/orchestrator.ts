import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChaosDatabase, LeaseRow, postgresChaosDatabase, PostgresTarget, sqliteChaosDatabase } from '../test-kit/chaos-database';
import { planFaults, PlannedFault } from './fault-plan';
import { FaultRecord, LedgerRow, uncommittedSeq, WorkerRecord } from '../test-kit/history';
import { SteppedClock } from '../test-kit/stepped-clock';
import { JournalMode, monotonicNow, WorkerOptions } from '../test-kit/worker';
import { sleep, stopWorkers, WorkerKind, WorkerProcess } from '../test-kit/worker-process';

export interface ChaosOptions {
  /** Candidate processes of ours. */
  processes: number;
  /** Run length, ms (faults, then a quiet settle, then the final check). */
  duration: number;
  /** expiresAfter, ms; renewEvery is a third of it, retryEvery a fifth. */
  lease: number;
  seed: number;
  slots: number;
  /** Whether one more process runs the original worker's statements on slot 0. */
  originalWorker: boolean;
  /** The database file; a fresh one in a temporary folder if absent. */
  file?: string;
  /** How every process opens the file (see `openWorkerDatabase`). @default 'delete' */
  journal?: JournalMode;
  /** Campaign on PostgreSQL instead of a SQLite file (no worker of the original statements then). */
  postgres?: PostgresTarget;
  /**
   * PostgreSQL: the hosts the processes run on (process i on host i mod their number), each
   * reaching the server at its own URL; their links are what `cut-host` cuts. Not in reports.
   */
  hosts?: ChaosHost[];
  /** PostgreSQL: the URL the processes use instead of `postgres.url` (PgBouncer's, say), and what it is. */
  workerUrl?: string;
  through?: string;
  /**
   * Whether the wall clock steps (fault `clock-step`): on SQLite every worker's, on
   * PostgreSQL the server's, which `clock` moves. Beliefs are compared on the host's
   * monotonic clock either way.
   */
  clockSteps?: boolean;
}

/** What a run needs besides its options, and does not report. */
export interface ChaosParts {
  /** The wall clock that `clock-step` moves: every SQLite worker runs on it, or the PostgreSQL server does. */
  readonly clock?: SteppedClock;
}

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

/** The state of every slot at the end, after faults stopped and leases had time to settle. */
export interface FinalState {
  at: number;
  /** `at` on the host's monotonic clock. */
  mono?: number;
  rows: LeaseRow[];
  /** Holders of processes still alive, by slot, from their own reports. */
  liveHolders: Array<{ slot: number; holder: string }>;
}

/** Everything a run saw: what the checker reads, and what `--report` writes. */
export interface ChaosHistory {
  options: ChaosOptions;
  timing: Timing;
  startedAt: number;
  endedAt: number;
  records: WorkerRecord[];
  faults: FaultRecord[];
  ledger: LedgerRow[];
  final: FinalState;
}

/** A moment on both clocks: the wall clock's Unix ms, and the host's monotonic ms. */
interface Moment {
  readonly at: number;
  readonly mono: number;
}

function moment(): Moment {
  return { at: Date.now(), mono: monotonicNow() };
}

/** When a fault began (`at`, `mono`), now or at `when`. */
function began(when: Moment = moment()): Pick<FaultRecord, 'at' | 'mono'> {
  return { at: when.at, mono: when.mono };
}

/** When a fault's effect ended (`until`, `untilMono`), now or at `when`. */
function ended(when: Moment = moment()): Pick<FaultRecord, 'until' | 'untilMono'> {
  return { until: when.at, untilMono: when.mono };
}

export function timingFor(lease: number): Timing {
  return { renewEvery: Math.round(lease / 3), expiresAfter: lease, retryEvery: Math.max(1, Math.round(lease / 5)) };
}

/**
 * Runs worker processes on one SQLite file (or one PostgreSQL schema), injects the planned
 * faults, then lets the slots settle and collects the history. Never throws for what the
 * workers do: that is for the checker to judge.
 */
export async function runChaos(
  options: ChaosOptions,
  log: (line: string) => void = () => undefined,
  { clock }: ChaosParts = {},
): Promise<ChaosHistory> {
  if (options.clockSteps && clock === undefined) throw new Error('clockSteps needs the clock to step');
  const timing = timingFor(options.lease);
  const { postgres, journal = 'delete' } = options;
  const file = postgres ? undefined : (options.file ?? join(mkdtempSync(join(tmpdir(), 'observe-leadership-chaos-')), 'chaos.db'));
  const db: ChaosDatabase = postgres ? await postgresChaosDatabase(postgres) : sqliteChaosDatabase(file!, journal);
  const workerOptions: WorkerOptions = {
    file,
    postgres,
    journal,
    slots: options.slots,
    ...timing,
    ledgerEvery: Math.max(10, Math.round(options.lease / 10)),
  };

  const records: WorkerRecord[] = [];
  const faults: FaultRecord[] = [];
  const workers: WorkerProcess[] = [];
  const pending = new Set<Promise<unknown>>();
  const track = (promise: Promise<unknown>) => {
    pending.add(promise);
    void promise.finally(() => pending.delete(promise));
  };
  const hosts = options.hosts ?? [];
  /** The host of worker `w<i>`: the same across its restarts. */
  const hostOf = (name: string) => hosts[(Number(name.slice(1)) - 1) % hosts.length] as ChaosHost | undefined;
  const start = (name: string, kind: WorkerKind) => {
    const host = hostOf(name);
    const url = host?.url ?? options.workerUrl;
    const worker = new WorkerProcess(
      name,
      kind,
      url && postgres ? { ...workerOptions, postgres: { ...postgres, url } } : workerOptions,
      (record) => records.push({ ...record, worker: name }),
      (text) => log(`stderr ${text.trimEnd()}`),
      // On SQLite, every process of the host sees the steps; on PostgreSQL, the server does.
      [...(clock && !postgres ? clock.launcher : []), ...(host?.launcher ?? [])],
    );
    workers.push(worker);
    return worker;
  };
  const live = () => workers.filter((w) => w.alive);
  const leaderOf = (slot: number) => live().find((w) => w.leading.has(slot) && !w.paused);
  let stopping = false;
  let lockHeld = false;
  /** Resolves when `worker` is campaigning (or gone): a loaded machine may take seconds to start a process. */
  const campaigning = async (worker: WorkerProcess) => {
    for (const end = Date.now() + 60_000; worker.alive && Date.now() < end; await sleep(10)) {
      if (worker.records.some((r) => r.type === 'subscribed')) break;
    }
    return moment();
  };
  /** Restarts `worker` once it exited, and resolves when the new process campaigns, so that the quiet end waits for it. */
  const restartLater = (worker: WorkerProcess): Promise<Moment | undefined> => {
    const restarted = worker.exited
      .then(() => sleep(timing.retryEvery))
      .then(() => (stopping ? undefined : campaigning(start(worker.name, worker.kind))));
    track(restarted);
    return restarted;
  };

  for (let i = 1; i <= options.processes; i++) start(`w${i}`, 'candidate');
  if (options.originalWorker && !postgres) start('original', 'original');
  const startedAt = Date.now();

  const inject = (planned: PlannedFault): void => {
    const { kind, slot, duration } = planned;
    const leader = leaderOf(slot);
    const fault: FaultRecord = { kind, slot, ...began(), pid: leader?.pid, holder: leader?.leading.get(slot) };
    faults.push(fault);
    const skip = (why: string) => {
      fault.skipped = why;
      delete fault.pid;
      delete fault.holder;
    };
    switch (kind) {
      case 'kill':
      case 'stop':
        if (!leader) return skip('no leader');
        leader.signal(kind === 'kill' ? 'SIGKILL' : 'SIGTERM');
        return void restartLater(leader);
      case 'kill-in-fenced':
        // Killed while it holds the write lock, with a ledger row written and not committed.
        if (!leader || leader.kind !== 'candidate') return skip(leader ? 'the leader runs the original statements' : 'no leader');
        leader.send(`fenced-hang ${slot}`);
        return track(
          hangOf(leader, slot, fault.mono as number).then((hung) => {
            if (!hung) {
              // A command read late (the process was blocked meanwhile) may still hang it: it would
              // hold the write lock for good, so it is killed then, as the fault meant.
              track(
                hangOf(leader, slot, fault.mono as number, 30_000).then((late) => {
                  if (!late) return;
                  leader.signal('SIGKILL');
                  return restartLater(leader);
                }),
              );
              return skip('the fenced transaction did not start (the lease was lost meanwhile)');
            }
            Object.assign(fault, began());
            leader.signal('SIGKILL');
            restartLater(leader);
          }),
        );
      case 'kill-with-standbys':
        // Nobody is left to see the leader's end at once: the others wait for the lease.
        if (!leader) return skip('no leader');
        return track(
          db.standbys(slot).then((holders) => {
            if (holders === undefined) return skip('this store keeps no standby places');
            const standbys = live().filter((w) => w !== leader && holders.includes(w.holder ?? ''));
            Object.assign(fault, began());
            for (const victim of [leader, ...standbys]) victim.signal('SIGKILL');
            const restarted = [leader, ...standbys].map(restartLater);
            // Nobody left to take the slot: it waits for a victim to campaign again too.
            if (live().every((w) => w.kind !== 'candidate' || [leader, ...standbys].includes(w))) {
              return Promise.race(restarted).then((at) => void (at && Object.assign(fault, ended(at))));
            }
          }),
        );
      case 'pause':
        if (!leader) return skip('no leader');
        leader.paused = true;
        leader.signal('SIGSTOP');
        return track(
          sleep(duration).then(() => {
            Object.assign(fault, ended()); // before SIGCONT: the process may report within the millisecond
            leader.signal('SIGCONT');
            leader.paused = false;
          }),
        );
      case 'resubscribe':
        if (!leader || leader.kind !== 'candidate') return skip(leader ? 'the leader runs the original statements' : 'no leader');
        leader.send('unsubscribe');
        return track(sleep(timing.retryEvery).then(() => leader.send('subscribe')));
      case 'lock':
        if (lockHeld) return skip('a lock is already held');
        lockHeld = true;
        return track(
          db.holdLock().then(async (held) => {
            if (!held) {
              lockHeld = false;
              return skip('could not take the lock');
            }
            await sleep(duration);
            await db.releaseLock();
            lockHeld = false;
            Object.assign(fault, ended());
          }),
        );
      case 'cut-host': {
        // Everything on the leader's host loses the server without a word, for longer than a
        // lease: the leader must step down by its own deadline, the others take over.
        const host = leader && hostOf(leader.name);
        if (!leader || !host) return skip(leader ? 'the leader runs on no host of its own' : 'no leader');
        host.cut();
        return track(
          sleep(duration).then(() => {
            host.heal();
            Object.assign(fault, ended());
          }),
        );
      }
      case 'clock-step': {
        // Every process on the clock sees it at once, leader and followers alike.
        const step = planned.step as number;
        fault.step = step;
        if (duration === 0) return (clock as SteppedClock).step(step);
        let forward = true;
        const strobe = setInterval(() => {
          (clock as SteppedClock).step(forward ? step : -step);
          forward = !forward;
        }, 150);
        return track(
          sleep(duration).then(() => {
            clearInterval(strobe);
            if (!forward) (clock as SteppedClock).step(-step); // back where it was
            Object.assign(fault, ended());
          }),
        );
      }
      case 'burst': {
        const followers = live().filter((w) => w.leading.size === 0 && !w.paused);
        const victims = followers.filter((_, i) => i % 2 === Math.floor(planned.pick * 2));
        if (victims.length === 0) return skip('no follower');
        fault.pid = victims[0].pid;
        delete fault.holder;
        for (const victim of victims) {
          victim.signal('SIGKILL');
          track(victim.exited.then(() => stopping || start(victim.name, victim.kind)));
        }
        return;
      }
    }
  };

  /** Whether `worker` reported that it blocked inside a fenced transaction on `slot`, within a lease (or `within` ms). */
  const hangOf = async (worker: WorkerProcess, slot: number, since: number, within = timing.expiresAfter): Promise<boolean> => {
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
  };

  const plan = planFaults({
    seed: options.seed,
    duration: options.duration,
    lease: options.lease,
    slots: options.slots,
    hosts: hosts.length > 1,
    clockSteps: options.clockSteps,
  });
  const timers = plan.map((planned) => setTimeout(() => inject(planned), planned.at));
  const where = postgres
    ? `schema ${postgres.schema} of ${postgres.url}${hosts.length ? ` from ${hosts.length} hosts` : ''}${options.through ? ` through ${options.through}` : ''}`
    : `${file} (journal_mode ${journal})`;
  log(`${workers.length} workers on ${where}; ${plan.length} faults planned over ${Math.round(options.duration / 1000)} s`);
  await sleep(options.duration);
  timers.forEach(clearTimeout);

  // Quiet: let every lasting fault end and the slots settle, then look at the final state,
  // with the wall clock back on time for the rows that the quiet end writes.
  await Promise.all([...pending]);
  clock?.reset();
  await sleep(timing.expiresAfter + 4 * timing.retryEvery + 500);
  stopping = true;
  const final: FinalState = {
    ...began(),
    rows: await db.leaseRows(),
    liveHolders: live().flatMap((w) => [...w.holders].map(([slot, holder]) => ({ slot, holder }))),
  };

  await stopWorkers(workers);
  await Promise.all([...pending]);

  const ledger: LedgerRow[] = await db.ledger();
  await db.close();
  return { options, timing, startedAt, endedAt: Date.now(), records, faults, ledger, final };
}

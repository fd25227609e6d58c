/**
 * `locked`: another connection holds an exclusive lock on the file for 5 s, as long as
 * better-sqlite3's default busy timeout and far longer than the 50 ms we advise, under a
 * cluster whose processes serve a health endpoint: how late their event loops run, how long
 * their health endpoints take to answer, when the leader, unable to renew, steps down.
 */
import Database from 'better-sqlite3';
import { readClocks, sqliteLeaseStore } from 'observe-leadership';
import { eventually } from '../test-kit/eventually';
import { healthAnswersFor, healthPort, loopDelay } from '../test-kit/worker-probes';
import { sleep } from '../test-kit/worker-process';
import { performance } from 'node:perf_hooks';
import { Cluster, Distribution, distribution, Timing } from './cluster';

/** A lease short enough for the leader to lose it while the file is locked. */
export const lockedTiming: Timing = { renewEvery: 500, expiresAfter: 2_000, retryEvery: 1_000 };

const lockFor = 5_000;
const processes = 4;
/** Ms between two rounds of health requests to every process. */
const healthEvery = 20;

export interface LockedRun {
  lockFor: number;
  processes: number;
  trials: number;
  /** The worst event-loop delay seen while locked (ms, `monitorEventLoopDelay`'s max), in the leader and in any follower. */
  loopDelay: { leader: number; followers: number };
  /** Every health answer's time while locked (ms, as the benchmark's process saw it). */
  healthAnswers: Distribution;
  /** The same over as long a window just before each lock: the machine's noise, with nothing locked. */
  unlocked: { loopDelay: number; healthAnswers: Distribution };
  /** Ms from the end of the lease the leader last wrote to its `lost`, on the host's monotonic clock. */
  lostPastDeadline: Distribution;
  /** `elected` reports while the file was locked: 0 unless broken. */
  electedWhileLocked: number;
  overlaps: number;
  /**
   * The library's own calls on a connection with better-sqlite3's default busy timeout (5 s)
   * while another holds the lock, in the benchmark's process: how long each blocks (ms),
   * the worst of `calls` of each, and how many met the lock.
   */
  callsUnderLock: { calls: number; worst: Record<string, number>; metLock: number };
}

/** Times the library's operations, `calls` of each, on a fresh connection while `holder` keeps the file locked. */
function callsUnderLock(file: string, holder: Database.Database, calls: number): LockedRun['callsUnderLock'] {
  const db = new Database(file); // better-sqlite3's defaults: a 5 s busy timeout
  try {
    const store = sqliteLeaseStore(db);
    const reading = () => readClocks();
    const lease = { slot: 9, holder: 'bench', term: store.acquire(9, 'bench', reading(), 60_000).lease.term };
    const operations: Record<string, () => unknown> = {
      acquire: () => store.acquire(8, 'bench', reading(), 60_000),
      'follower attempt': () => store.acquire(9, 'other', reading(), 60_000),
      renew: () => store.renew(lease, reading(), 60_000),
      release: () => store.release({ ...lease, slot: 7 }),
      standBy: () => store.capabilities.standby.standBy(9, 'other', reading(), 60_000, 3),
      look: () => store.look(9, reading()),
    };
    holder.exec('BEGIN EXCLUSIVE');
    let metLock = 0;
    const worst: Record<string, number> = {};
    try {
      for (const [name, operation] of Object.entries(operations)) {
        worst[name] = 0;
        for (let i = 0; i < calls; i++) {
          const started = performance.now();
          try {
            operation();
          } catch {
            metLock += 1;
          }
          worst[name] = Math.max(worst[name], performance.now() - started);
        }
      }
    } finally {
      holder.exec('COMMIT');
    }
    return { calls, worst, metLock };
  } finally {
    db.close();
  }
}

export async function lockedRuns(cluster: Cluster, trials: number, random: () => number, calls: number): Promise<LockedRun> {
  const leaderDelays: number[] = [];
  const followerDelays: number[] = [];
  const answers: number[] = [];
  const lostPastDeadline: number[] = [];
  let electedWhileLocked = 0;
  const control = { loopDelay: [] as number[], answers: [] as number[] };
  const holder = new Database(cluster.file!, { timeout: 1_000 }); // taking the lock may wait for a moment
  try {
    await cluster.start(processes);
    const ports = await Promise.all(cluster.processes.map(healthPort));
    for (let trial = 0; trial < trials; trial++) {
      const leader = await cluster.leader();
      const renewals = leader.records.filter((r) => r.type === 'renewed').length;
      await eventually('a renewal', () => leader.records.filter((r) => r.type === 'renewed').length > renewals);
      await cluster.watched();
      /** The worst event-loop delay of each process, and every health answer, over `lockFor` ms of health requests. */
      const watch = async (into: number[]) => {
        await Promise.all(cluster.processes.map(loopDelay)); // starts the count
        into.push(...(await healthAnswersFor(ports, lockFor, healthEvery)));
        return Promise.all(cluster.processes.map(loopDelay));
      };
      // The same window without the lock first: what this machine's noise alone gives.
      const quiet = await watch(control.answers);
      control.loopDelay.push(...quiet);
      await sleep(random() * lockedTiming.renewEvery); // anywhere in the renewal cycle
      holder.exec('BEGIN EXCLUSIVE');
      const lockedAt = Date.now();
      const delays = await watch(answers);
      holder.exec('COMMIT');
      const unlockedAt = Date.now();
      cluster.processes.forEach((worker, i) => (worker === leader ? leaderDelays : followerDelays).push(delays[i]));
      const lost = await eventually('the leader’s lost', () => leader.records.find((r) => r.type === 'lost' && r.at >= lockedAt));
      const deadline = Math.max(
        ...leader.records.filter((r) => r.mono! < lost.mono! && r.monoExpiresAt !== undefined).map((r) => r.monoExpiresAt!),
      );
      lostPastDeadline.push(lost.mono! - deadline);
      electedWhileLocked += cluster.processes
        .flatMap((w) => w.records)
        .filter((r) => r.type === 'elected' && r.at >= lockedAt && r.at < unlockedAt).length;
      // Whoever it is (the old leader may win again), a leader once the lock is gone.
      const all = () => cluster.processes.flatMap((w) => w.records);
      await eventually('a leader after the lock', () => all().find((r) => r.type === 'elected' && r.at >= unlockedAt), 60_000);
    }
    const overlaps = cluster.overlaps();
    await cluster.stop(); // the calls are timed against the lock alone
    return {
      lockFor,
      processes,
      trials,
      loopDelay: { leader: Math.max(...leaderDelays), followers: Math.max(...followerDelays) },
      healthAnswers: distribution(answers),
      unlocked: { loopDelay: Math.max(...control.loopDelay), healthAnswers: distribution(control.answers) },
      lostPastDeadline: distribution(lostPastDeadline),
      electedWhileLocked,
      overlaps,
      callsUnderLock: callsUnderLock(cluster.file!, holder, calls),
    };
  } finally {
    holder.close();
    await cluster.stop();
  }
}

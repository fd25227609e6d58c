/**
 * The SQLite drivers side by side: each runs a cluster of its own on its runtime
 * (better-sqlite3 on this Node.js, node:sqlite on Node.js 24, bun:sqlite on Bun; see
 * test-kit/runtimes.ts), with the same trials as better-sqlite3's own scenarios: graceful
 * handoffs, crash takeovers (SIGKILL, the standbys watching), and what an idle cluster costs.
 */
import { execFileSync } from 'node:child_process';
import { bunRuntime, nodeRuntime } from '../test-kit/runtimes';
import type { JournalMode, SqliteDriver } from '../test-kit/worker-database';
import { Cluster, Distribution, distribution, handoffs, takeovers, Timing } from './cluster';
import { IdleRun, idleRun } from './idle';

const sqliteDrivers: readonly SqliteDriver[] = ['better-sqlite3', 'node:sqlite', 'bun:sqlite'];

/** One driver in one journal mode: what its trials measured. */
export interface DriverRun {
  driver: SqliteDriver;
  /** The runtime, as it names itself (`v24.22.3`, `1.4.5`). */
  runtime: string;
  journal: JournalMode;
  handoff: Distribution;
  takeover: Distribution;
  /** Of the takeover, until the kernel closed the dead leader's sockets. */
  kernelClose: Distribution;
  /** Tenures that believed they led at once, over its handoff and takeover trials: 0 unless broken. */
  overlaps: number;
  idle: IdleRun;
}

export interface DriverTrials {
  processes: number;
  handoffs: number;
  takeovers: number;
  idleWarmUp: number;
  idleSeconds: number;
}

/** The runtime that runs a driver's workers. */
function runtimeOf(driver: SqliteDriver): string {
  if (driver === 'node:sqlite') return nodeRuntime('24.22.3').node;
  if (driver === 'bun:sqlite') return bunRuntime();
  return process.execPath;
}

/**
 * Every driver in `journal`: handoffs and takeovers one driver after another (they time
 * milliseconds: nothing else runs meanwhile), then the idle clusters of all three at once,
 * each on its own file (idle, they hardly disturb each other).
 */
export async function driverRuns(
  folder: string,
  journal: JournalMode,
  { handoffTiming, crashTiming }: { handoffTiming: Timing; crashTiming: Timing },
  trials: DriverTrials,
  random: () => number,
): Promise<DriverRun[]> {
  const clusterOf = (driver: SqliteDriver, timing: Timing) =>
    new Cluster('candidate', timing, folder, journal, { extra: { driver }, runtime: runtimeOf(driver) });
  const within = async <T>(cluster: Cluster, body: (cluster: Cluster) => Promise<T>): Promise<T & { overlaps: number }> => {
    try {
      await cluster.start(trials.processes);
      const result = await body(cluster);
      return { ...result, overlaps: cluster.overlaps() };
    } finally {
      await cluster.stop();
    }
  };
  const timed = [];
  for (const driver of sqliteDrivers) {
    const handoff = await within(clusterOf(driver, handoffTiming), async (cluster) => ({
      latencies: await handoffs(cluster, trials.handoffs, random),
    }));
    const takeover = await within(clusterOf(driver, crashTiming), (cluster) =>
      takeovers(cluster, trials.takeovers, random, { watched: true, spread: 1_000 }),
    );
    timed.push({ driver, handoff, takeover });
  }
  const idle = await Promise.all(
    sqliteDrivers.map((driver) => idleRun(clusterOf(driver, handoffTiming), trials.processes, trials.idleWarmUp, trials.idleSeconds)),
  );
  return timed.map(({ driver, handoff, takeover }, i) => ({
    driver,
    runtime: execFileSync(runtimeOf(driver), ['--version'], { encoding: 'utf8' }).trim(),
    journal,
    handoff: distribution(handoff.latencies),
    takeover: distribution(takeover.fromKill),
    kernelClose: distribution(takeover.kernelClose),
    overlaps: handoff.overlaps + takeover.overlaps,
    idle: idle[i],
  }));
}

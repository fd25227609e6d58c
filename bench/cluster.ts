/** The worker clusters of the benchmark, and the trials that every scenario shares. */
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { Pool } from 'pg';
import { handOff } from 'observe-leadership';
import { postgresLeaseStore } from 'observe-leadership/postgres';
import { join } from 'node:path';
import { PostgresTarget } from '../test-kit/chaos-database';
import { connectToLeader, watcherCount } from '../test-kit/endpoint-sockets';
import { eventually } from '../test-kit/eventually';
import { beliefSegments, overlappingBeliefs, WorkerRecord } from '../test-kit/history';
import { JournalMode, openWorkerDatabase } from '../test-kit/worker-database';
import type { WorkerOptions } from '../test-kit/worker-options';
import { sleep, stopWorkers, WorkerKind, WorkerProcess } from '../test-kit/worker-process';

export interface Timing {
  renewEvery: number;
  expiresAfter: number;
  retryEvery: number;
}

/** The library's defaults, which the original worker shares (retryEvery aside: it has none). */
export const defaults: Timing = { renewEvery: 30_000, expiresAfter: 60_000, retryEvery: 1_000 };
/**
 * A crash on PostgreSQL waits for the lease (no host can tell another's crash from a
 * partition): a one-second lease keeps its trials short, and the smoke run's.
 */
export const shortLease: Timing = { renewEvery: 300, expiresAfter: 1_000, retryEvery: 1_000 };

export interface Distribution {
  samples: number[];
  p50: number;
  p99: number;
  p999: number;
  worst: number;
}

export interface Comparison {
  scenario: string;
  unit: string;
  ours: Distribution;
  /** The original worker's statements, where the scenario ran them too. */
  original?: Distribution;
}

export function distribution(samples: number[]): Distribution {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  return { samples, p50: at(0.5), p99: at(0.99), p999: at(0.999), worst: sorted.at(-1) ?? NaN };
}

/** A host of a fleet: how to run a program there, and the server's URL from there. */
export interface Host {
  readonly launcher: string[];
  readonly url: string;
}

/** Where a cluster's workers run and what else they are given, beyond their kind and timing. */
export interface ClusterPlace {
  /** A fresh schema of this server instead of a fresh file. */
  readonly postgres?: PostgresTarget;
  /** PostgreSQL from several hosts: process i runs on host i mod their number, and reaches the server at its URL. */
  readonly hosts?: readonly Host[];
  /** More options for every worker (a health endpoint, a SQLite driver, say). */
  readonly extra?: Partial<WorkerOptions>;
  /** The runtime that runs every worker (see test-kit/runtimes.ts). @default this process's Node.js */
  readonly runtime?: string;
}

/** Worker processes of one kind on one fresh database file, or one fresh PostgreSQL schema. */
export class Cluster {
  readonly processes: WorkerProcess[] = [];
  readonly file: string | undefined;
  readonly postgres: PostgresTarget | undefined;
  private readonly hosts: readonly Host[];
  private readonly extra: Partial<WorkerOptions>;
  private readonly runtime: string | undefined;

  constructor(
    readonly kind: WorkerKind,
    readonly timing: Timing,
    folder: string,
    readonly journal: JournalMode,
    { postgres, hosts = [], extra = {}, runtime }: ClusterPlace = {},
  ) {
    this.postgres = postgres;
    this.hosts = hosts;
    this.extra = extra;
    this.runtime = runtime;
    if (postgres) return;
    this.file = join(mkdtempSync(join(folder, `${kind}-`)), 'bench.db');
    openWorkerDatabase(this.file, { journal, busyTimeout: 1_000 }).close(); // in its journal mode before the workers start
  }

  spawn(): WorkerProcess {
    const name = `${this.kind}${this.processes.length + 1}`;
    const host = this.hosts[this.processes.length % this.hosts.length] as Host | undefined;
    const postgres = this.postgres && host ? { ...this.postgres, url: host.url } : this.postgres;
    const options = { file: this.file, postgres, journal: this.journal, ...this.timing, ...this.extra };
    const worker = new WorkerProcess(
      name,
      this.kind,
      options,
      () => undefined,
      (text) => process.stderr.write(text),
      host?.launcher,
      this.runtime,
    );
    this.processes.push(worker);
    return worker;
  }

  async start(count: number): Promise<void> {
    const started = Array.from({ length: count }, () => this.spawn());
    await eventually('every worker campaigning', () => started.every((w) => w.records.some((r) => r.type === 'subscribed')), 120_000);
    await this.leader();
  }

  alive(): WorkerProcess[] {
    return this.processes.filter((w) => w.alive);
  }

  leader(): Promise<WorkerProcess> {
    return eventually('a leader', () => this.alive().find((w) => w.leading.has(0)), 120_000);
  }

  /** The first `elected` reported at or after `since` by any process but `except`. */
  elected(since: number, except: WorkerProcess): Promise<WorkerRecord> {
    return eventually(
      'a new leader',
      () =>
        this.processes
          .filter((w) => w !== except)
          .flatMap((w) => w.records)
          .find((r) => r.type === 'elected' && r.at >= since),
      120_000,
    );
  }

  /** Waits until the leader's standbys (up to three) are connected to its endpoint. */
  watched(): Promise<unknown> {
    const standbys = Math.min(3, this.alive().length - 1);
    return eventually('the standbys watching the leader', () => watcherCount(this.file!) >= standbys, 60_000);
  }

  /** Pairs of tenures that believed they led at once, by the processes' reports: none, or the election is broken. */
  overlaps(): number {
    return overlappingBeliefs(this.processes.flatMap((w) => beliefSegments(w.records, 'monotonic'))).length;
  }

  errors(): number {
    return this.count('error');
  }

  /** How many reports of that type every process made so far. */
  count(type: string): number {
    return this.processes.flatMap((w) => w.records).filter((r) => r.type === type).length;
  }

  stop(): Promise<void> {
    return stopWorkers(this.processes);
  }
}

/** Graceful handoff: the leader releases; time from its release to the next `elected`. */
export async function handoffs(cluster: Cluster, trials: number, random: () => number): Promise<number[]> {
  const latencies: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const leader = await cluster.leader();
    // At a random point of the followers' polling, so that the original's phases do not
    // line up with the trials.
    await sleep(random() * cluster.timing.retryEvery);
    const mark = Date.now();
    leader.send('unsubscribe');
    const released = await eventually('the release', () => leader.records.find((r) => r.type === 'unsubscribed' && r.at >= mark));
    const elected = await cluster.elected(released.at, leader);
    latencies.push(elected.at - released.at);
    leader.send('subscribe');
    await eventually('the old leader campaigning again', () => leader.records.find((r) => r.type === 'subscribed' && r.at >= mark));
    await sleep(20);
  }
  return latencies;
}

/**
 * Crash takeover: SIGKILL the leader; time to the next `elected`, from the kill and past the
 * lease's expiry. With `watched`, once the standbys watch the leader (a steady cluster; a
 * crash before they connect, within ms of an election, waits for the lease), at a random
 * point of the next `spread` ms; else at a random point of the renewal cycle.
 */
export async function takeovers(
  cluster: Cluster,
  trials: number,
  random: () => number,
  { watched = false, spread = cluster.timing.renewEvery } = {},
): Promise<{ fromKill: number[]; pastExpiry: number[]; kernelClose: number[] }> {
  const fromKill: number[] = [];
  const pastExpiry: number[] = [];
  const kernelClose: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const leader = await cluster.leader();
    if (watched) await cluster.watched();
    const witness = watched && cluster.file !== undefined ? await endpointWitness(cluster.file) : undefined;
    await sleep(random() * spread);
    const killedAt = Date.now();
    leader.signal('SIGKILL');
    await leader.exited;
    const elected = await cluster.elected(killedAt, leader);
    fromKill.push(elected.at - killedAt);
    pastExpiry.push((elected.mono as number) - lastBeliefEnd(leader));
    const closedAt = await witness?.closed;
    if (closedAt !== undefined) kernelClose.push(closedAt - killedAt);
    const replacement = cluster.spawn();
    await eventually('the replacement campaigning', () => replacement.records.some((r) => r.type === 'subscribed'), 60_000);
  }
  return { fromKill, pastExpiry, kernelClose };
}

/**
 * A connection of the benchmark's own to the leader's endpoint, as a standby's, once made:
 * `closed` is when (Unix ms) the kernel closed it, the earliest moment anyone can know that
 * the leader's process is dead (`undefined` if nothing came within 10 s). `undefined` if it
 * could not connect.
 */
async function endpointWitness(file: string): Promise<{ closed: Promise<number | undefined> } | undefined> {
  const socket = connectToLeader(file);
  if (socket === undefined) return undefined;
  socket.on('error', () => undefined);
  socket.resume(); // the greeting; a paused socket would not see the end
  const connected = await new Promise<boolean>((resolve) => {
    socket.once('connect', () => resolve(true));
    socket.once('close', () => resolve(false));
  });
  if (!connected) return undefined;
  const closed = new Promise<number | undefined>((resolve) => socket.once('close', () => resolve(Date.now())));
  return { closed: Promise.race([closed, sleep(10_000).then(() => (socket.destroy(), undefined))]) };
}

/** The end of the last belief `worker` reported, on the host's monotonic clock. */
function lastBeliefEnd(worker: WorkerProcess): number {
  return Math.max(...worker.records.filter((r) => r.monoExpiresAt !== undefined).map((r) => r.monoExpiresAt!));
}

/**
 * A candidate that finds a lease nobody it knows watched: the whole cluster (one process)
 * killed, then a fresh process started. Time from its campaign's start to its `elected`,
 * and past the dead leader's belief, on the host's monotonic clock. On PostgreSQL it waits
 * one lease from its first look, whatever the server's clock says of the lease; on SQLite
 * the deadline tells it at once.
 */
export async function coldStarts(cluster: Cluster, trials: number): Promise<{ fromStart: number[]; pastExpiry: number[] }> {
  const fromStart: number[] = [];
  const pastExpiry: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const leader = await cluster.leader();
    await sleep(cluster.timing.renewEvery / 2);
    for (const worker of cluster.alive()) worker.signal('SIGKILL');
    await Promise.all(cluster.processes.map((w) => w.exited));
    // Long after the lease ended: the server's clock says so, and only watching can tell.
    await sleep(2 * cluster.timing.expiresAfter);
    const fresh = cluster.spawn();
    const subscribed = await eventually(
      'the fresh candidate campaigning',
      () => fresh.records.find((r) => r.type === 'subscribed'),
      60_000,
    );
    const elected = await eventually('the fresh candidate elected', () => fresh.records.find((r) => r.type === 'elected'), 120_000);
    fromStart.push((elected.mono as number) - (subscribed.mono as number));
    pastExpiry.push((elected.mono as number) - lastBeliefEnd(leader));
  }
  return { fromStart, pastExpiry };
}

/**
 * Handoffs to a named standing candidate, asked from this process as `observe-leadership
 * handoff` asks (a read-only connection on SQLite, a store of its own on PostgreSQL), to a
 * follower drawn at random: time from the request to the successor's `elected`, and how many
 * trials anybody else won (none while the named one is alive).
 */
export async function namedHandoffs(
  cluster: Cluster,
  trials: number,
  random: () => number,
): Promise<{ latencies: number[]; othersElected: number }> {
  const latencies: number[] = [];
  let othersElected = 0;
  const { db, close } = await handoffConnection(cluster);
  try {
    for (let trial = 0; trial < trials; trial++) {
      const leader = await cluster.leader();
      const followers = cluster.alive().filter((w) => w !== leader && w.holder !== undefined);
      const successor = followers[Math.floor(random() * followers.length)];
      await sleep(random() * cluster.timing.retryEvery);
      const mark = Date.now();
      // A handoff the named one did not take is counted below, not thrown: the run goes on.
      await handOff(db, { to: successor.holder }).catch(() => undefined);
      const elected = await cluster.elected(mark, leader);
      if (elected.holder !== successor.holder) {
        // Never expected while the named one lives: what each of the three last said, to find why.
        othersElected++;
        const winner = cluster.alive().find((w) => w.holder === elected.holder);
        const last = (role: string, w: WorkerProcess | undefined) =>
          `${role} ${w?.holder}:\n  ${(w?.records ?? [elected])
            .slice(-6)
            .map((r) => JSON.stringify(r))
            .join('\n  ')}`;
        console.error(
          `another candidate won a handoff asked at ${mark}\n${[last('leader', leader), last('named', successor), last('winner', winner)].join('\n')}`,
        );
      }
      latencies.push(elected.at - mark);
      await sleep(20);
    }
  } finally {
    await close();
  }
  return { latencies, othersElected };
}

/** What `handOff` asks through, in this process: the cluster's file read-only, or a store of its own on the cluster's schema. */
async function handoffConnection(cluster: Cluster): Promise<{ db: Parameters<typeof handOff>[0]; close: () => Promise<void> }> {
  if (cluster.postgres === undefined) {
    const db = new Database(cluster.file!, { readonly: true });
    return { db, close: async () => void db.close() };
  }
  const pool = new Pool({ connectionString: cluster.postgres.url });
  const store = postgresLeaseStore(pool, { schema: cluster.postgres.schema });
  return {
    db: store,
    close: async () => {
      await store.settled();
      await pool.end();
    },
  };
}

/**
 * PostgreSQL at fleet scale: processes on several hosts (network namespaces, each on a veth
 * link of its own to this one) against one server that keeps PostgreSQL's default
 * `max_connections` of 100, with pg's pool defaults and the library's.
 */
import { Pool } from 'pg';
import { PostgresTarget } from '../test-kit/chaos-database';
import { networkNamespace, NetworkNamespace } from '../test-kit/network-namespace';
import { startPostgresServer } from '../test-kit/postgres-server';
import { sleep } from '../test-kit/worker-process';
import { Cluster, defaults, Distribution, distribution, handoffs, Host, namedHandoffs, shortLease, takeovers } from './cluster';

export interface FleetSize {
  hosts: number;
  perHost: number;
  /** Seconds of the idle window, after `warmUp` seconds. */
  idleSeconds: number;
  warmUp: number;
  handoffs: number;
  takeovers: number;
}

/** The server's connections from the workers, sampled: their total, and the most any one process held. */
interface ConnectionCounts {
  /** The most at once over the window, from all the workers. */
  total: number;
  /** The most any one process held at a sample. */
  perProcess: number;
  /** The most the server had at once, from anybody (the benchmark's own sampling connection included). */
  server: number;
}

export interface FleetResult {
  server: string;
  maxConnections: number;
  hosts: number;
  processes: number;
  /** Idle with the defaults: connections, and elections, losses and errors in the window. */
  idle: { seconds: number; connections: ConnectionCounts; elections: number; lost: number; errors: number };
  /** Graceful handoffs with the defaults, and the connections meanwhile. */
  handoff: Distribution;
  /** Handoffs to a named successor, asked from the benchmark's process; and how many trials another won. */
  namedHandoff: Distribution;
  namedHandoffMisses: number;
  handoffConnections: ConnectionCounts;
  /** SIGKILL of the leader, with a short lease: ms from the kill to the next election. */
  takeover: Distribution;
  takeoverPastExpiry: Distribution;
  takeoverLease: number;
  /** Tenures that believed they led at once, over every trial: 0 or the election is broken. */
  overlaps: number;
  /** Error events over the whole handoff run, start-up included. */
  errors: number;
}

/** Samples the workers' connections every `every` ms until `stop()`. */
function sampleConnections(admin: Pool, every = 250): { stop(): Promise<ConnectionCounts> } {
  const counts: ConnectionCounts = { total: 0, perProcess: 0, server: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await admin.query<{ total: number; per_process: number | null; server: number }>(
        `SELECT count(*) FILTER (WHERE application_name LIKE 'chaos-%')::int AS total,
           (SELECT max(n)::int FROM (SELECT count(*) AS n FROM pg_stat_activity WHERE application_name LIKE 'chaos-%' GROUP BY application_name) AS each) AS per_process,
           count(*) FILTER (WHERE backend_type = 'client backend')::int AS server
         FROM pg_stat_activity`,
      );
      counts.total = Math.max(counts.total, rows[0].total);
      counts.perProcess = Math.max(counts.perProcess, rows[0].per_process ?? 0);
      counts.server = Math.max(counts.server, rows[0].server);
      await sleep(every);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return counts;
    },
  };
}

export async function fleet(size: FleetSize, random: () => number, log: (line: string) => void): Promise<FleetResult> {
  // A server of its own, whatever the environment names: its settings are the point.
  const server = await startPostgresServer({ maxConnections: 100, fromNamespaces: true, own: true });
  const namespaces: NetworkNamespace[] = [];
  const admin = new Pool({ connectionString: server.url, max: 1 });
  try {
    const port = new URL(server.url).port;
    for (let index = 0; index < size.hosts; index++) namespaces.push(networkNamespace(index));
    const hosts: Host[] = namespaces.map((namespace) => ({
      launcher: namespace.launcher,
      url: `postgres://test@${namespace.hostAddress}:${port}/postgres`,
    }));
    const version = (await admin.query('SHOW server_version')).rows[0].server_version as string;
    const maxConnections = Number((await admin.query('SHOW max_connections')).rows[0].max_connections);
    const processes = size.hosts * size.perHost;
    const target = (name: string): PostgresTarget => ({ url: server.url, schema: `fleet_${name}_${Date.now()}` });

    // The defaults: idle, then graceful handoffs.
    const steady = new Cluster('candidate', defaults, '', 'delete', { postgres: target('steady'), hosts });
    let idle: FleetResult['idle'];
    let handoff: number[];
    let named: { latencies: number[]; othersElected: number };
    let handoffConnections: ConnectionCounts;
    let overlaps: number;
    let errors: number;
    try {
      await steady.start(processes);
      await sleep(size.warmUp * 1000);
      const count = (type: string, since: number) =>
        steady.processes.flatMap((w) => w.records).filter((r) => r.type === type && r.at >= since).length;
      const from = Date.now();
      const sampling = sampleConnections(admin);
      await sleep(size.idleSeconds * 1000);
      const connections = await sampling.stop();
      idle = {
        seconds: size.idleSeconds,
        connections,
        elections: count('elected', from),
        lost: count('lost', from),
        errors: count('error', from),
      };
      log(`fleet idle: ${JSON.stringify(idle)}`);
      const during = sampleConnections(admin);
      handoff = await handoffs(steady, size.handoffs, random);
      named = await namedHandoffs(steady, size.handoffs, random);
      handoffConnections = await during.stop();
      overlaps = steady.overlaps();
      errors = steady.errors();
    } finally {
      await steady.stop();
    }
    log(`fleet handoffs done`);

    // Crashes: a short lease, so that the trials take seconds, not minutes each.
    const crashing = new Cluster('candidate', shortLease, '', 'delete', { postgres: target('crash'), hosts });
    let takeover: { fromKill: number[]; pastExpiry: number[] };
    try {
      await crashing.start(processes);
      takeover = await takeovers(crashing, size.takeovers, random);
      overlaps += crashing.overlaps();
    } finally {
      await crashing.stop();
    }
    log(`fleet takeovers done`);
    return {
      server: `PostgreSQL ${version}`,
      maxConnections,
      hosts: size.hosts,
      processes,
      idle,
      handoff: distribution(handoff),
      namedHandoff: distribution(named.latencies),
      namedHandoffMisses: named.othersElected,
      handoffConnections,
      takeover: distribution(takeover.fromKill),
      takeoverPastExpiry: distribution(takeover.pastExpiry),
      takeoverLease: shortLease.expiresAfter,
      overlaps,
      errors,
    };
  } finally {
    await admin.end();
    for (const namespace of namespaces) namespace.remove();
    server.stop();
  }
}

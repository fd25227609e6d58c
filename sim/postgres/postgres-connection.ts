/**
 * A simulated process's PostgreSQL connections: the real store (`postgresLeaseStore`) on a
 * pool of its own (sim-pool.ts) on the run's server (sim-server.ts).
 */
import type { Pool } from 'pg';
import type { Lease } from '../../src/core/leadership-event';
import type { LeaseStore } from '../../src/store/lease-store';
import { PostgresLeaseStore, postgresLeaseStore } from '../../src/store/postgres/postgres-lease-store';
import type { FencedOutcome, SimConnection } from '../sim-connection';
import type { SimProcessClock, Timeline } from '../timeline';
import { SimPool } from './sim-pool';
import { runSchema, SimServer } from './sim-server';

export class PostgresConnection implements SimConnection {
  readonly pg: PostgresLeaseStore;
  readonly store: LeaseStore;
  private readonly pool: SimPool;

  constructor(
    server: SimServer,
    timeline: Timeline,
    owner: SimProcessClock,
    /** Ms a new connection takes to open. */
    opening: () => number,
    /** The store as the campaigns see it (traced, its takes noted). */
    seen: (store: PostgresLeaseStore) => LeaseStore,
  ) {
    this.pool = new SimPool(server, timeline, owner, opening);
    this.pg = postgresLeaseStore(this.pool as unknown as Pool, { schema: runSchema });
    this.store = seen(this.pg);
  }

  get open(): boolean {
    return !this.pool.ending;
  }

  /** The server ends every connection of the process (`pg_terminate_backend`): its store connects again. */
  close(): 'cut' {
    for (const client of this.pool.clientsOpen()) {
      client.cut(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    }
    return 'cut';
  }

  kill(): void {
    this.pool.closeAll();
  }

  write(lease: Lease, done: (outcome: FencedOutcome) => void): void {
    this.pg
      .fenced(lease, async (client) => {
        const values = [lease.slot, lease.holder, lease.term];
        await client.query(`INSERT INTO ${runSchema}.sim_ledger (slot, holder, term) VALUES ($1, $2, $3)`, values);
        const { rows } = await client.query<{ holder: string; term: string; left: string }>(
          `SELECT holder, term, expires_at - floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS left
            FROM ${runSchema}.worker_leadership WHERE slot = $1`,
          [lease.slot],
        );
        const [row] = rows;
        return row && { holder: row.holder, term: Number(row.term), left: Number(row.left) };
      })
      .then(
        (tenure) => done({ tenure }),
        (error: { code?: string; message?: string }) => done({ refused: error.code ?? `${error.message}` }),
      );
  }
}

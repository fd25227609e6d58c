/**
 * The chaos harness's own look at the database its workers share: the ledger table that
 * fenced writes go to, a lock it can hold to stall every writer, and the rows it reads at
 * the end. One implementation per kind of database, as the library's stores.
 */
import type Database from 'better-sqlite3';
import { Pool, PoolClient } from 'pg';
import { LedgerRow } from './history';
import { JournalMode, ledgerTable, openWorkerDatabase } from './worker-database';

/** A slot's row as the harness reads it at the end of a run. */
export interface LeaseRow {
  slot: number;
  holder: string;
  expiresAt: number;
}

export interface ChaosDatabase {
  /** Takes the lock that stalls every writer; `false` if it could not. */
  holdLock(): Promise<boolean>;
  releaseLock(): Promise<void>;
  leaseRows(): Promise<LeaseRow[]>;
  /** The holders of a slot's live standby places; `undefined` where the store keeps none. */
  standbys(slot: number): Promise<string[] | undefined>;
  ledger(): Promise<LedgerRow[]>;
  close(): Promise<void>;
}

/** Where PostgreSQL workers meet: the server, and a schema of the run's own. */
export interface PostgresTarget {
  url: string;
  schema: string;
}

export function sqliteChaosDatabase(file: string, journal: JournalMode): ChaosDatabase {
  const db: Database.Database = openWorkerDatabase(file, { journal, busyTimeout: 1_000 });
  db.exec(ledgerTable);
  return {
    holdLock: async () => {
      try {
        db.exec('BEGIN IMMEDIATE');
        return true;
      } catch {
        return false;
      }
    },
    releaseLock: async () => void db.exec('COMMIT'),
    leaseRows: async () =>
      db.prepare('SELECT slot, holder, expires_at AS expiresAt FROM worker_leadership ORDER BY slot').all() as LeaseRow[],
    standbys: async (slot) => {
      try {
        return db
          .prepare('SELECT holder FROM worker_leadership_standby WHERE slot = ? AND expires_at >= ?')
          .pluck()
          .all(slot, Date.now()) as string[];
      } catch {
        return []; // locked, or no table yet
      }
    },
    ledger: async () => db.prepare('SELECT id, slot, holder, term, seq, at, mono FROM chaos_ledger ORDER BY id').all() as LedgerRow[],
    close: async () => void db.close(),
  };
}

/** The ledger of PostgreSQL workers: ids in insert order, which fencing makes commit order across terms. */
export const postgresLedgerTable = (schema: string) => `CREATE SCHEMA IF NOT EXISTS "${schema}";
  CREATE TABLE IF NOT EXISTS "${schema}".chaos_ledger (
    id bigserial PRIMARY KEY, slot int NOT NULL, holder text NOT NULL, term bigint NOT NULL, seq int NOT NULL, at bigint NOT NULL, mono double precision NOT NULL)`;

export async function postgresChaosDatabase({ url, schema }: PostgresTarget): Promise<ChaosDatabase> {
  const pool = new Pool({ connectionString: url, max: 3, application_name: 'chaos-orchestrator' });
  pool.on('error', () => undefined);
  await pool.query(postgresLedgerTable(schema));
  let locker: PoolClient | undefined;
  const leases = `"${schema}".worker_leadership`;
  return {
    // Every read and write of a lease waits behind it, as behind SQLite's write lock.
    holdLock: async () => {
      const client = await pool.connect();
      try {
        await client.query(`BEGIN; LOCK TABLE ${leases} IN ACCESS EXCLUSIVE MODE`);
        locker = client;
        return true;
      } catch {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
        return false;
      }
    },
    releaseLock: async () => {
      const client = locker;
      locker = undefined;
      await client?.query('COMMIT');
      client?.release();
    },
    leaseRows: async () =>
      (await pool.query(`SELECT slot, holder, expires_at FROM ${leases} ORDER BY slot`)).rows.map((row) => ({
        slot: Number(row.slot),
        holder: row.holder,
        expiresAt: Number(row.expires_at),
      })),
    standbys: async () => undefined,
    ledger: async () =>
      (await pool.query(`SELECT id, slot, holder, term, seq, at, mono FROM "${schema}".chaos_ledger ORDER BY id`)).rows.map((row) => ({
        id: Number(row.id),
        slot: row.slot,
        holder: row.holder,
        term: Number(row.term),
        seq: row.seq,
        at: Number(row.at),
        mono: Number(row.mono),
      })),
    close: () => pool.end(),
  };
}

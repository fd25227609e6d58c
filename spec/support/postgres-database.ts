import { Pool, PoolConfig } from 'pg';
import { databaseUrlVariable } from '../../test-kit/postgres-server';

/** The server of this run (see postgres-global-setup.ts). */
export function testDatabaseUrl(): string {
  const url = process.env[databaseUrlVariable];
  if (!url) throw new Error(`${databaseUrlVariable} is not set: Jest's global setup starts a server and sets it`);
  return url;
}

/**
 * A pool on the test server and a schema of its own, so that specs running side by side
 * (and a server given by URL) never see each other's leases. `drop()` ends it all.
 */
export interface TestSchema {
  readonly pool: Pool;
  readonly schema: string;
  drop(): Promise<void>;
}

export function testSchema(config: PoolConfig = {}): TestSchema {
  const pool = new Pool({ connectionString: testDatabaseUrl(), connectionTimeoutMillis: 5_000, ...config });
  const schema = `spec_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  return {
    pool,
    schema,
    drop: async () => {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    },
  };
}

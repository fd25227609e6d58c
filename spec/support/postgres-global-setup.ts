import { pgbouncerUrlVariable, startPgBouncer } from '../../test-kit/pgbouncer';
import { databaseUrlVariable, startPostgresServer } from '../../test-kit/postgres-server';

/**
 * One PostgreSQL server for the whole run, and one PgBouncer in front of it, started before
 * the first spec: Jest's workers and the processes they start find them through the
 * environment. A URL already in the environment means a server (or a PgBouncer) to use as
 * it is.
 */
export default async function startServer(): Promise<void> {
  const server = await startPostgresServer();
  process.env[databaseUrlVariable] = server.url;
  const pgbouncer = await startPgBouncer(server.url).catch((error: unknown) => {
    server.stop();
    throw error;
  });
  process.env[pgbouncerUrlVariable] = pgbouncer.url('transaction');
  (globalThis as { stopPostgresServer?: () => void }).stopPostgresServer = () => {
    pgbouncer.stop();
    server.stop();
  };
}

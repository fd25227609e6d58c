import { databaseUrlVariable, startPostgresServer } from '../../chaos/postgres-server';

/**
 * One PostgreSQL server for the whole run, started before the first spec: Jest's workers
 * and the processes they start find it through the environment. A URL already in the
 * environment means a server to use as it is.
 */
export default async function startServer(): Promise<void> {
  const server = await startPostgresServer();
  process.env[databaseUrlVariable] = server.url;
  (globalThis as { stopPostgresServer?: () => void }).stopPostgresServer = () => server.stop();
}

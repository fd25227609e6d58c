import type { Pool, PoolClient } from 'pg';
import { LeadershipError } from '../../core/leadership-error';

/**
 * Runs `work` with a client of `pool` inside one transaction: commits what it did if it
 * resolves, rolls back and rethrows if it throws. A client whose connection broke is
 * destroyed rather than lent again. While the client is held, the server may end its
 * session (an idle-in-transaction timeout, an administrator): `pg` reports that as an
 * `error` event, which would end the process if nobody listened, so it is listened for.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => (broken = error);
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    const commit = await client.query('COMMIT');
    // PostgreSQL answers COMMIT with ROLLBACK when a statement of the transaction had failed.
    if (commit.command !== 'COMMIT') {
      throw new LeadershipError('DATABASE_ERROR', 'The transaction was rolled back: a statement inside it had failed');
    }
    return result;
  } catch (error) {
    if (broken === undefined) await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

import type { QueryResultRow } from 'pg';

/** How the PostgreSQL store's capabilities run their statements: the store's own way, one statement at a time on its session. */
export interface PostgresRunner {
  /** Runs `run` once the schema is made (and the session open, if anybody listens); its error as a `LeadershipError`. */
  operation<T>(run: () => Promise<T>): Promise<T>;
  /** One statement. */
  query<R extends QueryResultRow>(text: string, values: unknown[]): Promise<R[]>;
  /** Once the session is open, if anybody listens here: a statement sent before would take a second connection of the pool. */
  listened(): Promise<void>;
}

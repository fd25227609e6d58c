import type { QueryResultRow } from 'pg';
import { LeadershipError } from '../../core/leadership-error';

/** What the privilege statement finds (see `statementsFor`). */
interface Privileges extends QueryResultRow {
  role: string;
  standby: boolean;
  missing: string[];
  sequence: boolean;
}

/**
 * Checks that this role may campaign (write the table, draw terms) on a server that
 * accepts writes, so that a role that may only read learns it when its candidate starts,
 * not when the slot first falls free: `DATABASE_READONLY` if not.
 */
export async function checkMayCampaign(
  query: (text: string, values: unknown[]) => Promise<QueryResultRow[]>,
  statement: string,
  { table, termSequence }: { table: string; termSequence: string },
): Promise<void> {
  const [found] = (await query(statement, [table, termSequence])) as Privileges[];
  if (found.standby) {
    throw new LeadershipError(
      'DATABASE_READONLY',
      'The server is a standby, which accepts no writes: candidates must connect to the primary',
    );
  }
  const missing: string[] = [];
  if (found.missing.length > 0) missing.push(`${found.missing.join(', ')} on ${table}`);
  if (!found.sequence) missing.push(`USAGE on ${termSequence}`);
  if (missing.length > 0) {
    throw new LeadershipError(
      'DATABASE_READONLY',
      `Role ${found.role} may not campaign: it lacks ${missing.join(', ')} (grant them, or only watch with observeLeader)`,
    );
  }
}

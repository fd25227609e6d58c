/*
 * The SQLite store's SQL: every statement it prepares, on the original worker's table and
 * the companion tables of sqlite-schema.ts.
 */

/*
 * A tenure is still ours while the row keeps our holder and the companion table keeps our
 * term: every takeover, by us or by the original worker's statements, advances the term
 * (see sqlite-schema.ts). Renew and release both insist on it, so a renewal that lands
 * after a long pause can only succeed if nobody held the slot in between, and a late
 * release can never free somebody else's tenure.
 */
export const ownTenure = `slot = @slot AND holder = @holder
  AND (SELECT term FROM worker_leadership_term WHERE slot = @slot) = @term`;

/**
 * The slot's row with its term and, for a tenure that wrote them, its deadline on a clock
 * that cannot jump and what its holder advertises.
 */
function leaseJoin({ deadlines = true, advertised = false } = {}): string {
  const tenureOf = (table: string) =>
    `LEFT JOIN worker_leadership_${table} AS ${table}
      ON ${table}.slot = lease.slot AND ${table}.holder = lease.holder AND ${table}.term = term.term`;
  return [
    'worker_leadership AS lease',
    'LEFT JOIN worker_leadership_term AS term ON term.slot = lease.slot',
    deadlines ? tenureOf('deadline') : '',
    advertised ? tenureOf('advertised') : '',
  ]
    .filter(Boolean)
    .join('\n    ');
}

/*
 * The one test of whether a lease stands, everywhere it is made (a follower's read, the
 * compare-and-set, fenced, observers): the ms it has left at the reading (`@clock`, `@now`,
 * `@wall`), standing while >= 0 (`expires_at < now` ends it, as in the original worker). By
 * the tenure's deadline where its holder wrote one on the reader's clock: a wall clock that
 * steps changes nothing then. By the wall clock otherwise, as the original worker judges:
 * its own tenures, a tenure from before this table, a deadline from another boot or another
 * clock. An expiry that is not a number was written by no valid candidate (the column has
 * no type check): it counts as expired, or the slot would be stuck forever (text sorts after
 * numbers).
 */
function remaining({ deadlines = true } = {}): string {
  return `CASE${
    deadlines
      ? `
      WHEN deadline.clock = @clock THEN deadline.expires_at - @now`
      : ''
  }
      WHEN typeof(lease.expires_at) IN ('integer', 'real') THEN lease.expires_at - @wall
      ELSE -1 END`;
}

/** The slot's lease as read, from whichever of the tables exist (an observer may come before a candidate made them). */
export function readText(tables: { terms: boolean; deadlines: boolean; advertised: boolean }): string {
  if (!tables.terms) {
    return `SELECT lease.holder AS holder, 0 AS term, lease.expires_at AS expiresAt, ${remaining({ deadlines: false })} AS expiresIn,
        NULL AS advertised
      FROM worker_leadership AS lease WHERE lease.slot = @slot`;
  }
  return `SELECT lease.holder AS holder, coalesce(term.term, 0) AS term, lease.expires_at AS expiresAt, ${remaining(tables)} AS expiresIn,
      ${tables.advertised ? 'advertised.value' : 'NULL'} AS advertised
    FROM ${leaseJoin(tables)} WHERE lease.slot = @slot`;
}

export const statementText = {
  // Sets `holder` even when it is ours already, so that the take-over trigger advances the term.
  // A tenure whose end was proven (`endedHolder`, `endedTerm`; NULL otherwise, which matches
  // nothing) may be taken before it expires.
  take: `INSERT INTO worker_leadership (slot, holder, expires_at) VALUES (@slot, @holder, @expiresAt)
    ON CONFLICT (slot) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
    WHERE holder = @holder OR (SELECT ${remaining()} FROM ${leaseJoin()} WHERE lease.slot = @slot) < 0
      OR (holder = @endedHolder AND (SELECT term FROM worker_leadership_term WHERE slot = @slot) = @endedTerm)`,
  renew: `UPDATE worker_leadership SET expires_at = @expiresAt WHERE ${ownTenure}`,
  writeDeadline: `INSERT INTO worker_leadership_deadline (slot, holder, term, clock, expires_at)
    VALUES (@slot, @holder, @term, @clock, @deadline)
    ON CONFLICT (slot) DO UPDATE SET holder = excluded.holder, term = excluded.term, clock = excluded.clock, expires_at = excluded.expires_at`,
  release: `DELETE FROM worker_leadership WHERE ${ownTenure}`,
  // Needs to write and writes nothing: inside a transaction that holds the write lock already
  // it costs nothing, and on a read-only connection it fails (SQLITE_READONLY), which
  // node:sqlite and bun:sqlite do not tell otherwise (BEGIN IMMEDIATE succeeds there).
  mayWrite: `DELETE FROM worker_leadership WHERE 0`,
};

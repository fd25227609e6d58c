import type { QueryResultRow } from 'pg';
import { MAX_DELAY } from '../../core/argument-check';
import type { LeaseRecord, LeaseView } from '../lease-store';
import { advertisedOf, advertisedWritten } from './advertised';

/*
 * The PostgreSQL store's SQL, and how its rows are read: every statement the store sends,
 * made once per table, and the row as the statements return it.
 */

/** The channel on which elections and releases are announced; the payload says which and of which table. */
export const channel = 'observe_leadership';

/** `text` as a string literal: the names of the user's naming may hold a quote. */
export const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** The server's clock, in Unix ms: the one clock every candidate of every machine agrees on. */
export const serverNow = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;
/** When the server received the statement, before it waited for any lock, by the same clock. */
const arrival = `floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint`;

/** A slot's row as the statements return it, with the server's clock at the reading (`now`). */
export interface Row extends QueryResultRow {
  /** A take's: the row it found, if any (see `replacedOf`). */
  replaced_holder?: string | null;
  replaced_term?: string | null;
  replaced_expires_at?: string | null;
  holder: string;
  term: string;
  expires_at: string;
  /** The lease's length as its holder wrote it; `null` only for a row written by hand. */
  lease_ms: string | null;
  /** What the row's holder advertises; `null` for nothing (see `readAdvertised`). */
  advertised?: string | null;
  now: string;
}

export type Names = { table: string; termSequence: string };

/**
 * Takes the slot if it is free, expired, already `$2`'s, or exactly the lease the follower
 * watched unchanged for its whole length; returns the row it wrote, or nothing.
 *
 * $3 is the lease's length: the server's clock sets its end, and the row keeps the length.
 * Taking a free, expired or own row draws a new term from the sequence, evaluated under the
 * row's lock, after every tenure granted before.
 *
 * The server's clock may step, so a lease our candidates wrote (it has its length) is never
 * judged by it: it is taken only as exactly the lease ($5, $6, $7: holder, term, expiry)
 * that the follower watched unchanged for that length on its own monotonic clock (see
 * LeaseObservation), which a renewal or a takeover meanwhile changes. A row without a
 * length (written by hand) is judged by the server's clock, strictly past its end as the
 * original worker judges.
 */
function upsertText({ table, termSequence }: Names, { from = '', where = '' } = {}): string {
  const nextTerm = `nextval(${literal(termSequence)})`;
  return `INSERT INTO ${table} AS lease (slot, holder, expires_at, term, lease_ms, advertised)
      SELECT $1, $2, clock.now + $3, ${nextTerm}, $3, ${advertisedWritten('$2', '$8')}
      FROM ${from}(SELECT ${serverNow} AS now) AS clock ${where}
      ON CONFLICT (slot) DO UPDATE
        SET holder = excluded.holder, expires_at = excluded.expires_at, term = ${nextTerm}, lease_ms = excluded.lease_ms,
          advertised = excluded.advertised
        WHERE lease.holder = excluded.holder
          OR (lease.lease_ms IS NULL AND lease.expires_at < excluded.expires_at - $3)
          OR (lease.holder = $5 AND lease.term = $6 AND lease.expires_at = $7)
      RETURNING holder, term, expires_at, lease_ms, ${advertisedOf('lease')}, expires_at - $3 AS now`;
}

/** The slot's row before the statement wrote, for a take to say what it replaced (see `replacedOf`). */
const previous = (table: string) => `previous AS (SELECT holder, term, expires_at FROM ${table} WHERE slot = $1)`;
const replacedColumns = `previous.holder AS replaced_holder, previous.term AS replaced_term, previous.expires_at AS replaced_expires_at`;

/** The statements that write a lease: each announces what it did on the channel, for followers and observers that listen. */
function writeStatements(names: Names) {
  const { table } = names;
  return {
    // `previous` reads the row as the statement found it: what the take replaced, if anything.
    take: `WITH ${previous(table)}, taken AS (${upsertText(names)})
      SELECT taken.holder, taken.term, taken.expires_at, taken.lease_ms, taken.advertised, taken.now, ${replacedColumns}, pg_notify('${channel}', $4)
      FROM taken LEFT JOIN previous ON true`,
    // The same for an attempt that every follower makes when a release is announced: only
    // the one that gets the slot's gate (an advisory lock held until the statement commits)
    // writes; the others learn it at once (`open` false) and step aside, rather than
    // queueing on the row one after the other. The gate only keeps the crowd off the row:
    // the compare-and-set alone decides who leads.
    // The gate's key is the election's payload (this table) and the slot.
    takeInCrowd: `WITH gate AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(hashtextextended($4, $1)) AS open), ${previous(table)},
      taken AS (${upsertText(names, { from: 'gate, ', where: 'WHERE gate.open' })})
      SELECT gate.open, taken.holder, taken.term, taken.expires_at, taken.lease_ms, taken.advertised, taken.now, ${replacedColumns},
        CASE WHEN taken.holder IS NOT NULL THEN pg_notify('${channel}', $4) END AS notified
      FROM gate LEFT JOIN taken ON true LEFT JOIN previous ON true`,
    // The row's lock comes first, the clock after it (a select with FOR UPDATE is never merged
    // into the one around it). A renewal that queued behind a transaction holding the row,
    // such as the leader's own `fenced` stalled past the lease until the server ended it,
    // renews nothing if the lease ended while it waited: otherwise it would win the row
    // before the followers queued behind it and bring the lease back for a leader that is
    // not there. A lease that had ended before the renewal arrived is renewed if nobody
    // took it, as on SQLite.
    // Followers that time the lease by watching it (the standbys listen) hear of it at once.
    // What the leader advertises now is written with it ($6).
    renew: `WITH renewed AS (UPDATE ${table} SET expires_at = ${serverNow} + $4, lease_ms = $4, advertised = ${advertisedWritten('$2', '$6')}
        WHERE slot = $1 AND holder = $2 AND term = $3
        AND (SELECT lease.expires_at >= ${serverNow} OR lease.expires_at < ${arrival}
          FROM (SELECT expires_at FROM ${table} WHERE slot = $1 FOR UPDATE) AS lease)
        RETURNING slot)
      SELECT pg_notify('${channel}', $5) FROM renewed`,
    // Deletes the row, as the original worker does, and wakes the followers that listen.
    release: `WITH released AS (DELETE FROM ${table} WHERE slot = $1 AND holder = $2 AND term = $3 RETURNING slot)
      SELECT pg_notify('${channel}', $4) FROM released`,
  };
}

/** Every statement the store sends to the table `names`, by name. */
export function statementsFor(names: Names) {
  const { table } = names;
  return {
    ...writeStatements(names),
    read: `SELECT holder, term, expires_at, lease_ms, ${advertisedOf('lease')}, ${serverNow} AS now FROM ${table} AS lease WHERE slot = $1`,
    // A message to every candidate that listens (a handoff's, a priority's). Needs no right on the table.
    tell: `SELECT pg_notify('${channel}', $1)`,
    hasTable: `SELECT to_regclass(${literal(table)}) IS NOT NULL AS found`,
    // The lock comes first, the clock after it: the outer select runs once the row is locked.
    lockForFencing: `SELECT lease.holder, lease.term, lease.expires_at, lease.lease_ms, ${serverNow} AS now
      FROM (SELECT * FROM ${table} WHERE slot = $1 FOR UPDATE) AS lease`,
    // What a candidate needs besides reading: has_table_privilege with several privileges
    // says whether any is held, so each is asked alone. nextval needs USAGE or UPDATE.
    privileges: `SELECT current_user AS role, pg_is_in_recovery() AS standby,
        ARRAY(SELECT privilege FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) AS privilege
          WHERE NOT has_table_privilege($1, privilege)) AS missing,
        has_sequence_privilege($2, 'USAGE, UPDATE') AS sequence`,
  };
}

/**
 * What a take replaced: the tenure of another holder the row held when the statement found
 * it (one whose lease expired, or was watched to its end), or `undefined` for a free row or
 * this holder's own. Read in the statement's snapshot: a row that another statement changed
 * meanwhile reads as it was, which at worst makes a lock-delay apply where it need not.
 */
export function replacedOf(row: Row): LeaseRecord | undefined {
  if (row.replaced_holder === null || row.replaced_holder === undefined || row.replaced_holder === row.holder) return undefined;
  return { holder: row.replaced_holder, term: Number(row.replaced_term), expiresAt: Number(row.replaced_expires_at) };
}

export function toRecord(row: Row): LeaseRecord {
  const record = { holder: row.holder, term: Number(row.term), expiresAt: Number(row.expires_at) };
  return row.advertised === null || row.advertised === undefined ? record : { ...record, advertised: row.advertised };
}

/**
 * The row with the time it had left by the server's clock, read in the same statement, and
 * for a lease that says its length, that length: its readers time it themselves.
 */
export function toView(row: Row): LeaseView {
  const view = { lease: toRecord(row), expiresIn: Number(row.expires_at) - Number(row.now) };
  return row.lease_ms === null || row.lease_ms === undefined ? view : { ...view, observeFor: Number(row.lease_ms) };
}

/**
 * Whether `row` keeps a follower off the slot: a lease that says its length stands until
 * the follower watched it unchanged for that length (`outwaited`); one without, until the
 * server's clock passes its end.
 */
export function keepsOff(row: Row, outwaited: LeaseRecord | undefined): boolean {
  if (row.lease_ms !== null && row.lease_ms !== undefined) {
    const lease = toRecord(row);
    return (
      outwaited === undefined ||
      lease.holder !== outwaited.holder ||
      lease.term !== outwaited.term ||
      lease.expiresAt !== outwaited.expiresAt
    );
  }
  return Number(row.expires_at) >= Number(row.now);
}

/**
 * How long a fenced transaction may sit idle once it holds the row: what is left of the lease
 * by the server's clock, or, where a step of that clock makes it nonsense (nothing or more
 * than the lease), the lease's length. A process stalled inside the transaction then holds
 * the slot no longer than a lease.
 */
export function idleBound(row: Row): number {
  const untilExpiry = Number(row.expires_at) - Number(row.now);
  const length = row.lease_ms === null ? untilExpiry : Number(row.lease_ms);
  const bound = untilExpiry > 0 && untilExpiry <= length ? untilExpiry : length;
  return Math.max(1, Math.min(bound, MAX_DELAY));
}

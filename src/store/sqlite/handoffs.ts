import type { Database, Transaction } from 'better-sqlite3';
import type { Lease } from '../../core/leadership-event';
import type { ChangeOrigin, ClockReading, HandoffMessage, Handoffs } from '../lease-store';
import type { EndpointPort, MailboxPort } from './side-channels';
import type { SqliteConnection } from './sqlite-connection';
import { deadlineOf, Operate, perConnection } from './sqlite-capability';
import { ownTenure, statementText } from './sqlite-statements';

interface HandoffStatements {
  /** The window's term, or `undefined` when the slot no longer held the lease. */
  handOver: Transaction<(lease: Lease, to: string, now: ClockReading, window: number) => number | undefined>;
}

/**
 * The handover's transaction on a connection, made at its first handover: the tenure handed
 * to `to` (a new holder, which the take-over trigger gives a term of its own), with its
 * deadline, as at a take; the window is timed on the monotonic clock.
 */
export const handoffStatements = perConnection((db: Database): HandoffStatements => {
  const handOver = db.prepare<[Lease & { to: string; expiresAt: number }]>(
    `UPDATE worker_leadership SET holder = @to, expires_at = @expiresAt WHERE ${ownTenure}`,
  );
  const termOf = db.prepare<[{ slot: number }], number>(`SELECT term FROM worker_leadership_term WHERE slot = @slot`).pluck();
  const writeDeadline = db.prepare<[Lease & { clock: string; deadline: number }]>(statementText.writeDeadline);
  return {
    handOver: db.transaction((lease: Lease, to: string, now: ClockReading, window: number) => {
      if (handOver.run({ ...lease, to, expiresAt: now.wall + window }).changes !== 1) return undefined;
      const term = termOf.get(lease) as number;
      writeDeadline.run({ slot: lease.slot, holder: to, term, clock: now.clock, deadline: deadlineOf(now, window) });
      return term;
    }),
  };
});

/**
 * The `handoffs` capability on SQLite: messages go through mailbox files by addressee
 * (handoff-mailboxes.ts), never through the database, so a read-only connection may tell
 * too; a handover writes the slot to its successor for a window, timed on the monotonic clock.
 */
export class SqliteHandoffs implements Handoffs {
  /** @internal Made by its store. */
  constructor(
    private readonly operate: Operate<HandoffStatements>,
    private readonly connection: SqliteConnection,
    private readonly mailboxes: MailboxPort,
    private readonly endpoints: EndpointPort | undefined,
  ) {}

  /** Candidates of this connection hear it at once, the others through the file. */
  tell(message: HandoffMessage): void {
    this.connection.run(() => undefined); // a closed connection says so
    this.mailboxes.tell(message);
  }

  /**
   * Writes the slot to `to` for `window` ms if it still holds `lease`, and tells `to`. The
   * endpoint of `lease` stays open until the caller ends it (`endTenure`), once `to` had its
   * window: closing it now would send every standby to the write lock at the moment `to`
   * needs it. If the slot no longer holds `lease`, it closes at once, as after a release. A
   * handover that failed leaves it open too: the slot is still `lease`'s, and a proof of its
   * end now would let a standby take it from under the handover's next try.
   */
  handOver(lease: Lease, to: string, now: ClockReading, window: number): number | undefined {
    const term = this.operate((statements) => statements.handOver.immediate(lease, to, now, window));
    if (term === undefined) this.endpoints?.closeFor(lease);
    else this.mailboxes.tell({ kind: 'handed', slot: lease.slot, to, term });
    return term;
  }

  /** Every message addressed to `holder`, from this connection and, through its mailbox's file, from every other. */
  watchHandoffs(holder: string, listener: (message: HandoffMessage, origin: ChangeOrigin) => void): () => void {
    return this.mailboxes.watch(holder, listener);
  }
}

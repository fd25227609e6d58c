/**
 * A simulated process's SQLite connection: the real store on the run's database file, seen
 * by its campaigns through the world's noise (`World.withLatency`), and its side channels
 * through the simulator's (sim-channels.ts).
 */
import Database from 'better-sqlite3';
import type { ClockReading } from '../src/core/monotonic-scheduler';
import type { Lease } from '../src/core/leadership-event';
import type { LeadershipError } from '../src/core/leadership-error';
import type { LeaseStore } from '../src/store/lease-store';
import { SqliteLeaseStore } from '../src/store/sqlite/sqlite-lease-store';
import type { FencedOutcome, SimConnection } from './sim-connection';
import type { SimRecord } from './world';

/** What the connection needs of its process and its world. */
export interface SqliteSite {
  /** A connection to the run's file: a new one, or one a dead process left (see `World.connect`). */
  readonly open: () => Database.Database;
  /** Takes back the connection of a process that died, for the next process to open. */
  readonly leave: (db: Database.Database) => void;
  readonly now: () => number;
  readonly clocks: () => ClockReading;
  readonly channels: ConstructorParameters<typeof SqliteLeaseStore>[1];
  /** The store as its campaigns see it; each operation of a process killed (`killed()`) fails as on a closed connection. */
  readonly seen: (store: SqliteLeaseStore, killed: () => boolean) => LeaseStore;
}

export class SqliteConnection implements SimConnection {
  readonly db: Database.Database;
  readonly sqlite: SqliteLeaseStore;
  readonly store: LeaseStore;
  /** Whether its process died, leaving the connection to the next (see `SqliteSite.leave`). */
  private left = false;

  constructor(private readonly site: SqliteSite) {
    this.db = site.open();
    this.sqlite = new SqliteLeaseStore(this.db, site.channels, null);
    this.store = site.seen(this.sqlite, () => this.left);
  }

  get open(): boolean {
    return this.db.open && !this.left;
  }

  close(): 'closed' {
    this.db.close();
    return 'closed';
  }

  kill(): void {
    if (this.open) this.site.leave(this.db);
    this.left = true;
  }

  /** What `fenced(db, lease, work)` runs on SQLite, at once. */
  write(lease: Lease, done: (outcome: FencedOutcome) => void): void {
    const { clocks } = this.site;
    let tenure: SimRecord['tenure'];
    try {
      const ledger = ledgerStatements(this.db);
      this.sqlite.fencedSync(lease, clocks, () => {
        ledger.insert.run(lease.slot, lease.holder, lease.term, this.site.now());
        tenure = tenureNow(ledger.tenure, lease.slot, clocks());
      });
    } catch (error) {
      return done({ refused: (error as LeadershipError).code });
    }
    done({ tenure });
  }
}

/** The slot's tenure and the ms its lease has left at `now`, read straight from the tables (the simulator's own statement). */
function tenureNow(read: Database.Statement, slot: number, now: ClockReading): SimRecord['tenure'] {
  const row = read.get({ slot, now: now.now, clock: now.clock }) as { holder: string; term: number; left: number | null } | undefined;
  return row && { holder: row.holder, term: row.term, left: row.left ?? -Infinity };
}

const ledgers = new WeakMap<Database.Database, { insert: Database.Statement; tenure: Database.Statement }>();

/** A leader's statements for its job: its ledger row, and the slot's tenure read beside it (prepared on a connection's first write). */
function ledgerStatements(db: Database.Database): { insert: Database.Statement; tenure: Database.Statement } {
  const prepared = ledgers.get(db);
  if (prepared !== undefined) return prepared;
  const made = {
    insert: db.prepare('INSERT INTO sim_ledger (slot, holder, term, at) VALUES (?, ?, ?, ?)'),
    tenure: db.prepare(
      `SELECT lease.holder AS holder, term.term AS term, deadline.expires_at - @now AS left
        FROM worker_leadership AS lease JOIN worker_leadership_term AS term ON term.slot = lease.slot
        LEFT JOIN worker_leadership_deadline AS deadline
          ON deadline.slot = lease.slot AND deadline.holder = lease.holder AND deadline.term = term.term AND deadline.clock = @clock
        WHERE lease.slot = @slot`,
    ),
  };
  ledgers.set(db, made);
  return made;
}

import type { Database, Statement, Transaction } from 'better-sqlite3';
import { FSWatcher, statSync, watch } from 'node:fs';
import { LeadershipError } from '../../leadership-error';
import { Lease } from '../../leadership-event';
import { AcquireResult, ChangeOrigin, LeaseRecord, LeaseStore } from '../lease-store';
import { toLeadershipError } from './sqlite-error';
import { installSqliteSchema } from './sqlite-schema';

/*
 * A tenure is still ours while the row keeps our holder and the companion table keeps our
 * term: every takeover, by us or by the original worker's statements, advances the term
 * (see sqlite-schema.ts). Renew and release both insist on it, so a renewal that lands
 * after a long pause can only succeed if nobody held the slot in between, and a late
 * release can never free somebody else's tenure.
 */
const ownTenure = `slot = @slot AND holder = @holder
  AND (SELECT term FROM worker_leadership_term WHERE slot = @slot) = @term`;

const statementText = {
  read: `SELECT lease.holder AS holder, coalesce(term.term, 0) AS term, lease.expires_at AS expiresAt
    FROM worker_leadership AS lease LEFT JOIN worker_leadership_term AS term ON term.slot = lease.slot
    WHERE lease.slot = ?`,
  // Sets `holder` even when it is ours already, so that the take-over trigger advances the term.
  // An expiry that is not a number was written by no valid candidate (the column has no type
  // check): it counts as expired, or the slot would be stuck forever (text sorts after numbers).
  take: `INSERT INTO worker_leadership (slot, holder, expires_at) VALUES (@slot, @holder, @expiresAt)
    ON CONFLICT (slot) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
    WHERE expires_at < @now OR holder = @holder OR typeof(expires_at) NOT IN ('integer', 'real')`,
  renew: `UPDATE worker_leadership SET expires_at = @expiresAt WHERE ${ownTenure}`,
  release: `DELETE FROM worker_leadership WHERE ${ownTenure}`,
};

interface TakeParameters {
  slot: number;
  holder: string;
  now: number;
  expiresAt: number;
}

interface Statements {
  read: Statement<[number], LeaseRecord>;
  renew: Statement<[Lease & { expiresAt: number }]>;
  release: Statement<[Lease]>;
  acquire: Transaction<(parameters: TakeParameters) => AcquireResult>;
  fenced: Transaction<(lease: Lease, now: () => number, work: () => unknown) => unknown>;
}

function fileIdentity(path: string): { dev: number; ino: number } | undefined {
  try {
    const { dev, ino } = statSync(path);
    return { dev, ino };
  } catch {
    return undefined;
  }
}

/** Whether a lease still stands at `now`: `expires_at < now` ends it, as in the original worker. */
function isLive({ expiresAt }: LeaseRecord, now: number): boolean {
  return typeof expiresAt === 'number' && expiresAt >= now;
}

const stores = new WeakMap<Database, SqliteLeaseStore>();

/** The lease store of `db`, made once per connection so that its statements are prepared once. */
export function sqliteLeaseStore(db: Database): SqliteLeaseStore {
  let store = stores.get(db);
  if (!store) stores.set(db, (store = new SqliteLeaseStore(db)));
  return store;
}

/**
 * Leases in a better-sqlite3 database, in the original worker's `worker_leadership` table.
 * Nothing touches the database before the first operation, which creates what is missing
 * of the schema and prepares the statements.
 */
export class SqliteLeaseStore implements LeaseStore {
  private statements: Statements | undefined;
  /** The file this connection opened, as the file system knew it then. */
  private file: { dev: number; ino: number } | undefined;
  private readonly listeners = new Set<(origin: ChangeOrigin) => void>();
  private watcher: FSWatcher | undefined;

  constructor(private readonly db: Database) {}

  acquire(slot: number, holder: string, now: number, expiresAt: number): AcquireResult {
    return this.guard((statements) => {
      // Reading first keeps followers off the write lock while a live lease stands.
      const seen = statements.read.get(slot);
      if (seen !== undefined && seen.holder !== holder && isLive(seen, now)) return { acquired: false, lease: seen };
      return statements.acquire.immediate({ slot, holder, now, expiresAt });
    });
  }

  renew(lease: Lease, expiresAt: number): boolean {
    return this.guard((statements) => statements.renew.run({ ...lease, expiresAt }).changes === 1);
  }

  release(lease: Lease): boolean {
    const released = this.guard((statements) => statements.release.run(lease).changes === 1);
    // Other candidates of this process on this connection; other processes see the file change.
    if (released) this.notify('here');
    return released;
  }

  watch(listener: (origin: ChangeOrigin) => void): () => void {
    this.listeners.add(listener);
    this.startWatching();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopWatching();
    };
  }

  read(slot: number): LeaseRecord | undefined {
    return this.guard((statements) => statements.read.get(slot));
  }

  fenced<T>(lease: Lease, now: () => number, work: () => T): T {
    const statements = this.guard((prepared) => prepared);
    // Errors of the user's work pass through untouched; only the library's own are translated.
    let inWork = false;
    const runWork = (): T => {
      inWork = true;
      const result = work();
      if (typeof (result as { then?: unknown } | undefined)?.then === 'function') {
        throw new TypeError('Expected `work` to return synchronously: it runs inside a SQLite transaction');
      }
      inWork = false;
      return result;
    };
    try {
      return statements.fenced.immediate(lease, now, runWork) as T;
    } catch (error) {
      throw inWork ? error : toLeadershipError(error, this.db);
    }
  }

  private guard<T>(operation: (statements: Statements) => T): T {
    try {
      const statements = this.ready();
      this.checkFile();
      if (this.listeners.size > 0 && this.watcher === undefined) this.startWatching();
      return operation(statements);
    } catch (error) {
      throw toLeadershipError(error, this.db);
    }
  }

  /**
   * A connection keeps using its file after the file is deleted or replaced (WAL mode does not
   * notice), while every process that opens the path from then on gets another database: two
   * elections, two leaders. So each operation first checks that the path still leads to the
   * file this connection opened.
   */
  private checkFile(): void {
    if (this.file === undefined) return;
    const now = fileIdentity(this.db.name);
    if (now?.dev !== this.file.dev || now.ino !== this.file.ino) {
      throw new LeadershipError(
        'DATABASE_MOVED',
        `The file ${this.db.name} was deleted or replaced since this connection opened it; ` +
          'candidates that open it now use another database',
      );
    }
  }

  private notify(origin: ChangeOrigin): void {
    for (const listener of [...this.listeners]) listener(origin);
  }

  /**
   * Every commit writes the -wal file in WAL mode (the database file otherwise), whoever
   * commits, the original worker included: a watch on it wakes followers within a
   * millisecond of a release. The watch can fail (no such file yet, a file system without
   * notifications) or stop (the file replaced); it is tried again at the next operation.
   */
  private startWatching(): void {
    if (this.watcher !== undefined || this.db.memory || !this.db.open) return;
    try {
      const wal = this.db.pragma('journal_mode', { simple: true }) === 'wal';
      const watcher = watch(wal ? `${this.db.name}-wal` : this.db.name, { persistent: false }, (event) => {
        if (event === 'rename') this.stopWatching();
        this.notify('anywhere');
      });
      watcher.on('error', () => this.stopWatching());
      this.watcher = watcher;
    } catch {
      // Followers fall back on their timers until the next operation tries again.
    }
  }

  private stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  private ready(): Statements {
    if (this.statements) return this.statements;
    if (this.db.readonly) throw new LeadershipError('DATABASE_READONLY', 'The database connection is read-only');
    if (!this.db.memory) this.file = fileIdentity(this.db.name);
    installSqliteSchema(this.db);
    const { db } = this;
    const read = db.prepare<[number], LeaseRecord>(statementText.read);
    const take = db.prepare<[TakeParameters]>(statementText.take);
    this.statements = {
      read,
      renew: db.prepare(statementText.renew),
      release: db.prepare(statementText.release),
      acquire: db.transaction((parameters: TakeParameters) => {
        const acquired = take.run(parameters).changes === 1;
        return { acquired, lease: read.get(parameters.slot) as LeaseRecord };
      }),
      // The check and the work share one IMMEDIATE transaction: a takeover needs the write
      // lock, so it cannot fall between them, however long this process pauses. The time is
      // read once the lock is held, not before: waiting for the lock may outlast the lease.
      fenced: db.transaction((held: Lease, now: () => number, runWork: () => unknown) => {
        const row = read.get(held.slot);
        if (row === undefined || row.holder !== held.holder || row.term !== held.term || !isLive(row, now())) {
          throw new LeadershipError(
            'LEASE_LOST',
            `Slot ${held.slot} is no longer held by ${held.holder} for term ${held.term}` +
              (row ? ` (now ${row.holder}, term ${row.term}, expires at ${row.expiresAt})` : ' (no lease)'),
          );
        }
        return runWork();
      }),
    };
    return this.statements;
  }
}

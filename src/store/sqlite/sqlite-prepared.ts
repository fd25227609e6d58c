/*
 * What a SQLite connection prepared for the store: its statements and transactions, each
 * prepared at its first use, shared by every store made on that connection. The SQL is in
 * sqlite-statements.ts.
 */
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { Lease } from '../../core/leadership-event';
import { checkLease, stands } from '../lease-check';
import { ClockReading, LeaseRecord, LeaseView } from '../lease-store';
import { statementText } from './sqlite-statements';
import { SqliteConnection } from './sqlite-connection';
import { deadlineOf } from './sqlite-capability';
import { standbyStatements } from './standby';
import { advertiseOn } from './advertised';

/** A slot's row as read, with the ms its lease has left at the reading (see `remaining`). */
export interface LeaseRow extends Omit<LeaseRecord, 'advertised'> {
  readonly expiresIn: number;
  /** What the tenure's holder advertises; `null` for nothing. */
  readonly advertised: string | null;
}

/** What the statements that judge a lease need of a reading: `clock`, `now`, `wall`. */
export type Judged = ClockReading & { slot: number };

interface TakeParameters extends Judged {
  holder: string;
  expiresAt: number;
}

interface DeadlineParameters extends Lease {
  clock: string;
  deadline: number;
}

/** What a tenure's holder advertises (see advertised.ts). */
type Advertised = string | undefined;

interface EndedTenure {
  endedHolder: string | null;
  endedTerm: number | null;
}

export interface Statements {
  read: Statement<[Judged], LeaseRow>;
  acquire: Transaction<
    (
      parameters: TakeParameters & EndedTenure,
      deadline: number,
      advertised: Advertised,
      openEndpoint: (tenure: Lease) => void,
    ) => { acquired: boolean; lease: LeaseRow; replaced?: LeaseRecord }
  >;
  renew: Transaction<(lease: Lease, now: ClockReading, expiresAfter: number, advertised: Advertised) => boolean>;
  release: Statement<[Lease]>;
  fenced: Transaction<(lease: Lease, now: () => ClockReading, work: () => unknown) => unknown>;
}

/** The row as a view: the lease, and the time it has left. */
export function viewOf(row: LeaseRow): LeaseView {
  return { lease: recordOf(row), expiresIn: row.expiresIn };
}

function recordOf({ holder, term, expiresAt, advertised }: LeaseRow): LeaseRecord {
  return advertised === null ? { holder, term, expiresAt } : { holder, term, expiresAt, advertised };
}

/** The store's statements and transactions on `db`, whose schema is whole (see `SqliteLeaseStore.ready`), each prepared at its first use. */
export function statementsOn(db: Database, read: Statement<[Judged], LeaseRow>): Statements {
  const prepared = <P extends unknown[], R = unknown>(text: string) => onFirstUse(() => db.prepare<P, R>(text));
  const take = prepared<[TakeParameters & EndedTenure]>(statementText.take);
  const renew = prepared<[Lease & { expiresAt: number }]>(statementText.renew);
  const writeDeadline = prepared<[DeadlineParameters]>(statementText.writeDeadline);
  const mayWrite = prepared(statementText.mayWrite);
  const advertise = (tenure: Lease, advertised: Advertised) => advertiseOn(db)(tenure, advertised);
  return onFirstUseEach<Statements>({
    read: () => read,
    // A leader is nobody's standby: winning gives its standby place up, if it had one. Its
    // endpoint opens before the commit, so that whoever reads the tenure can reach it; if
    // the commit fails, nobody ever could, and it closes. The row and the deadline are
    // written together: nobody ever reads one without the other.
    acquire: () =>
      db.transaction(
        (parameters: TakeParameters & EndedTenure, deadline: number, advertised: Advertised, openEndpoint: (tenure: Lease) => void) => {
          const before = read.get(parameters); // under the write lock: exactly what the take replaces
          const acquired = take().run(parameters).changes === 1;
          const lease = read.get(parameters) as LeaseRow;
          if (!acquired) return { acquired, lease };
          const tenure = { slot: parameters.slot, holder: lease.holder, term: lease.term };
          writeDeadline().run({ ...tenure, clock: parameters.clock, deadline });
          advertise(tenure, advertised);
          standbyStatements(db).leave.run({ slot: parameters.slot, holder: parameters.holder });
          openEndpoint(tenure);
          const replaced = before !== undefined && before.holder !== parameters.holder ? viewOf(before).lease : undefined;
          return { acquired, lease: { ...lease, advertised: advertised ?? null, expiresIn: deadline - parameters.now }, replaced };
        },
      ),
    renew: () =>
      db.transaction((lease: Lease, now: ClockReading, expiresAfter: number, advertised: Advertised) => {
        if (renew().run({ ...lease, expiresAt: now.wall + expiresAfter }).changes !== 1) return false;
        writeDeadline().run({ ...lease, clock: now.clock, deadline: deadlineOf(now, expiresAfter) });
        advertise(lease, advertised);
        return true;
      }),
    release: () => db.prepare(statementText.release),
    // The check and the work share one IMMEDIATE transaction: a takeover needs the write
    // lock, so it cannot fall between them, however long this process pauses. The time is
    // read once the lock is held, not before: waiting for the lock may outlast the lease.
    // A read-only connection fails first, with DATABASE_READONLY, on every driver.
    fenced: () =>
      db.transaction((held: Lease, now: () => ClockReading, runWork: () => unknown) => {
        mayWrite().run();
        const row = read.get({ slot: held.slot, ...now() });
        checkLease(held, row && recordOf(row), () => stands((row as LeaseRow).expiresIn));
        return runWork();
      }),
  });
}

/**
 * What a connection prepared: its checks, the read of the whole schema once it exists (see
 * `reader`), and the other statements once the schema was made (see `ready`). Statements
 * belong to their connection, not to a store: every store made on it shares them, so that
 * one made again (the simulator's next process on the connection its last one left)
 * prepares nothing again.
 */
export interface Prepared {
  readonly connection: SqliteConnection;
  wholeRead?: Statement<[Judged], LeaseRow>;
  statements?: Statements;
}

const preparedOnConnection = new WeakMap<Database, Prepared>();

export function preparedOn(db: Database): Prepared {
  let prepared = preparedOnConnection.get(db);
  if (prepared === undefined) preparedOnConnection.set(db, (prepared = { connection: new SqliteConnection(db) }));
  return prepared;
}

/** `make()`'s value, made at the first call and kept. */
function onFirstUse<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

/** An object whose every property is made by its maker at its first read, then kept. */
function onFirstUseEach<T extends object>(makers: { [Name in keyof T]: () => T[Name] }): T {
  const made = {} as T;
  for (const name of Object.keys(makers) as Array<keyof T>) {
    Object.defineProperty(made, name, {
      configurable: true,
      get: () => {
        const value = makers[name]();
        Object.defineProperty(made, name, { value });
        return value;
      },
    });
  }
  return made;
}

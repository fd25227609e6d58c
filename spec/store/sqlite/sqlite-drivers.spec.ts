import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, filter, Subscription, take } from 'rxjs';
import { fenced, LeadershipError, LeadershipEvent, observeLeader, observeLeadership } from '../../../src';
import { asBetterSqlite3, sqliteDriverOf, SqliteDatabaseLike } from '../../../src/store/sqlite/sqlite-driver';
import { eventually } from '../../../test-kit/eventually';
import { originalStatements, originalTable } from '../../../test-kit/original-statements';

/**
 * The SQLite drivers of this runtime, each passed to the library as users pass it: every
 * one elects, fences, maps a lock to a transient error, refuses what it must, and shares the
 * file with the others and with the original worker's statements. node:sqlite comes with
 * Node.js 22.13 and later; on an older Node.js this runtime has only better-sqlite3
 * (bun:sqlite is tried under Bun: spec/bun, run by bun.processes.spec.ts).
 */
type Open = (file: string, options?: { readonly?: boolean }) => SqliteDatabaseLike;

const [major, minor] = process.versions.node.split('.').map(Number);
const hasNodeSqlite = major > 22 || (major === 22 && minor >= 13);

const drivers: Array<[string, Open]> = [
  ['better-sqlite3', (file, { readonly = false } = {}) => new Database(file, { readonly })],
  ...(hasNodeSqlite
    ? ([
        [
          'node:sqlite',
          (file, { readonly = false } = {}) => {
            const { DatabaseSync } = require('node:sqlite') as { DatabaseSync: new (file: string, options: object) => SqliteDatabaseLike }; // eslint-disable-line @typescript-eslint/no-require-imports -- Node.js 22.13+
            return new DatabaseSync(file, { readOnly: readonly });
          },
        ],
      ] as Array<[string, Open]>)
    : []),
];

it('tries every SQLite driver this runtime has', () => {
  expect(drivers.map(([name]) => name)).toEqual(hasNodeSqlite ? ['better-sqlite3', 'node:sqlite'] : ['better-sqlite3']);
});

describe.each(drivers)('with %s', (driver, open) => {
  let folder: string;
  let file: string;
  let connections: SqliteDatabaseLike[];
  let subscriptions: Subscription[];
  const connect = (options?: { readonly?: boolean }) => {
    const db = open(file, options);
    connections.push(db);
    return db;
  };
  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'observe-leadership-driver-'));
    file = join(folder, 'leader.db');
    connections = [];
    subscriptions = [];
  });
  afterEach(() => {
    subscriptions.forEach((subscription) => subscription.unsubscribe());
    for (const db of connections) {
      try {
        db.close();
      } catch {
        // closed by the test
      }
    }
    rmSync(folder, { recursive: true, force: true });
  });

  const timing = { renewEvery: 50, expiresAfter: 1_000, retryEvery: 50 };
  function candidate(db: SqliteDatabaseLike, holder: string) {
    const events: LeadershipEvent[] = [];
    subscriptions.push(observeLeadership(db, { ...timing, holder }).subscribe((event) => events.push(event)));
    return { events, types: () => events.map(({ type }) => type), subscription: subscriptions[subscriptions.length - 1] };
  }

  it('is recognised as what it is', () => {
    expect(sqliteDriverOf(connect())).toBe(driver);
  });

  it('elects one candidate, renews, and hands over at once when it unsubscribes, with a greater term', async () => {
    const a = candidate(connect(), 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const b = candidate(connect(), 'b');
    await eventually('a renewed twice', () => a.types().filter((type) => type === 'renewed').length >= 2);
    expect(b.events).toEqual([]);
    a.subscription.unsubscribe();
    await eventually('b elected', () => b.types().includes('elected'), timing.expiresAfter / 2);
    expect((b.events[0] as { term: number }).term).toBeGreaterThan((a.events[0] as { term: number }).term);
  });

  it('fences: the work commits with a lease that holds, nothing of it with one that does not, and the work errors pass as they are', async () => {
    const db = connect();
    db.exec('CREATE TABLE ledger (value INTEGER NOT NULL)');
    const a = candidate(db, 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const lease = a.events[0] as { slot: number; holder: string; term: number };
    const insert = (db as unknown as { prepare(sql: string): { run(value: number): unknown } }).prepare(
      'INSERT INTO ledger (value) VALUES (?)',
    );
    fenced(db, lease, () => insert.run(1));
    expect(() => fenced(db, { ...lease, term: lease.term + 1 }, () => insert.run(2))).toThrow(
      expect.objectContaining({ code: 'LEASE_LOST' }),
    );
    expect(() =>
      fenced(db, lease, () => {
        insert.run(3);
        throw new RangeError('the work failed');
      }),
    ).toThrow(new RangeError('the work failed'));
    const rows = asBetterSqlite3(db)!.prepare('SELECT value FROM ledger').pluck().all();
    expect(rows).toEqual([1]);
  });

  it('reports a lock held by another connection as a transient DATABASE_BUSY, and renews once it is gone', async () => {
    const a = candidate(connect(), 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const other = connect();
    other.exec('BEGIN EXCLUSIVE');
    await eventually('an error event', () => a.types().includes('error'), 5_000);
    other.exec('COMMIT');
    const errors = a.events.filter((event) => event.type === 'error').map((event) => (event as { error: LeadershipError }).error);
    expect(errors.every((error) => error.code === 'DATABASE_BUSY' && error.transient)).toBe(true);
    const renewals = a.types().filter((type) => type === 'renewed').length;
    await eventually('a renewed again', () => a.types().filter((type) => type === 'renewed').length > renewals);
    expect(a.types()).not.toContain('lost');
  });

  it('lets observers watch on a read-only connection, and refuses to campaign on one', async () => {
    const a = candidate(connect(), 'a');
    await eventually('a elected', () => a.types().includes('elected'));
    const reader = connect({ readonly: true });
    const state = await firstValueFrom(
      observeLeader(reader).pipe(
        filter((seen) => seen.holder !== null),
        take(1),
      ),
    );
    expect(state).toMatchObject({ holder: 'a', term: (a.events[0] as { term: number }).term });
    const refused = await firstValueFrom(observeLeadership(reader, { ...timing, slot: 1 }).pipe(take(1))).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'DATABASE_READONLY' });
  });

  it('refuses a connection in exclusive locking mode', async () => {
    const db = connect();
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    const refused = await firstValueFrom(observeLeadership(db, timing)).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'EXCLUSIVE_LOCKING' });
  });

  it('never leads while the original worker holds the slot, and takes it after the original worker releases', async () => {
    const db = connect();
    db.exec(originalTable);
    const original = originalStatements(asBetterSqlite3(db)!, 'rust', 60_000);
    expect(original.tryAcquire(Date.now())).toBe(true);
    const a = candidate(connect(), 'a');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(a.events).toEqual([]);
    original.release();
    await eventually('a elected', () => a.types().includes('elected'));
  });

  it('shares the file with better-sqlite3 candidates: one leader, and a handoff between drivers', async () => {
    const mine = candidate(connect(), 'mine');
    await eventually('elected', () => mine.types().includes('elected'));
    const theirsDb = new Database(file);
    connections.push(theirsDb);
    const theirs = candidate(theirsDb, 'theirs');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(theirs.events).toEqual([]);
    mine.subscription.unsubscribe();
    await eventually('the other driver elected', () => theirs.types().includes('elected'), timing.expiresAfter / 2);
  });
});

import Database from 'better-sqlite3';
import { renameSync, unlinkSync } from 'node:fs';
import { fenced, LeadershipEvent, observeLeader, observeLeadership } from '../src';
import { sqliteLeaseStore } from '../src/store/sqlite/sqlite-lease-store';
import { temporaryDatabase, TemporaryDatabase } from './support/temporary-database';
import { virtualTime } from './support/virtual-time';
import { at } from './support/clock-reading';

// The catalogue of bad input, each with the answer a user gets. Bad config is in
// leadership-config.spec.ts; a closed or read-only database and a table of another shape
// are in observe-leadership.spec.ts. Here: odd databases and rows no valid writer makes.
const timing = { renewEvery: 10, expiresAfter: 30, retryEvery: 4 };
const elected = (holder: string, term: number, expiresAt: number): LeadershipEvent => ({
  type: 'elected',
  slot: 0,
  holder,
  term,
  expiresAt,
});
const failedWith = (code: string) => expect.objectContaining({ name: 'LeadershipError', code });

describe('bad input: databases and rows', () => {
  let db: Database.Database;
  const write = (holder: string, expiresAt: unknown) =>
    db.prepare('INSERT OR REPLACE INTO worker_leadership (slot, holder, expires_at) VALUES (0, ?, ?)').run(holder, expiresAt);

  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE worker_leadership (slot INTEGER PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL)');
  });
  afterEach(() => db.open && db.close());

  it('one :memory: connection shared by two candidates: they compete like two processes, one leads', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 5ms !').toBe('a', { a: elected('a', 1, 30) });
      expectObservable(observeLeadership(db, { ...timing, holder: 'b', scheduler }), '^ 5ms !').toBe('');
    });
  });

  it('two :memory: connections are two databases: each elects its own leader (share one connection, or use a file)', () => {
    const other = new Database(':memory:');
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 5ms !').toBe('a', { a: elected('a', 1, 30) });
      expectObservable(observeLeadership(other, { ...timing, holder: 'b', scheduler }), '^ 5ms !').toBe('a', {
        a: elected('b', 1, 30),
      });
    });
    other.close();
  });

  it('a row with an empty holder is a holder like any other: it is waited for, and taken once expired', () => {
    write('', 20);
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 25ms !').toBe('21ms a', {
        a: elected('a', 1, 51),
      });
    });
  });

  it('a row with text for its expiry counts as expired, so the slot cannot be stuck: taken at once', () => {
    write('ghost', 'tomorrow');
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 5ms !').toBe('a', { a: elected('a', 1, 30) });
    });
  });

  it('a fenced call on a row with text for its expiry writes nothing and throws LEASE_LOST', () => {
    const leading = observeLeadership(db, { ...timing, holder: 'a', scheduler: virtualTime() }).subscribe();
    db.exec("UPDATE worker_leadership SET expires_at = 'tomorrow'"); // same holder, same term
    db.exec('CREATE TABLE jobs (name TEXT)');
    expect(() => fenced(db, { slot: 0, holder: 'a', term: 1 }, () => db.exec("INSERT INTO jobs VALUES ('x')"))).toThrow(
      failedWith('LEASE_LOST'),
    );
    expect(db.prepare('SELECT count(*) FROM jobs').pluck().get()).toBe(0);
    leading.unsubscribe();
  });

  it('a lease a year in the future (a broken clock) holds its slot: followers wait, trying every retryEvery, until the row is deleted', () => {
    write('ghost', 365 * 24 * 3_600_000);
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      // An operator deletes the row at 10; the attempts at 0, 4 and 8 found the far lease.
      scheduler.schedule(() => db.exec('DELETE FROM worker_leadership WHERE slot = 0'), 10);
      const events = observeLeadership(db, { ...timing, holder: 'a', scheduler });
      expectObservable(events, '^ 14ms !').toBe('12ms a', { a: elected('a', 1, 42) });
    });
  });
});

describe('bad input: the database file', () => {
  let file: TemporaryDatabase;
  beforeEach(() => (file = temporaryDatabase()));
  afterEach(() => file.remove());

  it.each([
    ['deleted', (path: string) => unlinkSync(path)],
    [
      'replaced',
      (path: string) => {
        const other = new Database(`${path}.new`);
        other.exec('CREATE TABLE other (x)');
        other.close();
        renameSync(`${path}.new`, path);
      },
    ],
  ])('a file %s under a running leader ends its stream with DATABASE_MOVED: it stops leading a database nobody else sees', (_, change) => {
    const db = file.open();
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      scheduler.schedule(() => change(file.file), 5);
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 40ms !').toBe(
        'a 9ms #',
        { a: elected('a', 1, 30) },
        failedWith('DATABASE_MOVED'),
      );
    });
  });

  it('a full disk: leadership goes on (renewals write in place), and a fenced write that needs space throws SQLITE_FULL, writing nothing', () => {
    const db = file.open();
    db.exec('CREATE TABLE jobs (payload TEXT)');
    const scheduler = virtualTime();
    const lease = { slot: 0, holder: 'a', term: 1 };
    const addJob = db.prepare('INSERT INTO jobs VALUES (?)');
    let outcome: unknown;
    scheduler.run(({ expectObservable }) => {
      scheduler.schedule(() => {
        db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`);
        try {
          fenced(db, lease, () => addJob.run('x'.repeat(100_000)), scheduler);
        } catch (error) {
          outcome = error;
        }
      }, 5);
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 21ms !').toBe('a 9ms b 9ms c', {
        a: elected('a', 1, 30),
        b: expect.objectContaining({ type: 'renewed', expiresAt: 40 }),
        c: expect.objectContaining({ type: 'renewed', expiresAt: 50 }),
      });
    });
    expect(outcome).toEqual(expect.objectContaining({ code: 'SQLITE_FULL' }));
    expect(db.prepare('SELECT count(*) FROM jobs').pluck().get()).toBe(0);
  });

  it.each([
    ['locking_mode = EXCLUSIVE', 'EXCLUSIVE_LOCKING', 'locking_mode = exclusive'],
    ['journal_mode = MEMORY', 'UNSAFE_JOURNAL', 'journal_mode = memory'],
    // better-sqlite3 refuses OFF unless the connection is in its unsafe mode (SQLite's defensive mode off).
    ['journal_mode = OFF', 'UNSAFE_JOURNAL', 'journal_mode = off', true],
  ])('a connection in %s ends the stream with %s before it touches the file, and observers too', (_, code, pragma, unsafe = false) => {
    const rollbackFile = temporaryDatabase('delete'); // better-sqlite3's default, from which each of these can be set
    const db = rollbackFile.open();
    db.unsafeMode(unsafe);
    db.pragma(pragma);
    expect(db.pragma(pragma.split(' ')[0], { simple: true })).toBe(pragma.split(' = ')[1]);
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 50ms !').toBe('#', undefined, failedWith(code));
      expectObservable(observeLeader(db, { scheduler }), '^ 50ms !').toBe('#', undefined, failedWith(code));
    });
    // Nothing was created, and another connection can still take part.
    const other = rollbackFile.open();
    expect(other.prepare(`SELECT count(*) FROM sqlite_master WHERE name = 'worker_leadership'`).pluck().get()).toBe(0);
    expect(sqliteLeaseStore(other).acquire(0, 'b', at(1), 100).acquired).toBe(true);
    rollbackFile.remove();
  });

  it('a database in memory is its own journal and needs no other process: it campaigns', () => {
    const db = new Database(':memory:');
    expect(db.pragma('journal_mode', { simple: true })).toBe('memory');
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 5ms !').toBe('a', { a: elected('a', 1, 30) });
    });
  });
});

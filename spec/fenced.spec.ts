import Database from 'better-sqlite3';
import { fenced, LeadershipError } from '../src';
import { sqliteLeaseStore } from '../src/store/sqlite/sqlite-lease-store';
import { virtualTime } from './support/virtual-time';
import { temporaryDatabase } from './support/temporary-database';
import { at } from './support/clock-reading';

describe('fenced', () => {
  let db: Database.Database;
  const scheduler = virtualTime(); // now() stays at 0 outside run(): a fixed clock
  const jobs = () => db.prepare('SELECT name FROM jobs').pluck().all();
  const addJob = (name: string) => () => db.prepare('INSERT INTO jobs (name) VALUES (?)').run(name);
  const held = { slot: 0, holder: 'a', term: 1 };

  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE jobs (name TEXT)');
    sqliteLeaseStore(db).acquire(0, 'a', at(0), 30); // term 1, until 30
  });
  afterEach(() => db.close());

  const expectLeaseLost = (work: () => unknown) => {
    expect(work).toThrow(LeadershipError);
    expect(work).toThrow(expect.objectContaining({ code: 'LEASE_LOST' }));
  };

  it('runs the work and commits its writes while the lease holds, returning what the work returns', () => {
    expect(fenced(db, held, () => (addJob('one')(), 'done'), scheduler)).toBe('done');
    expect(jobs()).toEqual(['one']);
  });

  it("is the store's fencing capability, as PostgreSQL's is: a store of the connection fences as the connection does", () => {
    const fencing = sqliteLeaseStore(db).capabilities.fencing;
    expect(
      fencing?.fenced(
        held,
        () => (addJob('one')(), 'done'),
        () => at(0),
      ),
    ).toBe('done');
    expect(fenced(sqliteLeaseStore(db) as never, held, addJob('two'), scheduler)).toEqual({ changes: 1, lastInsertRowid: 2 });
    expect(() => fencing?.fenced({ ...held, term: 2 }, addJob('three'), () => at(0))).toThrow(
      expect.objectContaining({ code: 'LEASE_LOST' }),
    );
    expect(jobs()).toEqual(['one', 'two']);
  });

  it('accepts an elected or renewed event as the lease', () => {
    const event = { type: 'elected' as const, ...held, expiresAt: 30 };
    fenced(db, event, addJob('one'), scheduler);
    expect(jobs()).toEqual(['one']);
  });

  it('holds up to the expiry millisecond, and writes nothing from the next one', () => {
    const clock = virtualTime();
    clock.frame = 30; // now() is the frame
    fenced(db, held, addJob('at 30'), clock);
    clock.frame = 31;
    expectLeaseLost(() => fenced(db, held, addJob('at 31'), clock));
    expect(jobs()).toEqual(['at 30']);
  });

  it('reads the time once it holds the write lock, since waiting for the lock may outlast the lease', () => {
    const clock = virtualTime();
    const readInTransaction: boolean[] = [];
    const now = clock.now.bind(clock);
    clock.now = () => (readInTransaction.push(db.inTransaction), now());
    fenced(db, held, addJob('one'), clock);
    expect(readInTransaction).toEqual([true]);
  });

  it('writes nothing and throws LEASE_LOST for another term, another holder, or no lease at all', () => {
    sqliteLeaseStore(db).acquire(0, 'a', at(1), 30); // a new tenure: term 2
    expectLeaseLost(() => fenced(db, held, addJob('old term'), scheduler));
    expectLeaseLost(() => fenced(db, { ...held, holder: 'b', term: 2 }, addJob('other holder'), scheduler));
    expectLeaseLost(() => fenced(db, { ...held, slot: 7 }, addJob('no lease'), scheduler));
    expect(jobs()).toEqual([]);
  });

  it("rolls back and rethrows the work's own error as it is", () => {
    const failure = new Error('job failed');
    expect(() =>
      fenced(
        db,
        held,
        () => {
          addJob('half')();
          throw failure;
        },
        scheduler,
      ),
    ).toThrow(failure);
    expect(jobs()).toEqual([]);
  });

  it('refuses asynchronous work, which a SQLite transaction cannot wait for, and writes nothing', () => {
    const work = async () => addJob('late')();
    expect(() => fenced(db, held, work, scheduler)).toThrow(
      new TypeError('Expected `work` to return synchronously: it runs inside a SQLite transaction'),
    );
    expect(jobs()).toEqual([]);
  });

  it("runs inside a caller's transaction as a savepoint of it", () => {
    db.transaction(() => {
      addJob('before')();
      fenced(db, held, addJob('fenced'), scheduler);
    })();
    expect(jobs()).toEqual(['before', 'fenced']);
  });

  it('refuses a malformed lease or work with the same wording as the config', () => {
    expect(() => fenced(db, { ...held, term: 0 }, addJob('x'))).toThrow(
      new RangeError('Expected `lease.term` to be an integer from 1 to 9007199254740991, got `0` (number)'),
    );
    expect(() => fenced(db, null as never, addJob('x'))).toThrow(new TypeError('Expected `lease` to be an object, got `null` (null)'));
    expect(() => fenced(db, held, 'work' as never)).toThrow(new TypeError('Expected `work` to be a function, got `"work"` (string)'));
  });

  it('throws DATABASE_CLOSED on a closed database', () => {
    db.close();
    expect(() => fenced(db, held, () => 1, scheduler)).toThrow(expect.objectContaining({ code: 'DATABASE_CLOSED' }));
  });

  it("says which of its errors a job may skip: a lost lease, a transient one; not a closed database nor the work's own", () => {
    const thrown = (run: () => unknown): unknown => {
      try {
        run();
      } catch (error) {
        return error;
      }
      throw new Error('expected a throw');
    };
    expect(LeadershipError.isSkippable(thrown(() => fenced(db, { ...held, term: 2 }, addJob('x'), scheduler)))).toBe(true);
    expect(LeadershipError.isSkippable(new LeadershipError('DATABASE_BUSY', 'locked'))).toBe(true);
    expect(LeadershipError.isSkippable(new LeadershipError('DATABASE_ERROR', 'I/O'))).toBe(true);
    expect(
      LeadershipError.isSkippable(
        thrown(() =>
          fenced(
            db,
            held,
            () => {
              throw new Error('mine');
            },
            scheduler,
          ),
        ),
      ),
    ).toBe(false);
    expect(LeadershipError.isSkippable('LEASE_LOST')).toBe(false);
    expect(LeadershipError.isSkippable({ code: 'LEASE_LOST' })).toBe(false);
    db.close();
    expect(LeadershipError.isSkippable(thrown(() => fenced(db, held, () => 1, scheduler)))).toBe(false);
  });
});

describe('fenced against another writer', () => {
  it('throws DATABASE_BUSY, running no work, while another connection holds the write lock', () => {
    const file = temporaryDatabase();
    try {
      const db = file.open({ timeout: 0 });
      const other = file.open({ timeout: 0 });
      sqliteLeaseStore(db).acquire(0, 'a', at(0), 30);
      other.exec('BEGIN IMMEDIATE');
      const work = jest.fn();
      expect(() => fenced(db, { slot: 0, holder: 'a', term: 1 }, work, virtualTime())).toThrow(
        expect.objectContaining({ code: 'DATABASE_BUSY' }),
      );
      expect(work).not.toHaveBeenCalled();
      let busy: unknown;
      try {
        fenced(db, { slot: 0, holder: 'a', term: 1 }, work, virtualTime());
      } catch (error) {
        busy = error;
      }
      expect(LeadershipError.isSkippable(busy)).toBe(true); // the next tick may find it free
    } finally {
      file.remove();
    }
  });
});

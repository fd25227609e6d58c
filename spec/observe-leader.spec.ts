import Database from 'better-sqlite3';
import { LeaderState, observeLeader, observeLeadership } from '../src';
import type { ChangeOrigin, LeaseChange, LeaseReader, LeaseView } from '../src/store/lease-store';
import { eventually } from '../test-kit/eventually';
import { originalStatements, originalTable } from '../test-kit/original-statements';
import { postgresLeaseStore } from '../src/postgres';
import { testSchema, TestSchema } from './support/postgres-database';
import { virtualTime } from './support/virtual-time';
import { temporaryDatabase, TemporaryDatabase } from './support/temporary-database';

const timing = { renewEvery: 10, expiresAfter: 30, retryEvery: 4 };
const leads = (holder: string, term: number, expiresAt: number): LeaderState => ({ slot: 0, holder, term, expiresAt, advertised: null });
const nobody: LeaderState = { slot: 0, holder: null, term: null, expiresAt: null, advertised: null };

describe('observeLeader', () => {
  let db: Database.Database;
  beforeEach(() => {
    db = new Database(':memory:');
  });
  afterEach(() => db.open && db.close());

  it('shows nobody before any candidate ran, without creating anything', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeader(db, { scheduler }), '^ 50ms !').toBe('a', { a: nobody });
    });
    expect(db.prepare('SELECT name FROM sqlite_master').all()).toEqual([]);
  });

  it('shows an election, each renewal, and a release, on change only', () => {
    const scheduler = virtualTime();
    scheduler.run(({ cold, expectObservable }) => {
      // a leads from 5, renews at 15 and 25, releases at 30; the observer polls every 3 ms.
      const candidate = observeLeadership(db, { ...timing, holder: 'a', scheduler });
      cold('5ms a').subscribe(() => {
        const subscription = candidate.subscribe();
        scheduler.schedule(() => subscription.unsubscribe(), 25);
      });
      expectObservable(observeLeader(db, { pollEvery: 3, scheduler }), '^ 40ms !').toBe('a 5ms b 8ms c 11ms d 2ms e', {
        a: nobody,
        b: leads('a', 1, 35), // at the next poll
        c: leads('a', 1, 45),
        d: leads('a', 1, 55),
        e: nobody, // the release is told at once on the same connection, between polls
      });
    });
  });

  it('shows the lease running out at the first millisecond past its expiry, between polls', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      db.exec(originalTable);
      originalStatements(db, 'rust', 20).tryAcquire(0); // the original worker: until 20, then gone
      expectObservable(observeLeader(db, { pollEvery: 1_000, scheduler }), '^ 50ms !').toBe('a 20ms b', {
        a: leads('rust', 0, 20), // no term table yet: the original worker alone ran
        b: nobody,
      });
    });
  });

  it('looks again at once after an answer that was on its way when the store reported a change', () => {
    // A store that answers later (PostgreSQL): a notification can arrive just before the
    // answer to a read made earlier, in the same chunk of the socket. That answer may predate
    // the change: the next look comes at once, not at the next poll.
    const pending: Array<(view: LeaseView | undefined) => void> = [];
    let notify: ((origin: ChangeOrigin, change: LeaseChange) => void) | undefined;
    const later: LeaseReader = {
      clock: 'candidate',
      // An answer that comes when the spec gives it, in the frame it chooses.
      look: () =>
        ({ then: (answered: (view: LeaseView | undefined) => void) => pending.push(answered) }) as unknown as PromiseLike<undefined>,
      capabilities: {
        changes: { watch: (listener) => ((notify = listener), () => (notify = undefined)), isWatching: () => true },
      },
    };
    const lease = { holder: 'a', term: 1, expiresAt: 100_000 };
    const scheduler = virtualTime();
    scheduler.run(({ cold, expectObservable }) => {
      cold('1ms a').subscribe(() => pending.shift()?.(undefined)); // the first look: nobody
      cold('2ms a').subscribe(() => notify?.('anywhere', 'unheard')); // a second look goes out
      cold('3ms a').subscribe(() => {
        notify?.('anywhere', 'election'); // a has just taken the slot…
        pending.shift()?.(undefined); // …after the second look read it free
      });
      cold('4ms a').subscribe(() => pending.shift()?.({ lease, expiresIn: 99_000 })); // a third look, at once
      expectObservable(observeLeader(later, { pollEvery: 60_000, scheduler }), '^ 10ms !').toBe('-a 2ms b', {
        a: nobody,
        b: leads('a', 1, 100_000),
      });
    });
  });

  it('refuses bad config at once, naming the field', () => {
    expect(() => observeLeader(db, { pollEvery: 0 })).toThrow(
      'Expected `pollEvery` to be an integer from 1 to 2147483647, got `0` (number)',
    );
    expect(() => observeLeader(db, { slot: -1 })).toThrow(RangeError);
    expect(() => observeLeader(db, { poll: 5 } as never)).toThrow(
      'Expected `config` to be an object with only slot, pollEvery, scheduler, instrument, got `"poll"` (string)',
    );
    expect(() => observeLeader({} as never)).toThrow(
      'Expected `db` to be a SQLite database (better-sqlite3, node:sqlite or bun:sqlite) or a lease store (clock, look)',
    );
  });

  it('ends with DATABASE_CLOSED when the database is closed under it', () => {
    const scheduler = virtualTime();
    scheduler.run(({ cold, expectObservable }) => {
      cold('10ms a').subscribe(() => db.close());
      expectObservable(observeLeader(db, { pollEvery: 4, scheduler }), '^ 50ms !').toBe(
        'a 11ms #',
        { a: nobody },
        expect.objectContaining({ code: 'DATABASE_CLOSED' }),
      );
    });
  });

  describe('on a file', () => {
    let file: TemporaryDatabase;
    beforeEach(() => (file = temporaryDatabase()));
    afterEach(() => file.remove());

    it('works on a read-only connection, and sees another process of the machine take and release the slot', async () => {
      const writer = file.open();
      const reader = file.open({ readonly: true });
      const seen: LeaderState[] = [];
      const subscription = observeLeader(reader, { pollEvery: 60_000 }).subscribe((state) => seen.push(state));
      const candidate = observeLeadership(writer, { holder: 'w' }).subscribe();
      await eventually('the election seen', () => seen.some((state) => state.holder === 'w'));
      candidate.unsubscribe();
      await eventually('the release seen', () => seen[seen.length - 1].holder === null);
      subscription.unsubscribe();
      expect(seen.map((state) => state.holder)).toEqual([null, 'w', null]);
    });
  });

  describe('on PostgreSQL', () => {
    let test: TestSchema;
    beforeEach(() => (test = testSchema()));
    afterEach(() => test.drop());

    it('shows nobody before any candidate ran, creating nothing; then an election, renewals, a release and the next leader', async () => {
      const store = postgresLeaseStore(test.pool, { schema: test.schema });
      const seen: LeaderState[] = [];
      const subscription = observeLeader(store, { pollEvery: 50 }).subscribe((state) => seen.push(state));
      await eventually('a first look', () => seen.length > 0);
      expect(seen).toEqual([nobody]);
      const { rows } = await test.pool.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [test.schema]);
      expect(rows).toEqual([]);

      const timing = { renewEvery: 100, expiresAfter: 1_000, retryEvery: 100 };
      const a = observeLeadership(store, { ...timing, holder: 'a' }).subscribe();
      await eventually('a seen leading, then renewing', () => seen.filter((state) => state.holder === 'a').length >= 3);
      const b = observeLeadership(store, { ...timing, holder: 'b' }).subscribe();
      a.unsubscribe();
      await eventually('b seen leading', () => seen.some((state) => state.holder === 'b'));
      b.unsubscribe();
      await store.settled();
      await eventually('nobody, once b released', () => seen[seen.length - 1].holder === null);
      subscription.unsubscribe();

      const holders = seen.map((state) => state.holder).filter((holder, i, all) => holder !== all[i - 1]);
      expect(holders[0]).toBeNull();
      expect(holders.filter((holder) => holder !== null)).toEqual(['a', 'b']);
      const terms = seen.filter((state) => state.term !== null).map((state) => state.term as number);
      expect(terms).toEqual([...terms].sort((x, y) => x - y));
    });
  });
});

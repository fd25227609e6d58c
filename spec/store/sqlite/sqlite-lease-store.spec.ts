import Database from 'better-sqlite3';
import { SqliteLeaseStore, sqliteLeaseStore } from '../../../src/store/sqlite/sqlite-lease-store';
import { installSqliteSchema } from '../../../src/store/sqlite/sqlite-schema';
import { eventually } from '../../../test-kit/eventually';
import { originalStatements } from '../../../test-kit/original-statements';
import { LockTaken } from '../../../src/store/lease-store';
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { mailboxOf } from '../../../src/store/sqlite/handoff-mailboxes';
import { endpointPath } from '../../../src/store/sqlite/endpoint-path';
import { performance } from 'node:perf_hooks';
import { TemporaryDatabase, temporaryDatabase } from '../../support/temporary-database';
import { at } from '../../support/clock-reading';

const lease = (holder: string, term: number, slot = 0) => ({ slot, holder, term });

describe('SqliteLeaseStore', () => {
  let db: Database.Database;
  let store: SqliteLeaseStore;
  const row = (slot = 0) => db.prepare('SELECT holder, expires_at FROM worker_leadership WHERE slot = ?').get(slot);

  beforeEach(() => {
    db = new Database(':memory:');
    store = sqliteLeaseStore(db);
  });
  afterEach(() => db.close());

  it('creates the original worker table with exactly its columns, and a companion table for terms', () => {
    store.renew(lease('a', 1), at(0), 1_000); // any operation but read makes what is missing of the schema
    expect(db.pragma('table_info(worker_leadership)')).toEqual([
      expect.objectContaining({ name: 'slot', type: 'INTEGER', pk: 1 }),
      expect.objectContaining({ name: 'holder', type: 'TEXT', notnull: 1 }),
      expect.objectContaining({ name: 'expires_at', type: 'INTEGER', notnull: 1 }),
    ]);
    expect(db.pragma('table_info(worker_leadership_term)')).toEqual([
      expect.objectContaining({ name: 'slot', pk: 1 }),
      expect.objectContaining({ name: 'term' }),
    ]);
  });

  it("adds the clock of declarations to an earlier version's table of priorities, keeping its rows, judged by the wall clock", () => {
    db.exec(`CREATE TABLE worker_leadership_candidate (slot INTEGER NOT NULL, holder TEXT NOT NULL, priority INTEGER NOT NULL,
      expires_at INTEGER NOT NULL, PRIMARY KEY (slot, holder));
      INSERT INTO worker_leadership_candidate VALUES (0, 'earlier', 4, 5000)`);
    const priorities = store.capabilities.priorities!;
    expect([priorities.highest(0, 'a', { clock: 'host', now: 9_999_999, wall: 4_999 }), priorities.highest(0, 'a', at(5_001))]).toEqual([
      4, 0,
    ]);
    priorities.declare(0, 'later', 3, { clock: 'host', now: 100, wall: 9_000_000 }, 1_000);
    expect([
      priorities.highest(0, 'a', { clock: 'host', now: 1_100, wall: 6_000 }),
      priorities.highest(0, 'a', { clock: 'host', now: 1_101, wall: 6_000 }),
    ]).toEqual([3, 0]);
  });

  it('is one store per connection, so that statements are prepared once', () => {
    expect(sqliteLeaseStore(db)).toBe(store);
  });

  describe('acquire', () => {
    it('takes a free slot, and answers with the lease it wrote', () => {
      expect(store.acquire(0, 'a', at(1_000), 300)).toEqual({
        acquired: true,
        lease: { holder: 'a', term: 1, expiresAt: 1_300 },
        expiresIn: 300,
      });
      expect(row()).toEqual({ holder: 'a', expires_at: 1_300 });
    });

    it('does not take a live lease, and answers with it', () => {
      store.acquire(0, 'a', at(1_000), 300);
      expect(store.acquire(0, 'b', at(1_100), 300)).toEqual({
        acquired: false,
        lease: { holder: 'a', term: 1, expiresAt: 1_300 },
        expiresIn: 200,
      });
    });

    it('treats the expiry millisecond as live and the next one as expired (expires_at < now, as the original)', () => {
      store.acquire(0, 'a', at(1_000), 300);
      expect(store.acquire(0, 'b', at(1_300), 300).acquired).toBe(false);
      expect(store.acquire(0, 'b', at(1_301), 300)).toEqual({
        acquired: true,
        lease: { holder: 'b', term: 2, expiresAt: 1_601 },
        expiresIn: 300,
        replaced: { holder: 'a', term: 1, expiresAt: 1_300 }, // an expired tenure of another holder
      });
    });

    describe('on a wall clock that steps', () => {
      const on = (clock: string, now: number, wall: number) => ({ clock, now, wall });

      it('judges a tenure of ours by its deadline on the reader’s clock: a step forward takes nothing, a step back keeps nothing', () => {
        store.acquire(0, 'a', on('host', 1_000, 50_000), 300);
        expect(row()).toEqual({ holder: 'a', expires_at: 50_300 }); // the original worker's Unix ms, by the wall clock
        // The wall clock ten minutes ahead: the lease still stands until 1_300 on the host's clock.
        expect(store.acquire(0, 'b', on('host', 1_300, 650_000), 300)).toMatchObject({ acquired: false, expiresIn: 0 });
        // The wall clock ten minutes back: the lease ended at 1_300 all the same.
        expect(store.acquire(0, 'b', on('host', 1_301, -550_000), 300)).toMatchObject({ acquired: true, lease: { holder: 'b', term: 2 } });
      });

      it('renews the deadline with the row, in the same transaction', () => {
        const { lease: taken } = store.acquire(0, 'a', on('host', 1_000, 50_000), 300);
        expect(store.renew(lease('a', taken.term), on('host', 1_200, 900_000), 300)).toBe(true);
        expect(store.look(0, on('host', 1_400, 0))).toMatchObject({ expiresIn: 100 });
        expect(store.acquire(0, 'b', on('host', 1_500, 1_200_000), 300).acquired).toBe(false);
      });

      it('judges by the wall clock, as the original worker does, a deadline on another clock (another boot, another scheduler)', () => {
        store.acquire(0, 'a', on('host before the reboot', 1_000, 50_000), 300);
        expect(store.acquire(0, 'b', on('host', 9_999_999, 50_300), 300).acquired).toBe(false);
        expect(store.acquire(0, 'b', on('host', 0, 50_301), 300).acquired).toBe(true);
      });

      it("judges the original worker's tenures by the wall clock: a deadline of the tenure before it counts for nothing", () => {
        store.acquire(0, 'a', on('host', 1_000, 50_000), 300);
        originalStatements(db, 'rust', 300).tryAcquire(60_000); // its take-over, by the wall clock: a new term
        expect(store.look(0, on('host', 1_001, 60_100))).toEqual({ lease: { holder: 'rust', term: 2, expiresAt: 60_300 }, expiresIn: 200 });
        expect(store.acquire(0, 'b', on('host', 1_001, 60_301), 300).acquired).toBe(true);
      });

      it('checks a fenced lease by its deadline too: a step forward refuses no write, a step back lets none through', () => {
        const { lease: taken } = store.acquire(0, 'a', on('host', 1_000, 50_000), 300);
        db.exec('CREATE TABLE IF NOT EXISTS fenced_rows (n INTEGER)');
        const write = (now: ReturnType<typeof on>) =>
          store.fencedSync(
            lease('a', taken.term),
            () => now,
            () => db.exec('INSERT INTO fenced_rows VALUES (1)'),
          );
        expect(() => write(on('host', 1_300, 900_000))).not.toThrow();
        expect(() => write(on('host', 1_301, 0))).toThrow(expect.objectContaining({ code: 'LEASE_LOST' }));
      });
    });

    it('takes its own live lease back as a new tenure with a greater term', () => {
      store.acquire(0, 'a', at(1_000), 300);
      expect(store.acquire(0, 'a', at(1_100), 300).lease.term).toBe(2);
    });

    it('keeps slots independent', () => {
      expect(store.acquire(0, 'a', at(1_000), 300).acquired).toBe(true);
      expect(store.acquire(1, 'b', at(1_000), 300)).toEqual({
        acquired: true,
        lease: { holder: 'b', term: 1, expiresAt: 1_300 },
        expiresIn: 300,
      });
    });
  });

  describe('acquire on a file that another connection is writing', () => {
    let file: TemporaryDatabase;
    let other: Database.Database;
    beforeEach(() => {
      file = temporaryDatabase();
      other = file.open();
      other.exec('CREATE TABLE jobs (id INTEGER PRIMARY KEY)');
    });
    afterEach(() => file.remove());

    it.each(['delete', 'wal'] as const)(
      'in %s mode, never waits for another connection’s lock: every operation of its own throws LockTaken at once, and the user’s busy timeout stays as set',
      (journal) => {
        const locked = temporaryDatabase(journal);
        try {
          const ours = locked.open({ timeout: 2_000 });
          const store = sqliteLeaseStore(ours);
          const lease = { slot: 0, holder: 'a', term: store.acquire(0, 'a', at(1_000), 300).lease.term };
          store.capabilities.standby.standBy(1, 'a', at(1_000), 300, 3);
          const holder = locked.open({ timeout: 0 });
          holder.exec('BEGIN EXCLUSIVE'); // readers too are kept out in a rollback journal
          const operations: Record<string, () => unknown> = {
            acquire: () => store.acquire(1, 'a', at(1_000), 300),
            renew: () => store.renew(lease, at(1_000), 300),
            release: () => store.release(lease),
            standBy: () => store.capabilities.standby.standBy(2, 'a', at(1_000), 300, 3),
            leaveStandby: () => store.capabilities.standby.leaveStandby(1, 'a'),
            ...(journal === 'wal' ? {} : { look: () => store.look(0, at(1_000)) }),
          };
          const outcomes = Object.entries(operations).map(([name, operation]) => {
            const started = performance.now();
            let thrown: unknown;
            try {
              operation();
            } catch (error) {
              thrown = error;
            }
            // Generous: the busy timeout is 2 s.
            return [name, thrown instanceof LockTaken, performance.now() - started < 500, ours.pragma('busy_timeout', { simple: true })];
          });
          expect(outcomes).toEqual(Object.keys(operations).map((name) => [name, true, true, 2_000]));
          // What WAL readers see meanwhile is the last commit: the lease stands.
          if (journal === 'wal') expect(store.look(0, at(1_000))?.lease.holder).toBe('a');
          holder.exec('COMMIT');
          expect(store.renew(lease, at(1_100), 300)).toBe(true);
          expect(store.acquire(1, 'a', at(1_100), 300).acquired).toBe(true);
        } finally {
          locked.remove();
        }
      },
    );

    it('fenced waits for the write lock as the user’s busy timeout says, then runs the work', async () => {
      const ours = file.open({ timeout: 5_000 });
      const store = sqliteLeaseStore(ours);
      const lease = { slot: 0, holder: 'a', term: store.acquire(0, 'a', at(1_000), 60_000).lease.term };
      // A child process holds the write lock for 300 ms: the fenced call waits it out, in the busy wait.
      const child = spawn(
        process.execPath,
        [
          '-e',
          `
        const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(file.file)});
        db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked');
        setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await new Promise((resolve) => child.stdout.once('data', resolve));
      const started = performance.now();
      const written = store.fencedSync(
        lease,
        () => at(1_100),
        () => 'written',
      );
      expect(written).toBe('written');
      expect(performance.now() - started).toBeGreaterThanOrEqual(100);
      await new Promise((resolve) => child.once('exit', resolve));
    });

    it("reports another connection's acquisitions and releases as changes seen anywhere, not renewals or other writes", async () => {
      const ours = sqliteLeaseStore(file.open());
      const theirs = sqliteLeaseStore(other);
      const changes: string[] = [];
      const unwatch = ours.capabilities.changes.watch((origin) => changes.push(origin));
      expect(ours.capabilities.changes.isWatching()).toBe(true);
      const { lease } = theirs.acquire(0, 'b', at(1_000), 300);
      await eventually('the acquisition reported', () => changes.length === 1);
      theirs.renew({ slot: 0, holder: 'b', term: lease.term }, at(1_000), 400);
      other.exec('INSERT INTO jobs DEFAULT VALUES');
      theirs.release({ slot: 0, holder: 'b', term: lease.term });
      // Events come in order: had the renewal or the insert been reported, they would be here by now.
      await eventually('the release reported', () => changes.length >= 2);
      expect(changes).toEqual(['anywhere', 'anywhere']);
      unwatch();
      expect(ours.capabilities.changes.isWatching()).toBe(false);
    });
  });

  it('reads without writing: no schema is made, and there is no lease before one', () => {
    expect(store.look(0, at(0))?.lease).toBeUndefined();
    expect(db.prepare('SELECT name FROM sqlite_master').all()).toEqual([]);
  });

  describe('standby places', () => {
    const places = () => db.prepare('SELECT place, holder, expires_at FROM worker_leadership_standby ORDER BY place').all();

    it('go to the first followers that ask, as many as there are places', () => {
      expect(['a', 'b', 'c', 'd'].map((holder) => store.capabilities.standby.standBy(0, holder, at(1_000), 300, 3))).toEqual([
        true,
        true,
        true,
        false,
      ]);
      expect(places()).toEqual([
        { place: 0, holder: 'a', expires_at: 1_300 },
        { place: 1, holder: 'b', expires_at: 1_300 },
        { place: 2, holder: 'c', expires_at: 1_300 },
      ]);
    });

    it('are kept by renewing them, and taken by another once expired', () => {
      store.capabilities.standby.standBy(0, 'a', at(1_000), 300, 1);
      expect(store.capabilities.standby.standBy(0, 'a', at(1_200), 300, 1)).toBe(true);
      expect(store.capabilities.standby.standBy(0, 'b', at(1_500), 300, 1)).toBe(false); // the expiry millisecond is still a's
      expect(store.capabilities.standby.standBy(0, 'b', at(1_501), 300, 1)).toBe(true);
      expect(store.capabilities.standby.standBy(0, 'a', at(1_502), 300, 1)).toBe(false);
    });

    it('are given up by leaving, and by winning the slot', () => {
      store.capabilities.standby.standBy(0, 'a', at(1_000), 300, 2);
      store.capabilities.standby.standBy(0, 'b', at(1_000), 300, 2);
      store.capabilities.standby.leaveStandby(0, 'a');
      store.acquire(0, 'b', at(1_000), 300);
      expect(places()).toEqual([]);
      expect(store.capabilities.standby.standBy(1, 'b', at(1_000), 300, 2)).toBe(true); // slots have places of their own
    });
  });

  describe('messages about handoffs, through the file beside the database', () => {
    let file: TemporaryDatabase;
    beforeEach(() => (file = temporaryDatabase()));
    afterEach(() => file.remove());

    it('keep the tenure provable only by its leader when a handover meets the lock at its commit: the endpoint stays open, and the next try hands over', () => {
      const rollback = temporaryDatabase('delete');
      try {
        const leader = sqliteLeaseStore(rollback.open());
        const held = { slot: 0, holder: 'a', term: leader.acquire(0, 'a', at(Date.now()), 60_000).lease.term };
        const endpoint = endpointPath(rollback.file, held) as string;
        const reader = rollback.open({ timeout: 0 });
        reader.exec('BEGIN');
        reader.prepare('SELECT * FROM worker_leadership').all(); // a reader's lock: no commit in a rollback journal
        expect(() => leader.capabilities.handoffs.handOver(held, 'b', at(Date.now()), 1_000)).toThrow(LockTaken);
        // A standby would take a closed endpoint for proof of the end, and the slot from under the handover.
        expect(lstatSync(endpoint).isSocket()).toBe(true);
        reader.exec('COMMIT');
        expect(leader.capabilities.handoffs.handOver(held, 'b', at(Date.now()), 1_000)).toBeGreaterThan(held.term);
        leader.capabilities.tenureProof.endTenure(held);
        expect(existsSync(endpoint)).toBe(false);
      } finally {
        rollback.remove();
      }
    });

    it('carry a roll call of everybody to every mailbox, and each answer through the mailbox of the one that answers', async () => {
      const caller = sqliteLeaseStore(file.open());
      const candidates = sqliteLeaseStore(file.open());
      // Holders of every mailbox: a call to everybody must reach each.
      const holders = Array.from({ length: 200 }, (_, i) => `candidate-${i}`);
      const boxes = new Map(holders.map((holder) => [mailboxOf(holder), holder]));
      expect(boxes.size).toBe(16);
      const called = new Set<string>();
      const stops = [...boxes.values()].map((holder) =>
        candidates.capabilities.handoffs.watchHandoffs(holder, (message) => {
          if (message.kind === 'roll-call') called.add(holder);
        }),
      );
      const answers: string[] = [];
      const stopAnswers = caller.capabilities.handoffs.watchHandoffs(
        'roll-call-spec',
        (message) => message.kind === 'present' && answers.push(message.holder),
      );
      try {
        caller.capabilities.handoffs.tell({ kind: 'roll-call', slot: 0, to: '', replyTo: 'roll-call-spec' });
        await eventually('every mailbox called', () => called.size === 16);
        // Two answers at once, from two mailboxes: neither overwrites the other.
        const [first, second] = [...boxes.values()];
        candidates.capabilities.handoffs.tell({ kind: 'present', slot: 0, to: 'roll-call-spec', holder: first });
        candidates.capabilities.handoffs.tell({ kind: 'present', slot: 0, to: 'roll-call-spec', holder: second });
        await eventually('both answers', () => answers.length === 2);
        expect(answers.sort()).toEqual([first, second].sort());
        expect(readFileSync(`${file.file}-leadership-handoff-${mailboxOf(first)}`, 'utf8')).toContain(`"holder":"${first}"`);
      } finally {
        stops.forEach((stop) => stop());
        stopAnswers();
      }
    });

    it('reach another connection through the file, whole, a short message after a long one too', async () => {
      const asker = sqliteLeaseStore(file.open());
      const hearer = sqliteLeaseStore(file.open());
      const heard: unknown[] = [];
      const long = 'h'.repeat(256);
      const origins = new Set<string>();
      const stop = hearer.capabilities.handoffs.watchHandoffs(
        long,
        (message, origin) => (heard.push(message), origins.add(String(origin))),
      );
      try {
        asker.capabilities.handoffs.tell({ kind: 'asked', lease: lease(long, 7), to: long });
        await eventually('the request', () => heard.length >= 1);
        asker.capabilities.handoffs.tell({ kind: 'asked', lease: lease(long, 8) });
        await eventually('the second request', () => heard.some((message) => (message as { lease: { term: number } }).lease.term === 8));
        expect(heard[0]).toEqual({ kind: 'asked', lease: lease(long, 7), to: long });
        expect(heard.at(-1)).toEqual({ kind: 'asked', lease: lease(long, 8) });
        expect([...origins]).toEqual(['anywhere']);
        // One length for every message, and no truncation: a process delayed between a write and a
        // truncation would otherwise cut or extend a message written meanwhile.
        expect(readFileSync(`${file.file}-leadership-handoff-${mailboxOf(long)}`, 'utf8')).toHaveLength(4096);
      } finally {
        stop();
      }
    });
  });

  it('tells messages about handoffs on the same connection at once, inside the call, as from here', () => {
    const heard: Array<[string, string | undefined]> = [];
    const stop = store.capabilities.handoffs.watchHandoffs('b', (message, origin) => heard.push([message.kind, origin]));
    try {
      store.capabilities.handoffs.tell({ kind: 'asked', lease: lease('b', 7), to: 'c' });
      expect(heard).toEqual([['asked', 'here']]);
    } finally {
      stop();
    }
  });

  describe('terms', () => {
    it('never go back across releases: the term outlives the row', () => {
      const terms = [];
      for (const holder of ['a', 'b', 'a']) {
        const { lease: taken } = store.acquire(0, holder, at(1_000), 300);
        terms.push(taken.term);
        store.release(lease(holder, taken.term));
      }
      expect(terms).toEqual([1, 2, 3]);
    });

    it("advance for tenures taken with the original worker's statements, and not for its renewals", () => {
      installSqliteSchema(db);
      const original = originalStatements(db, 'rust', 300);
      original.tryAcquire(1_000); // INSERT OR IGNORE into the free slot
      expect(store.look(0, at(0))?.lease).toEqual({ holder: 'rust', term: 1, expiresAt: 1_300 });
      original.renew(1_100);
      expect(store.look(0, at(0))?.lease.term).toBe(1);
      store.acquire(0, 'a', at(1_401), 300);
      original.tryAcquire(1_702); // the take-over UPDATE
      expect(store.look(0, at(0))?.lease).toEqual({ holder: 'rust', term: 3, expiresAt: 2_002 });
      original.release(); // DELETE
      expect(store.acquire(0, 'a', at(1_800), 300).lease.term).toBe(4);
    });
  });

  describe("the original worker's test scenarios, on this store", () => {
    it('three candidates, one leader', () => {
      const won = ['a', 'b', 'c'].filter((holder) => store.acquire(0, holder, at(1_000), 300).acquired);
      expect(won).toEqual(['a']);
    });

    it('a leader that stops renewing expires, and a new one acquires', () => {
      store.acquire(0, 'a', at(1_000), 300);
      expect(store.acquire(0, 'b', at(1_200), 300).acquired).toBe(false);
      expect(store.acquire(0, 'b', at(1_301), 300).acquired).toBe(true);
    });

    it('release removes its own row', () => {
      store.acquire(0, 'a', at(1_000), 300);
      expect(store.release(lease('a', 1))).toBe(true);
      expect(row()).toBeUndefined();
    });

    it('release twice is fine', () => {
      store.acquire(0, 'a', at(1_000), 300);
      store.release(lease('a', 1));
      expect(store.release(lease('a', 1))).toBe(false);
    });

    it("a late release by a superseded holder leaves the new holder's lease alone", () => {
      store.acquire(0, 'a', at(1_000), 300);
      store.acquire(0, 'b', at(1_301), 300);
      expect(store.release(lease('a', 1))).toBe(false);
      expect(row()).toEqual({ holder: 'b', expires_at: 1_601 });
    });

    it('release without acquire changes nothing', () => {
      store.acquire(0, 'a', at(1_000), 300);
      expect(store.release(lease('b', 1))).toBe(false);
      expect(row()).toEqual({ holder: 'a', expires_at: 1_300 });
    });

    it('release touches only its own slot, where the original forgot the slot', () => {
      store.acquire(0, 'a', at(1_000), 300);
      store.acquire(1, 'a', at(1_000), 300);
      store.release(lease('a', 1, 1));
      expect(row(0)).toEqual({ holder: 'a', expires_at: 1_300 });
      expect(row(1)).toBeUndefined();
    });
  });

  describe('with the original worker on the same database', () => {
    it('neither takes a live lease of the other', () => {
      installSqliteSchema(db);
      const original = originalStatements(db, 'rust', 300);
      expect(store.acquire(0, 'a', at(1_000), 300).acquired).toBe(true);
      expect(original.tryAcquire(1_300)).toBe(false);
      expect(original.tryAcquire(1_301)).toBe(true);
      expect(store.acquire(0, 'a', at(1_601), 300).acquired).toBe(false);
      expect(store.renew(lease('a', 1), at(1_601), 99)).toBe(false);
    });

    it('lets the original worker acquire right after our release', () => {
      store.acquire(0, 'a', at(1_000), 300);
      store.release(lease('a', 1));
      expect(originalStatements(db, 'rust', 300).tryAcquire(1_001)).toBe(true);
    });
  });
});

import Database from 'better-sqlite3';
import { concatMap, interval, map, take, timer } from 'rxjs';
import { AcquireResult, LeadershipEvent, LeaseStore, observeLeadership, sqliteLeaseStore, StartJob, whileLeader } from '../src';
import { originalStatements, originalTable } from '../test-kit/original-statements';
import { pausableClock, virtualTime } from './support/virtual-time';
import { temporaryDatabase, TemporaryDatabase } from './support/temporary-database';

const timing = { renewEvery: 10, expiresAfter: 30, retryEvery: 4 };

const elected = (holder: string, term: number, expiresAt: number): LeadershipEvent => ({
  type: 'elected',
  slot: 0,
  holder,
  term,
  expiresAt,
});
const renewed = (holder: string, term: number, expiresAt: number): LeadershipEvent => ({
  type: 'renewed',
  slot: 0,
  holder,
  term,
  expiresAt,
});
const lost = (holder: string, term: number, reason: string): LeadershipEvent =>
  ({ type: 'lost', slot: 0, holder, term, reason }) as LeadershipEvent;
const busy = (holder: string): LeadershipEvent => ({
  type: 'error',
  slot: 0,
  holder,
  error: expect.objectContaining({ code: 'DATABASE_BUSY' }),
});
const failedWith = (code: string) => expect.objectContaining({ name: 'LeadershipError', code });

describe('observeLeadership', () => {
  let db: Database.Database;
  const rows = () => db.prepare('SELECT slot, holder, expires_at FROM worker_leadership').all();

  beforeEach(() => {
    db = new Database(':memory:');
  });
  afterEach(() => db.open && db.close());

  it('is cold: nothing touches the database before subscribe', () => {
    observeLeadership(db, timing);
    expect(db.prepare('SELECT name FROM sqlite_master').all()).toEqual([]);
  });

  it('elects a lone candidate at once and renews every renewEvery, each lease ending expiresAfter later', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      const events = observeLeadership(db, { ...timing, holder: 'a', scheduler });
      expectObservable(events, '^ 25ms !').toBe('a 9ms b 9ms c', {
        a: elected('a', 1, 30),
        b: renewed('a', 1, 40),
        c: renewed('a', 1, 50),
      });
    });
  });

  it('releases on unsubscribe, and a follower that sees the release takes over at once, with a greater term', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
      const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
      expectObservable(a, '^ 14ms !').toBe('a 9ms b', { a: elected('a', 1, 30), b: renewed('a', 1, 40) });
      expectObservable(b, '^ 39ms !').toBe('15ms a 9ms b 9ms c', {
        a: elected('b', 2, 45),
        b: renewed('b', 2, 55),
        c: renewed('b', 2, 65),
      });
    });
    expect(rows()).toEqual([]);
  });

  it('falls back on its timer for a release it was not told of: it takes over at its next attempt', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      // The original worker's release, through the same connection: no notification.
      db.exec(originalTable);
      originalStatements(db, 'rust', 30).tryAcquire(0);
      scheduler.schedule(() => originalStatements(db, 'rust', 30).release(), 15);
      // Attempts at 0, 4, 8, 12, then 16 finds the slot free. (Term 1: the original worker
      // took the slot before this library's triggers existed.)
      expectObservable(observeLeadership(db, { ...timing, holder: 'b', scheduler }), '^ 19ms !').toBe('16ms a', {
        a: elected('b', 1, 46),
      });
    });
  });

  describe('lock-delay (lockDelay)', () => {
    it('holds an expired lease it took, renewing it, for lockDelay before it says elected', () => {
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        // Another holder's lease, never released: it expires at 30, nobody proves its end.
        db.exec(originalTable);
        originalStatements(db, 'rust', 30).tryAcquire(0);
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler, lockDelay: 20 });
        // Taken at 31 (its lease to 61), renewed quietly at 41, then at 51 the renewal that
        // announces it: elected, its lease to 81.
        expectObservable(b, '^ 62ms !').toBe('51ms a 9ms b', { a: elected('b', 1, 81), b: renewed('b', 1, 91) });
        scheduler.schedule(() => expect(rows()).toEqual([{ slot: 0, holder: 'b', expires_at: 61 }]), 35);
      });
    });

    it('waits for nothing after a release', () => {
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler, lockDelay: 20 });
        expectObservable(a, '^ 14ms !').toBe('a 9ms b', { a: elected('a', 1, 30), b: renewed('a', 1, 40) });
        expectObservable(b, '^ 16ms !').toBe('15ms a', { a: elected('b', 2, 45) });
      });
    });
  });

  describe('stepping down (stepDown), and staying a candidate', () => {
    it('ends the tenure at the notifier, releases, sits out while another takes over, and follows that one', () => {
      const scheduler = virtualTime();
      scheduler.run(({ cold, expectObservable }) => {
        const stepDown = cold('15ms x');
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler, stepDown });
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
        // a steps down at 15: b, told of the release on the same connection, takes over at
        // once; a, sitting out, finds b leading at its first look and follows it.
        expectObservable(a, '^ 59ms !').toBe('a 9ms b 4ms c', {
          a: elected('a', 1, 30),
          b: renewed('a', 1, 40),
          c: lost('a', 1, 'stepped-down'),
        });
        expectObservable(b, '^ 59ms !').toBe('15ms a 9ms b 9ms c 9ms d 9ms e', {
          a: elected('b', 2, 45),
          b: renewed('b', 2, 55),
          c: renewed('b', 2, 65),
          d: renewed('b', 2, 75),
          e: renewed('b', 2, 85),
        });
      });
    });

    it('takes the slot back once it has sat out for sitOut, when nobody else did', () => {
      const scheduler = virtualTime();
      scheduler.run(({ cold, expectObservable }) => {
        const stepDown = cold('5ms x');
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler, stepDown, sitOut: 20 });
        expectObservable(a, '^ 30ms !').toBe('a 4ms b 19ms c', {
          a: elected('a', 1, 30),
          b: lost('a', 1, 'stepped-down'),
          c: elected('a', 2, 55),
        });
      });
    });

    it('ignores the notifier while it does not lead, and ends with the notifier’s error', () => {
      const scheduler = virtualTime();
      scheduler.run(({ cold, expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        expectObservable(a, '^ 20ms !').toBe('a 9ms b 9ms c', { a: elected('a', 1, 30), b: renewed('a', 1, 40), c: renewed('a', 1, 50) });
        const b = observeLeadership(db, {
          ...timing,
          holder: 'b',
          scheduler,
          stepDown: cold('5ms x 5ms #', undefined, new Error('unhealthy')),
        });
        expectObservable(b).toBe('11ms #', undefined, new Error('unhealthy'));
      });
    });

    it('releases even when the subscriber stops on its `lost`', () => {
      const scheduler = virtualTime();
      scheduler.run(({ cold, expectObservable }) => {
        const stepDown = cold('5ms x');
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler, stepDown }).pipe(take(2));
        expectObservable(a).toBe('a 4ms (b|)', { a: elected('a', 1, 30), b: lost('a', 1, 'stepped-down') });
      });
      expect(rows()).toEqual([]);
    });
  });

  describe('handing off to a chosen successor', () => {
    const ask = (term: number, to?: string) =>
      sqliteLeaseStore(db).capabilities.handoffs.tell({
        kind: 'asked',
        lease: { slot: 0, holder: 'a', term },
        ...(to !== undefined && { to }),
      });

    it('answers a roll call while it follows: present once, not while it leads, nor once heard', () => {
      const scheduler = virtualTime();
      const answers: Array<[number, string]> = [];
      const store = sqliteLeaseStore(db);
      const stop = store.capabilities.handoffs.watchHandoffs('roll-call-spec', (word) => {
        if (word.kind === 'present') answers.push([scheduler.now(), word.holder]);
      });
      const call = (to: string, heard: string[] = []) =>
        store.capabilities.handoffs.tell({ kind: 'roll-call', slot: 0, to, replyTo: 'roll-call-spec', heard });
      scheduler.run(({ expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
        const c = observeLeadership(db, { ...timing, holder: 'c', scheduler });
        const elsewhere = observeLeadership(db, { ...timing, slot: 1, holder: 'd', scheduler });
        scheduler.schedule(() => call(''), 5);
        scheduler.schedule(() => call('', ['b']), 10);
        scheduler.schedule(() => call('c'), 15);
        for (const candidate of [a, b, c, elsewhere]) expectObservable(candidate, '^ 20ms !');
      });
      stop();
      expect(answers.sort(([t1, h1], [t2, h2]) => t1 - t2 || h1.localeCompare(h2))).toEqual([
        [5, 'b'],
        [5, 'c'],
        [10, 'c'],
        [15, 'c'],
      ]);
    });

    it('says lost (handed-off) at the request, and the named follower takes the slot at once with a greater term, before the others', () => {
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
        const c = observeLeadership(db, { ...timing, holder: 'c', scheduler });
        scheduler.schedule(() => ask(1, 'c'), 15);
        // The window (term 2) is c's alone; c's own tenure is term 3. a sits out, then follows c.
        expectObservable(a, '^ 40ms !').toBe('a 9ms b 4ms c', {
          a: elected('a', 1, 30),
          b: renewed('a', 1, 40),
          c: lost('a', 1, 'handed-off'),
        });
        expectObservable(b, '^ 40ms !').toBe('');
        expectObservable(c, '^ 40ms !').toBe('15ms a 9ms b 9ms c', {
          a: elected('c', 3, 45),
          b: renewed('c', 3, 55),
          c: renewed('c', 3, 65),
        });
      });
    });

    it('ignores a request for another tenure, or to itself', () => {
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
        scheduler.schedule(() => ask(7, 'b'), 5);
        scheduler.schedule(() => ask(1, 'a'), 6);
        expectObservable(a, '^ 20ms !').toBe('a 9ms b 9ms c', { a: elected('a', 1, 30), b: renewed('a', 1, 40), c: renewed('a', 1, 50) });
        expectObservable(b, '^ 20ms !').toBe('');
      });
    });

    it('lets anybody take the slot when the named holder does not take it within retryEvery', () => {
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
        scheduler.schedule(() => ask(1, 'gone'), 5);
        expectObservable(a, '^ 20ms !').toBe('a 4ms b', { a: elected('a', 1, 30), b: lost('a', 1, 'handed-off') });
        expectObservable(b, '^ 20ms !').toBe('10ms a 9ms b', { a: elected('b', 3, 40), b: renewed('b', 3, 50) });
      });
    });

    it('does not take the slot back when the window it wrote ends unused: it sits out its sitOut', () => {
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler, sitOut: 20 });
        scheduler.schedule(() => ask(1, 'gone'), 5);
        // The window (term 2) ends at 9; a looks every retryEvery meanwhile, and takes the slot at 25.
        expectObservable(a, '^ 30ms !').toBe('a 4ms b 19ms c', {
          a: elected('a', 1, 30),
          b: lost('a', 1, 'handed-off'),
          c: elected('a', 3, 55),
        });
      });
    });

    it('releases for anybody without a name', () => {
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
        scheduler.schedule(() => ask(1), 5);
        expectObservable(a, '^ 20ms !').toBe('a 4ms b', { a: elected('a', 1, 30), b: lost('a', 1, 'handed-off') });
        expectObservable(b, '^ 20ms !').toBe('5ms a 9ms b', { a: elected('b', 2, 35), b: renewed('b', 2, 45) });
      });
    });
  });

  it('generates a fresh holder for each subscription', () => {
    const holders = [1, 2].map(() => {
      let holder = '';
      observeLeadership(db, timing)
        .pipe(take(1))
        .subscribe((event) => (holder = event.holder));
      return holder;
    });
    expect(holders[0]).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(holders[1]).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(holders[0]).not.toBe(holders[1]);
  });

  it('releases when downstream completes: take(1) after elected leaves the slot free', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }).pipe(take(1))).toBe('(a|)', {
        a: elected('a', 1, 30),
      });
    });
    expect(rows()).toEqual([]);
  });

  it('stops and releases when a downstream operator fails on an event, and goes on with nothing', () => {
    const scheduler = virtualTime();
    const failure = new Error('boom');
    scheduler.run(({ expectObservable }) => {
      const events = observeLeadership(db, { ...timing, holder: 'a', scheduler }).pipe(
        map((event) => {
          if (event.type === 'renewed') throw failure;
          return event.type;
        }),
      );
      expectObservable(events, '^ 40ms !').toBe('a 9ms #', { a: 'elected' }, failure);
    });
    expect(rows()).toEqual([]);
  });

  it('loses as superseded when the row is taken from it, then campaigns again and is re-elected with a greater term', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      // At 12, another worker's statement takes the row (the original worker's take-over
      // UPDATE sets holder, so its trigger advances the term to 2); its lease ends at 50.
      scheduler.schedule(() => db.prepare("UPDATE worker_leadership SET holder = 'original', expires_at = 50").run(), 12);
      const events = observeLeadership(db, { ...timing, holder: 'a', scheduler });
      // It then aims at 51, the first millisecond at which `expires_at < now` holds.
      expectObservable(events, '^ 54ms !').toBe('a 9ms b 9ms c 30ms d', {
        a: elected('a', 1, 30),
        b: renewed('a', 1, 40),
        c: lost('a', 1, 'superseded'),
        d: elected('a', 3, 81),
      });
    });
  });

  describe('after a pause longer than its lease (at 15 the clock jumps 100 ms, as a resumed process sees it)', () => {
    const resume = (duringPause: () => void, unsubscription: string, marble: string, values: Record<string, LeadershipEvent>) => {
      const scheduler = virtualTime();
      const clock = pausableClock(scheduler);
      scheduler.run(({ expectObservable }) => {
        scheduler.schedule(() => {
          clock.pause(100);
          duringPause();
        }, 15);
        const events = observeLeadership(db, { ...timing, holder: 'a', scheduler: clock });
        expectObservable(events, unsubscription).toBe(marble, values);
      });
    };
    const beforePause = { a: elected('a', 1, 30), b: renewed('a', 1, 40) };

    it('renews when nobody took the slot meanwhile: the renewal proves it', () => {
      resume(() => {}, '^ 21ms !', 'a 9ms b 9ms c', { ...beforePause, c: renewed('a', 1, 150) });
    });

    it('loses as superseded when somebody took the slot meanwhile', () => {
      const takeOver = () => db.prepare("UPDATE worker_leadership SET holder = 'b', expires_at = 145").run();
      resume(takeOver, '^ 20ms !', 'a 9ms b 9ms c', { ...beforePause, c: lost('a', 1, 'superseded') });
    });

    it('loses even when the row shows its holder again: the term tells tenures apart', () => {
      // b took the expired slot, then a process with the same holder name took it back: the
      // row reads as before, but two tenures began since.
      const takeOverTwice = () => {
        db.prepare("UPDATE worker_leadership SET holder = 'b', expires_at = 145").run();
        db.prepare("UPDATE worker_leadership SET holder = 'a', expires_at = 145").run();
      };
      // The lost tenure ends first; then, holding its own name, it takes the row at once as
      // a new tenure (term 4): why two live candidates must never share a holder.
      resume(takeOverTwice, '^ 21ms !', 'a 9ms b 9ms (cd)', {
        ...beforePause,
        c: lost('a', 1, 'superseded'),
        d: elected('a', 4, 150),
      });
    });
  });

  it('passes nothing of a tenure on through whileLeader once its lease ran out, though the job’s timer fell due before the campaign’s', () => {
    const scheduler = virtualTime();
    const clock = pausableClock(scheduler);
    scheduler.run(({ expectObservable }) => {
      // At 12 the process pauses for 100: at 15 the job's tick is the first timer to run, past
      // the lease (40). The tenure ends then, before the tick gets through, and a new one
      // begins retryEvery later (at 19), once any other candidate could have gone first.
      scheduler.schedule(() => clock.pause(100), 12);
      const ticks = observeLeadership(db, { ...timing, holder: 'a', scheduler: clock }).pipe(
        whileLeader((lease) => interval(5, scheduler).pipe(map(() => lease.term))),
      );
      expectObservable(ticks, '^ 30ms !').toBe('5ms a 4ms a 13ms b 4ms b', { a: 1, b: 2 });
    });
  });

  it('drains through whileLeader: the job in flight finishes, no new one starts, then the lease is released and the next candidate takes it', () => {
    const scheduler = virtualTime();
    const started: number[] = [];
    scheduler.run(({ hot, expectObservable }) => {
      // Jobs of 7 ms, one every 5 ms at most (concatMap buffers the ticks); asked to drain at 9.
      const job = (start: StartJob, term: number) =>
        start(() => {
          started.push(scheduler.now());
          return timer(7, scheduler).pipe(map(() => term));
        });
      const a = observeLeadership(db, { ...timing, holder: 'a', scheduler }).pipe(
        whileLeader((lease, start) => interval(5, scheduler).pipe(concatMap(() => job(start, lease.term))), {
          drainOn: hot('9ms s'),
          scheduler,
        }),
      );
      const b = observeLeadership(db, { ...timing, holder: 'b', scheduler });
      expectObservable(a).toBe('12ms (a|)', { a: 1 });
      expectObservable(b, '^ 15ms !').toBe('12ms c', { c: elected('b', 2, 42) });
    });
    expect(started).toEqual([5]);
  });

  it('refuses a second live subscription with the same holder, and accepts it once the first has ended', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      const a = observeLeadership(db, { ...timing, holder: 'a', scheduler });
      expectObservable(a, '^ 4ms !').toBe('a', { a: elected('a', 1, 30) });
      expectObservable(a, '^ 4ms !').toBe('#', undefined, failedWith('HOLDER_IN_USE'));
      expectObservable(a, '5ms ^ 4ms !').toBe('5ms a', { a: elected('a', 2, 35) });
    });
  });

  it('starts a subscription of a holder only once the last acquisition of the one it follows settled (found by the simulator)', () => {
    // npm run simulate, seed 356: a candidate resubscribed with its holder while its
    // acquisition was on its way; that one then took the slot from the new subscription
    // (held by the same holder), and released it as it withdrew; another took the slot while
    // the new one still believed it led.
    const scheduler = virtualTime();
    const sqlite = sqliteLeaseStore(db);
    // A store across a network: each statement runs some ms after it was sent, its answer comes later still.
    const delays: Array<[number, number]> = [
      [8, 0], // the first subscription's acquisition: run at 8, answered at once
      [5, 18], // the next one's: run 5 ms after it was sent, answered 18 ms after that
    ];
    const across: LeaseStore = {
      clock: sqlite.clock,
      look: (...args) => sqlite.look(...args),
      acquire: (...args) => {
        const [run, answer] = delays.shift() ?? [0, 0];
        return {
          then: ((onResult: (value: AcquireResult) => void) => {
            scheduler.schedule(() => {
              const result = sqlite.acquire(...args);
              scheduler.schedule(() => onResult(result), answer);
            }, run);
          }) as PromiseLike<AcquireResult>['then'],
        };
      },
      renew: (...args) => sqlite.renew(...args),
      release: (...args) => sqlite.release(...args),
    };
    const seen: string[] = [];
    const record = (who: string) => (event: LeadershipEvent) =>
      seen.push(`${scheduler.now()} ${who} ${event.type}${'term' in event ? ` ${event.term}` : ''}`);
    scheduler.run(() => {
      const first = observeLeadership(across, { ...timing, holder: 'h', scheduler }).subscribe(record('first'));
      scheduler.schedule(() => {
        first.unsubscribe();
        observeLeadership(across, { ...timing, holder: 'h', scheduler })
          .pipe(take(2))
          .subscribe(record('next'));
      }, 2);
      scheduler.schedule(
        () =>
          observeLeadership(db, { ...timing, holder: 'c', scheduler })
            .pipe(take(1))
            .subscribe(record('c')),
        20,
      );
      scheduler.schedule(() => undefined, 100);
    });
    // The next subscription sent its acquisition once the first's was answered (at 8): the
    // slot was free again then (released at once), and stayed its own; `c` waited for its
    // release (after its renewal, take(2)). Before the fix: '20 c elected 3', '25 next elected 1'.
    expect(seen).toEqual(['31 next elected 2', '34 next renewed 2', '34 c elected 3']);
  });

  it('ends with DATABASE_CLOSED when the database is closed before subscribe', () => {
    db.close();
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, scheduler }), '^ 40ms !').toBe('#', undefined, failedWith('DATABASE_CLOSED'));
    });
  });

  it('ends with DATABASE_CLOSED when the database is closed while leading, and tears down without throwing', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      scheduler.schedule(() => db.close(), 5);
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 40ms !').toBe(
        'a 9ms #',
        { a: elected('a', 1, 30) },
        failedWith('DATABASE_CLOSED'),
      );
    });
  });

  it('tears down without throwing when the database was closed under a subscription', () => {
    const subscription = observeLeadership(db, timing).subscribe();
    db.close();
    expect(() => subscription.unsubscribe()).not.toThrow();
  });

  it('ends with SCHEMA_MISMATCH when worker_leadership has another shape', () => {
    db.exec('CREATE TABLE worker_leadership (slot TEXT PRIMARY KEY, owner TEXT)');
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, scheduler }), '^ 40ms !').toBe('#', undefined, failedWith('SCHEMA_MISMATCH'));
    });
  });

  it('works on a table the original worker created and holds, taking it once its lease expires', () => {
    db.exec(originalTable);
    db.exec("INSERT INTO worker_leadership VALUES (0, 'rust-worker', 6)");
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, holder: 'a', scheduler }), '^ 9ms !').toBe('7ms a', {
        a: elected('a', 1, 37),
      });
    });
  });
});

describe("the original worker's test scenarios, through observeLeadership", () => {
  let db: Database.Database;
  const row = () => db.prepare('SELECT holder, expires_at FROM worker_leadership WHERE slot = 0').get();
  const candidate = (holder: string, scheduler = virtualTime()) => observeLeadership(db, { ...timing, holder, scheduler });

  beforeEach(() => (db = new Database(':memory:')));
  afterEach(() => db.close());

  it('three candidates, one leader', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      const unsubscription = '^ 25ms !';
      expectObservable(candidate('a', scheduler), unsubscription).toBe('a 9ms b 9ms c', {
        a: elected('a', 1, 30),
        b: renewed('a', 1, 40),
        c: renewed('a', 1, 50),
      });
      expectObservable(candidate('b', scheduler), unsubscription).toBe('');
      expectObservable(candidate('c', scheduler), unsubscription).toBe('');
    });
  });

  it('a leader that stops renewing expires, and a new one acquires', () => {
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      // The stale leader: the original worker, on the table it created, acquires at 0
      // until 30 and then never renews.
      db.exec(originalTable);
      originalStatements(db, 'stale', 30).tryAcquire(0);
      expectObservable(candidate('b', scheduler), '^ 35ms !').toBe('31ms a', { a: elected('b', 1, 61) });
    });
  });

  it('release removes its own row', () => {
    const subscription = candidate('a').subscribe();
    expect(row()).toEqual({ holder: 'a', expires_at: 30 });
    subscription.unsubscribe();
    expect(row()).toBeUndefined();
  });

  it('release twice is fine', () => {
    const subscription = candidate('a').subscribe();
    subscription.unsubscribe();
    expect(() => subscription.unsubscribe()).not.toThrow();
    expect(row()).toBeUndefined();
  });

  it("a late release by a superseded holder leaves the new holder's lease alone", () => {
    const subscription = candidate('a').subscribe();
    // b takes the row before a's next renewal could tell a that it lost.
    db.prepare("UPDATE worker_leadership SET holder = 'b', expires_at = 90").run();
    subscription.unsubscribe();
    expect(row()).toEqual({ holder: 'b', expires_at: 90 });
  });

  it('release without acquire changes nothing', () => {
    const leader = candidate('a').subscribe();
    const follower = candidate('b').subscribe();
    follower.unsubscribe();
    expect(row()).toEqual({ holder: 'a', expires_at: 30 });
    leader.unsubscribe();
  });
});

describe('observeLeadership on a database file', () => {
  let file: TemporaryDatabase;
  beforeEach(() => (file = temporaryDatabase()));
  afterEach(() => {
    jest.restoreAllMocks();
    file.remove();
  });

  it.each([
    ['its own busy timeout at 0', 0],
    ['a busy timeout of 5 s (better-sqlite3’s default), which it never waits in', 5_000],
  ])(
    'with %s: tries renewals again while another connection holds the write lock, reports it every retryEvery, loses as expired at the expiry it last wrote, then is re-elected retryEvery later',
    (_, timeout) => {
      jest.spyOn(Math, 'random').mockReturnValue(0); // steps of 1 ms
      const db = file.open({ timeout });
      const other = file.open({ timeout: 0 });
      const scheduler = virtualTime();
      scheduler.run(({ expectObservable }) => {
        // Another connection holds the write lock from 5 to 32: every write of ours finds it taken.
        scheduler.schedule(() => other.exec('BEGIN IMMEDIATE'), 5);
        scheduler.schedule(() => other.exec('COMMIT'), 32);
        const events = observeLeadership(db, { ...timing, holder: 'a', scheduler });
        // Renewals from 10 every ms: reported at 14, 18, 22 and 26; lost at 30; elected at 34,
        // once any other candidate had retryEvery to take the slot first.
        expectObservable(events, '^ 38ms !').toBe('a 13ms e 3ms e 3ms e 3ms e 3ms l 3ms b', {
          a: elected('a', 1, 30),
          e: busy('a'),
          l: lost('a', 1, 'expired'),
          b: elected('a', 2, 64),
        });
      });
      expect(db.pragma('busy_timeout', { simple: true })).toBe(timeout);
    },
  );

  it('lets a follower locked out as long take the slot first when the lease it could not renew ran out (a pause inside a write, say)', () => {
    jest.spyOn(Math, 'random').mockReturnValue(0); // steps of 1 ms
    const [first, second, other] = [file.open(), file.open(), file.open()];
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      // Another connection holds the write lock from 5 until a's lease runs out at 30, as a
      // leader paused inside its renewal would: nobody could take the slot meanwhile.
      scheduler.schedule(() => other.exec('BEGIN IMMEDIATE'), 5);
      scheduler.schedule(() => other.exec('COMMIT'), 30);
      const quiet = { ...timing, retryEvery: 100 }; // no DATABASE_BUSY reports, for a short diagram
      const a = observeLeadership(first, { ...quiet, holder: 'a', scheduler });
      const b = observeLeadership(second, { ...quiet, holder: 'b', scheduler });
      expectObservable(a, '^ 36ms !').toBe('a 29ms l', { a: elected('a', 1, 30), l: lost('a', 1, 'expired') });
      // b tries at 31, the first ms after the lease it saw: a, first to know, waits retryEvery.
      expectObservable(b, '^ 36ms !').toBe('31ms b', { b: elected('b', 2, 61) });
    });
  });

  it('refuses a second live subscription with the same holder through another connection to the same file: one election, not two', () => {
    // Both would pass the compare-and-set (holder = self), and both believe they lead.
    const [first, second] = [file.open(), file.open()];
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(first, { ...timing, holder: 'a', scheduler }), '^ 4ms !').toBe('a', { a: elected('a', 1, 30) });
      expectObservable(observeLeadership(second, { ...timing, holder: 'a', scheduler }), '^ 4ms !').toBe(
        '#',
        undefined,
        failedWith('HOLDER_IN_USE'),
      );
      expectObservable(observeLeadership(second, { ...timing, holder: 'b', scheduler }), '^ 4ms !').toBe('');
    });
  });

  it('ends with DATABASE_READONLY on a read-only connection', () => {
    file.open().close();
    const db = file.open({ readonly: true });
    const scheduler = virtualTime();
    scheduler.run(({ expectObservable }) => {
      expectObservable(observeLeadership(db, { ...timing, scheduler }), '^ 40ms !').toBe('#', undefined, failedWith('DATABASE_READONLY'));
    });
  });
});

import Database from 'better-sqlite3';
import { Campaign } from '../../src/campaign/campaign';
import { Lease, LeadershipEvent } from '../../src';
import {
  AcquireOptions,
  AcquireResult,
  ChangeOrigin,
  Handoffs,
  HandoffMessage,
  LeaseChange,
  LeaseRecord,
  LeaseStore,
  LockTaken,
  StandbyPlaces,
  StoreCapabilities,
  TenureProof,
} from '../../src/store/lease-store';
import { sqliteLeaseStore } from '../../src/store/sqlite/sqlite-lease-store';
import { pausableClock, virtualTime } from '../support/virtual-time';
import { at } from '../support/clock-reading';

// The campaign on its own, with a store whose change notifications the spec fires by hand.
describe('Campaign', () => {
  let db: Database.Database;
  let notify: ((origin: ChangeOrigin, change: LeaseChange) => void) | undefined;
  let store: LeaseStore;
  /** The store's capabilities, which a spec may add to before it starts a campaign. */
  let powers: { -readonly [Name in keyof StoreCapabilities]: StoreCapabilities[Name] };
  let watching: boolean;

  beforeEach(() => {
    db = new Database(':memory:');
    const sqlite = sqliteLeaseStore(db);
    watching = false;
    powers = {
      standby: {
        standBy: (...args) => sqlite.capabilities.standby.standBy(...args),
        leaveStandby: (...args) => sqlite.capabilities.standby.leaveStandby(...args),
      },
      changes: {
        watch: (listener) => {
          notify = listener;
          return () => (notify = undefined);
        },
        isWatching: () => watching,
      },
    };
    store = {
      clock: 'candidate',
      look: (...args) => sqlite.look(...args),
      acquire: (...args) => sqlite.acquire(...args),
      renew: (...args) => sqlite.renew(...args),
      release: (...args) => sqlite.release(...args),
      capabilities: powers,
    };
  });
  afterEach(() => {
    jest.restoreAllMocks();
    db.close();
  });

  /** Runs a campaign for `b` while `x` holds the slot until 100, with `script` at given frames. */
  function campaignOfB(
    script: Record<number, () => void>,
    until = 40,
    timing = { renewEvery: 30, expiresAfter: 90, retryEvery: 50 },
  ): Array<[number, LeadershipEvent['type']]> {
    const scheduler = virtualTime();
    const seen: Array<[number, LeadershipEvent['type']]> = [];
    scheduler.run(() => {
      sqliteLeaseStore(db).acquire(0, 'x', at(0), 100);
      const campaign = new Campaign(
        store,
        0,
        'b',
        timing,
        {
          next: (event) => seen.push([scheduler.now(), event.type]),
          error: (error) => {
            throw error;
          },
        },
        scheduler,
      );
      campaign.start();
      for (const [frame, step] of Object.entries(script)) scheduler.schedule(step, Number(frame));
      scheduler.schedule(() => campaign.stop(), until);
    });
    return seen;
  }
  const releaseX = () => sqliteLeaseStore(db).release({ slot: 0, holder: 'x', term: 1 });

  /**
   * b leads `slot` (from 0) on a store whose handovers go through `handOver`; at 10 it is
   * asked by a message from `origin` to hand over to c (`told` runs right after the message); it
   * stops at `stopAt`.
   */
  function askedToHandOver(
    scheduler: ReturnType<typeof virtualTime>,
    handOver: Handoffs['handOver'],
    {
      slot = 0,
      origin = 'anywhere',
      stopAt = 40,
      told = () => undefined,
    }: { slot?: number; origin?: ChangeOrigin; stopAt?: number; told?: () => void } = {},
  ): void {
    let hear: ((message: HandoffMessage, origin?: ChangeOrigin) => void) | undefined;
    powers.handoffs = {
      tell: () => undefined,
      handOver,
      watchHandoffs: (_holder, listener) => ((hear = listener), () => (hear = undefined)),
    };
    scheduler.run(() => {
      const observer = {
        next: () => undefined,
        error: (error: unknown) => {
          throw error;
        },
      };
      const campaign = new Campaign(store, slot, 'b', { renewEvery: 30, expiresAfter: 300, retryEvery: 50 }, observer, scheduler);
      campaign.start();
      scheduler.schedule(() => {
        hear?.({ kind: 'asked', lease: { slot, holder: 'b', term: 1 }, to: 'c' }, origin);
        told();
      }, 10);
      scheduler.schedule(() => campaign.stop(), stopAt);
    });
  }

  it('tries at once after a change in this process, long before its timer (due at 50)', () => {
    expect(campaignOfB({ 10: () => (releaseX(), notify?.('here', 'release')) })).toEqual([[10, 'elected']]);
  });

  it('tries at once, without queueing for the write lock, after a release seen through the file', () => {
    const acquire = jest.spyOn(store, 'acquire');
    const seen = campaignOfB({ 10: () => (releaseX(), [1, 2, 3].forEach(() => notify?.('anywhere', 'release'))) });
    expect(seen).toEqual([[10, 'elected']]);
    expect(acquire).toHaveBeenCalledTimes(2); // at 0, and once at 10: the later changes find it leading
    expect(acquire).toHaveBeenLastCalledWith(
      0,
      'b',
      expect.objectContaining({ now: 10 }),
      90,
      expect.objectContaining({ waitForLock: false }),
    );
  });

  it('steps aside without an error event when a crowd attempt finds the lock taken, and tries again a few ms later', () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.5); // the first step: 10 (the crowd's patience) + 1 + 1 ms
    const { acquire } = store;
    jest.spyOn(store, 'acquire').mockImplementation((...args) => {
      if (args[4]?.waitForLock === false) throw new LockTaken('database is locked');
      return acquire(...args);
    });
    const seen = campaignOfB({ 10: () => (releaseX(), notify?.('anywhere', 'release')) });
    expect(seen).toEqual([[22, 'elected']]);
  });

  it('reads the slot before trying when its watch says changes may have gone unheard (it just began to hear them)', () => {
    const acquire = jest.spyOn(store, 'acquire');
    const timing = { renewEvery: 60, expiresAfter: 200, retryEvery: 50 };
    // x released at 5, before the watch heard anything; its timer alone would find out at 50.
    expect(campaignOfB({ 5: releaseX, 10: () => notify?.('anywhere', 'unheard') }, 40, timing)).toEqual([[10, 'elected']]);
    expect(acquire).toHaveBeenLastCalledWith(
      0,
      'b',
      expect.objectContaining({ now: 10 }),
      200,
      expect.objectContaining({ waitForLock: true }),
    );
  });

  it.each([
    ['without a watch, every retryEvery', false, 30],
    ['with a watch, only as often as renewals come (a safety net)', true, 60],
  ])('reads the slot %s', (_, watch, electedAt) => {
    // x releases at 25 and the change goes unreported: the timer is all that finds out.
    watching = watch;
    const timing = { renewEvery: 60, expiresAfter: 200, retryEvery: 10 };
    expect(campaignOfB({ 25: releaseX }, 80, timing)).toEqual([[electedAt, 'elected']]);
  });

  it('without a standby place, listens not, relies on the standbys and lets them try first at the expiry', () => {
    ['p', 'q', 'r'].forEach((holder) => sqliteLeaseStore(db).capabilities.standby.standBy(0, holder, at(0), 1_000, 3));
    const acquire = jest.spyOn(store, 'acquire');
    const timing = { renewEvery: 60, expiresAfter: 200, retryEvery: 10 };
    // x's lease ends at 100: polls every renewEvery, then tries at 100 + 1 + retryEvery.
    expect(campaignOfB({ 15: () => expect(notify).toBeUndefined() }, 150, timing)).toEqual([[111, 'elected']]);
    expect(acquire.mock.calls.map(([, , now]) => now.now)).toEqual([0, 60, 111]);
  });

  it('gives its standby place up when stopped, and listens from then on no more', () => {
    const leave = jest.spyOn(powers.standby as StandbyPlaces, 'leaveStandby');
    campaignOfB({ 20: () => expect(notify).toBeDefined() });
    expect(leave).toHaveBeenCalledWith(0, 'b');
    expect(notify).toBeUndefined();
  });

  it('acts on a message about a handoff from another process at once, and on one told on its own connection once the call that told it is over', () => {
    const sqlite = sqliteLeaseStore(db);
    /** What happens when b, leading `slot` in term 1, is asked to hand over to c by a message from `origin`. */
    const askedFrom = (slot: number, origin: ChangeOrigin) => {
      const order: string[] = [];
      const handOver: Handoffs['handOver'] = (...args) => (order.push('handed over'), sqlite.capabilities.handoffs.handOver(...args));
      askedToHandOver(virtualTime(), handOver, { slot, origin, told: () => order.push('told') });
      return order;
    };
    expect(askedFrom(0, 'anywhere')).toEqual(['handed over', 'told']);
    expect(askedFrom(1, 'here')).toEqual(['told', 'handed over']);
  });

  it('with a priority declared, hears a release before its standby place is answered (seen in the conformance spec on PostgreSQL, Node.js 22 and 26)', () => {
    // A store across a network: the place is still to be answered when x releases, at 20.
    (powers.standby as StandbyPlaces).standBy = () => new Promise<boolean>(() => undefined);
    powers.priorities = { declare: () => undefined, highest: () => 0, answersLocally: true };
    const timing = { renewEvery: 30, expiresAfter: 1_000, retryEvery: 300, priority: 7 };
    const seen = campaignOfB({ 20: () => (releaseX(), notify?.('anywhere', 'release')) }, 60, timing);
    // Before: it did not listen until the place was answered, so it heard nothing and took
    // the slot only at its poll, after the equals had waited their retryEvery for it.
    expect(seen[0]).toEqual([20, 'elected']);
  });

  it('put off for a higher priority, makes no attempt while the slot it found held may not have been freed, and takes it once a release is heard and the put-off is over', () => {
    powers.priorities = { declare: () => undefined, highest: () => 9, answersLocally: true };
    const acquire = jest.spyOn(store, 'acquire');
    const timing = { renewEvery: 30, expiresAfter: 1_000, retryEvery: 50, priority: 1 };
    // x holds the slot until 1_001; it releases at 400, and the message comes at 410.
    const holdX = () => sqliteLeaseStore(db).renew({ slot: 0, holder: 'x', term: 1 }, at(1), 1_000);
    const seen = campaignOfB({ 1: holdX, 400: releaseX, 410: () => notify?.('anywhere', 'release') }, 600, timing);
    // Put off at 0, it tries at 50 (nothing found yet) and finds x; it listens from its first
    // attempt (it declared a priority then), so nothing more until the release is heard: an
    // attempt at 400, as x releases, would have raced the candidate of 9.
    const tries = acquire.mock.calls.map(([, , now]) => now.now);
    expect(tries.filter((at) => at < 410)).toEqual([50]);
    expect(seen[0]).toEqual([410 + 50, 'elected']); // the candidate of 9 had its retryEvery from the message
  });

  it('pays no attention to changes while it leads', () => {
    const renew = jest.spyOn(store, 'renew');
    const acquire = jest.spyOn(store, 'acquire');
    const seen = campaignOfB({ 10: () => (releaseX(), notify?.('here', 'release')), 20: () => notify?.('here', 'release') }, 60);
    expect(seen).toEqual([
      [10, 'elected'],
      [40, 'renewed'],
    ]);
    expect(acquire).toHaveBeenCalledTimes(2);
    expect(renew).toHaveBeenCalledTimes(1);
  });

  describe('with a store that can prove a tenure ended (SQLite: a leader on this host whose process is gone)', () => {
    let watched: Array<{ lease: Lease; onEnded: () => void; closed: boolean }>;
    beforeEach(() => {
      watched = [];
      powers.tenureProof = {
        endTenure: () => undefined,
        watchTenure: (lease, onEnded) => {
          const watch = { lease, onEnded, closed: false };
          watched.push(watch);
          return {
            get watching() {
              return !watch.closed;
            },
            close: () => void (watch.closed = true),
          };
        },
      };
    });

    it('watches the tenure it found as a standby, and takes the slot from it at once on proof of its end', () => {
      const acquire = jest.spyOn(store, 'acquire');
      // x's lease runs until 100; the proof comes at 10.
      expect(campaignOfB({ 10: () => watched[0].onEnded() })).toEqual([[10, 'elected']]);
      expect(watched.map(({ lease }) => lease)).toEqual([{ slot: 0, holder: 'x', term: 1 }]);
      expect(acquire).toHaveBeenLastCalledWith(
        0,
        'b',
        expect.objectContaining({ now: 10 }),
        90,
        expect.objectContaining({ provenEnded: { slot: 0, holder: 'x', term: 1 } }),
      );
    });

    it('without proof, waits for the lease: a watch that stops without a word proves nothing', () => {
      const timing = { renewEvery: 60, expiresAfter: 200, retryEvery: 10 };
      const seen = campaignOfB({ 10: () => void (watched[0].closed = true) }, 150, timing);
      expect(seen).toEqual([[101, 'elected']]); // the first millisecond after x's expiry at 100
      expect(watched.length).toBeGreaterThan(1); // watched again at later attempts
    });

    it('takes nothing from a tenure that is no longer the slot’s when the proof comes', () => {
      const store2 = sqliteLeaseStore(db);
      const seen = campaignOfB({
        5: () => (releaseX(), store2.acquire(0, 'x', at(5), 1_000)), // x's next tenure, term 2, unreported
        10: () => watched[0].onEnded(), // the end of x's term 1, proven late
      });
      expect(seen).toEqual([]);
      expect(store2.look(0, at(0))?.lease).toMatchObject({ holder: 'x', term: 2 });
    });

    it('claims a standby place again a few ms later when its first claim found the lock taken, and watches the tenure, long before its next poll', () => {
      const places = powers.standby as StandbyPlaces;
      const standBy = jest.spyOn(places, 'standBy').mockImplementationOnce(() => {
        throw new LockTaken('database is locked');
      });
      const acquire = jest.spyOn(store, 'acquire');
      // x's lease runs until 100 and b polls every 50: only the claim's own retry comes sooner.
      campaignOfB({ 10: () => watched[0].onEnded() }, 40);
      expect(standBy).toHaveBeenCalledTimes(2);
      expect(acquire.mock.calls[1][2].now).toBeLessThan(5);
      expect(watched[0].lease).toEqual({ slot: 0, holder: 'x', term: 1 });
    });

    it('claims nothing sooner than its poll when a place it holds could not be renewed: it stands by as it was', () => {
      const places = powers.standby as StandbyPlaces;
      let claims = 0;
      jest.spyOn(places, 'standBy').mockImplementation((...args) => {
        if (++claims > 1) throw new LockTaken('database is locked');
        return sqliteLeaseStore(db).capabilities.standby.standBy(...args);
      });
      const acquire = jest.spyOn(store, 'acquire');
      let watchingAt70: boolean[] = [];
      campaignOfB({ 70: () => (watchingAt70 = watched.map(({ closed }) => !closed)) }, 80);
      expect(acquire.mock.calls.map(([, , now]) => now.now)).toEqual([0, 50]);
      expect(watchingAt70).toEqual([true]);
    });

    it('gives its standby place up at the end even while the lock is taken for a few ms', () => {
      const leave = jest.spyOn(powers.standby as StandbyPlaces, 'leaveStandby').mockImplementationOnce(() => {
        throw new LockTaken('database is locked');
      });
      campaignOfB({}, 40);
      expect(leave).toHaveBeenCalledTimes(2);
      expect(db.prepare('SELECT count(*) AS n FROM worker_leadership_standby').get()).toEqual({ n: 0 });
    });

    it('ends the tenure for the proof once a handover that kept failing is given up, not before', () => {
      const scheduler = virtualTime();
      const ended: Array<[number, Lease]> = [];
      (powers.tenureProof as TenureProof).endTenure = (lease) => void ended.push([scheduler.now(), lease]);
      const tries: number[] = [];
      jest.spyOn(Math, 'random').mockReturnValue(0.5);
      askedToHandOver(
        scheduler,
        () => {
          tries.push(scheduler.now());
          throw new LockTaken('database is locked');
        },
        { stopAt: 200 },
      );
      // Tried on short steps for retryEvery (the lock), then given up: only then may a standby prove the end.
      expect(tries.length).toBeGreaterThan(2);
      expect(ended.length).toBeGreaterThan(0);
      const [at, lease] = ended[0];
      expect(lease).toEqual({ slot: 0, holder: 'b', term: 1 });
      expect(at).toBeGreaterThanOrEqual(tries.at(-1) as number);
      expect(at).toBeGreaterThanOrEqual(60);
    });

    it('ends a tenure it handed over when stopped before the successor had its window, and leaves no timer behind', () => {
      const scheduler = virtualTime();
      const ended: Array<[number, Lease]> = [];
      (powers.tenureProof as TenureProof).endTenure = (lease) => void ended.push([scheduler.now(), lease]);
      // Handed over at 10; the proof would wait for retryEvery (50), but the campaign stops at 20.
      askedToHandOver(scheduler, () => 2, { stopAt: 20 });
      expect(ended).toEqual([[20, { slot: 0, holder: 'b', term: 1 }]]);
    });

    it('releases the tenure it was handing over when stopped while the handover was still being tried', () => {
      const release = jest.spyOn(store, 'release');
      askedToHandOver(
        virtualTime(),
        () => {
          throw new LockTaken('database is locked');
        },
        { stopAt: 20 },
      );
      expect(release).toHaveBeenCalledWith({ slot: 0, holder: 'b', term: 1 });
      expect(sqliteLeaseStore(db).look(0, at(30))).toBeUndefined();
    });

    it('does not watch without a standby place', () => {
      ['p', 'q', 'r'].forEach((holder) => sqliteLeaseStore(db).capabilities.standby.standBy(0, holder, at(0), 1_000, 3));
      campaignOfB({});
      expect(watched).toEqual([]);
    });

    it('tells the store a lost tenure ended only after the `lost` event', () => {
      const order: string[] = [];
      (powers.tenureProof as TenureProof).endTenure = (lease) => void order.push(`endTenure ${lease.term}`);
      const scheduler = virtualTime();
      scheduler.run(() => {
        const campaign = new Campaign(
          store,
          0,
          'b',
          { renewEvery: 30, expiresAfter: 90, retryEvery: 50 },
          {
            next: (event) => order.push(`${event.type} ${'term' in event ? event.term : ''}`),
            error: (error) => {
              throw error;
            },
          },
          scheduler,
        );
        campaign.start();
        // Another holder takes the slot: b's next renewal finds it gone.
        scheduler.schedule(() => db.prepare(`UPDATE worker_leadership SET holder = 'thief' WHERE slot = 0`).run(), 10);
        scheduler.schedule(() => campaign.stop(), 40);
      });
      expect(order).toEqual(['elected 1', 'lost 1', 'endTenure 1']);
    });
  });

  describe('with a store that answers later (a database across the network)', () => {
    const timing = { renewEvery: 30, expiresAfter: 90, retryEvery: 50 };

    /**
     * Runs a campaign for `b` on a free slot; each operation is carried out on SQLite when
     * sent and answered `latency(operation, call)` frames later (never when `Infinity`).
     */
    function campaignAnsweredLater(
      latency: (operation: string, call: number) => number,
      until: number,
      stopAt = until,
      script: Record<number, () => void> = {},
    ) {
      const scheduler = virtualTime();
      const seen: Array<[number, LeadershipEvent]> = [];
      const calls: Record<string, number> = {};
      const later = <T>(operation: string, answer: () => T): PromiseLike<T> => {
        const delay = latency(operation, (calls[operation] = (calls[operation] ?? 0) + 1));
        let value: T;
        let error: unknown;
        try {
          value = answer();
        } catch (thrown) {
          error = thrown ?? new Error('thrown');
        }
        return {
          then(onResult, onError) {
            if (delay !== Infinity) scheduler.schedule(() => (error === undefined ? onResult?.(value) : onError?.(error)), delay);
            return this as never;
          },
        };
      };
      const slow: LeaseStore = {
        ...store,
        acquire: (...args) => later('acquire', () => store.acquire(...args) as AcquireResult),
        renew: (...args) => later('renew', () => store.renew(...args) as boolean),
        release: (...args) => later('release', () => store.release(...args) as boolean),
      };
      scheduler.run(() => {
        const campaign = new Campaign(
          slow,
          0,
          'b',
          timing,
          {
            next: (event) => seen.push([scheduler.now(), event]),
            error: (error) => {
              throw error;
            },
          },
          scheduler,
        );
        campaign.start();
        for (const [frame, step] of Object.entries(script)) scheduler.schedule(step, Number(frame));
        scheduler.schedule(() => campaign.stop(), stopAt);
      });
      return { seen, calls, row: sqliteLeaseStore(db).look(0, at(0))?.lease };
    }

    it('counts each lease from when its write was sent, not from when the answer came', () => {
      const { seen } = campaignAnsweredLater(() => 20, 100);
      expect(seen.map(([at, event]) => [at, event.type, 'expiresAt' in event ? event.expiresAt : undefined])).toEqual([
        [20, 'elected', 90], // sent at 0
        [70, 'renewed', 140], // sent at 50, 30 after the election was known
      ]);
    });

    it('steps down at the end of the lease it last wrote while a renewal goes unanswered', () => {
      const { seen } = campaignAnsweredLater((operation) => (operation === 'renew' ? Infinity : 5), 200);
      expect(seen.map(([at, event]) => [at, event.type, 'reason' in event ? event.reason : undefined])).toEqual([
        [5, 'elected', undefined],
        [90, 'lost', 'expired'], // 0 + expiresAfter: the renewal sent at 35 never came back
      ]);
    });

    it('never believes an acquisition whose answer came after the lease it granted could have run out', () => {
      const { seen } = campaignAnsweredLater((operation, call) => (operation === 'acquire' && call === 1 ? 95 : 5), 160);
      // The answer at 95 is not believed; once the others had retryEvery to go first, the
      // attempt at 145 takes the slot again, as a new tenure.
      expect(seen.map(([at, event]) => [at, event.type, 'term' in event ? event.term : undefined])).toEqual([[150, 'elected', 2]]);
    });

    it('renews within what is left when an answer came so late that less than renewEvery is left', () => {
      const { seen } = campaignAnsweredLater((operation) => (operation === 'acquire' ? 70 : 5), 100);
      // Elected at 70 with 20 left of the lease sent at 0: renews at 80, halfway, not at 100.
      expect(seen.map(([at, event]) => [at, event.type, 'expiresAt' in event ? event.expiresAt : undefined])).toEqual([
        [70, 'elected', 90],
        [85, 'renewed', 170],
      ]);
    });

    it('tries again at once when a release is announced while its own poll is in flight', () => {
      sqliteLeaseStore(db).acquire(0, 'x', at(0), 1_000);
      // b polls every 50 (no watch), each call answered 10 later: sent at 0, then at 60. x releases
      // at 65, while the poll sent at 60 (which found x leading) is in flight.
      const { seen } = campaignAnsweredLater(() => 10, 100, 100, { 65: () => (releaseX(), notify?.('anywhere', 'release')) });
      expect(seen.map(([at, event]) => [at, event.type])).toEqual([[80, 'elected']]); // sent at 70, not at the poll of 120
    });

    it('releases once an acquisition that was in flight when it stopped lands', () => {
      const { seen, row } = campaignAnsweredLater(() => 10, 50, 5);
      expect(seen).toEqual([]);
      expect(row).toBeUndefined(); // taken at 0, answered at 10, released then
    });

    it('makes one call at a time: an attempt due while a renewal is in flight waits for its answer', () => {
      const renewAnsweredAt = 150;
      const { seen } = campaignAnsweredLater((operation) => (operation === 'renew' ? renewAnsweredAt - 35 : 5), 200);
      // lost at 90 while the renewal sent at 35 is in flight; the attempt due then waits for its answer at 150.
      expect(seen.map(([at, event]) => [at, event.type])).toEqual([
        [5, 'elected'],
        [90, 'lost'],
        [155, 'elected'],
      ]);
    });

    it('lets an attempt made on a release replace the poll that falls due while it is in flight', () => {
      sqliteLeaseStore(db).acquire(0, 'x', at(0), 1_000);
      // b polls every 50 (no watch); x releases at 45; the attempt made then is answered at 55.
      const { seen, calls } = campaignAnsweredLater(() => 10, 120, 120, { 45: () => (releaseX(), notify?.('anywhere', 'release')) });
      expect(seen.map(([at, event]) => [at, event.type, 'term' in event ? event.term : undefined])).toEqual([
        [55, 'elected', 2],
        [95, 'renewed', 2], // sent at 85
      ]);
      expect(calls.acquire).toBe(2); // at 0, and at 45: the poll due at 60 was replaced
    });
  });

  describe('with a store whose leases only a reader can time (PostgreSQL: its server’s wall clock may step)', () => {
    /**
     * A store whose slot x holds with a lease of 100 that says its length, and whose server's
     * clock says it ran out long ago (a step forward): `expiresIn` is no use. It gives the
     * slot only to an attempt that names the exact lease (`outwaited`). `renewAt` frames renew x's
     * lease, which changes its expiry.
     */
    function watchingCampaign(
      renewAt: number[],
      until: number,
      { latency = 0, script = {} }: { latency?: number; script?: Record<number, () => void> } = {},
    ) {
      const scheduler = virtualTime();
      const seen: Array<[number, string]> = [];
      const calls: Array<[number, LeaseRecord | undefined]> = [];
      let lease: LeaseRecord = { holder: 'x', term: 1, expiresAt: 1_000 };
      const answer = (holder: string, expiresAfter: number, { outwaited }: AcquireOptions): AcquireResult => {
        if (outwaited && outwaited.holder === lease.holder && outwaited.term === lease.term && outwaited.expiresAt === lease.expiresAt) {
          lease = { holder, term: lease.term + 1, expiresAt: 5_000 };
          return { acquired: true, lease, expiresIn: -4_000, observeFor: expiresAfter };
        }
        return { acquired: false, lease, expiresIn: -4_000, observeFor: 100 };
      };
      const watching: LeaseStore = {
        ...store,
        acquire: (_slot, holder, _now, expiresAfter, options = {}) => {
          calls.push([scheduler.now(), options.outwaited]);
          const result = answer(holder, expiresAfter, options);
          if (latency === 0) return result;
          // Carried out when sent, answered `latency` frames later, as across a network.
          return { then: (onResult) => (scheduler.schedule(() => onResult?.(result), latency), undefined as never) };
        },
      };
      scheduler.run(() => {
        const campaign = new Campaign(
          watching,
          0,
          'b',
          { renewEvery: 30, expiresAfter: 90, retryEvery: 20 },
          {
            next: (event) => seen.push([scheduler.now(), event.type]),
            error: (error) => {
              throw error;
            },
          },
          scheduler,
        );
        campaign.start();
        for (const frame of renewAt) scheduler.schedule(() => (lease = { ...lease, expiresAt: lease.expiresAt + frame }), frame);
        for (const [frame, step] of Object.entries(script)) scheduler.schedule(step, Number(frame));
        scheduler.schedule(() => campaign.stop(), until);
      });
      return { seen, calls };
    }

    it('takes the slot only from the exact lease it watched unchanged for its whole length, not when the server’s clock says it ended', () => {
      const { seen, calls } = watchingCampaign([], 120);
      // First seen at 0; polls every retryEvery; at 101 it has watched it for 100: over.
      expect(seen).toEqual([[101, 'elected']]);
      expect(calls.filter(([, over]) => over !== undefined)).toEqual([[101, { holder: 'x', term: 1, expiresAt: 1_000 }]]);
    });

    it('tries again at once, not at its next poll, when its count ended while an attempt made just before was on its way', () => {
      // Each answer comes 2 later. First seen when the answer to 0 came, at 2: over after 102.
      // Polls every 20 (sent at 0, 22, 44, 66, 88); a change heard at 101 sends an attempt
      // before the count ends, answered after it, at 103. (A timer that fires a ms early, as
      // Node.js's can, does the same.) Then the lease can be taken: at once, not at 123.
      const { seen, calls } = watchingCampaign([], 110, { latency: 2, script: { 101: () => notify?.('anywhere', 'unheard') } });
      expect(calls.map(([frame, over]) => [frame, over !== undefined])).toEqual([
        [0, false],
        [22, false],
        [44, false],
        [66, false],
        [88, false],
        [101, false],
        [103, true],
      ]);
      expect(seen).toEqual([[105, 'elected']]);
    });

    it('starts its count again at each renewal it sees', () => {
      const { seen } = watchingCampaign([30, 70], 200);
      // Seen renewed at the poll of 40 and of 80: over 100 after that, at 181.
      expect(seen).toEqual([[181, 'elected']]);
    });
  });

  it('never believes a renewal whose answer came after the lease it wrote ran out: lost, not renewed', () => {
    const scheduler = virtualTime();
    const clock = pausableClock(scheduler);
    const seen: Array<[number, string, string | undefined]> = [];
    // The process pauses for 200 inside its second renewal (sent at 60), after the write.
    let renewals = 0;
    const pausing: LeaseStore = { ...store, renew: (...args) => (++renewals === 2 && clock.pause(200), store.renew(...args)) };
    scheduler.run(() => {
      const campaign = new Campaign(
        pausing,
        0,
        'b',
        { renewEvery: 30, expiresAfter: 90, retryEvery: 50 },
        {
          next: (event) => seen.push([clock.now(), event.type, 'reason' in event ? event.reason : undefined]),
          error: (error) => {
            throw error;
          },
        },
        clock,
      );
      campaign.start();
      scheduler.schedule(() => campaign.stop(), 115);
    });
    expect(seen).toEqual([
      [0, 'elected', undefined],
      [30, 'renewed', undefined],
      [260, 'lost', 'expired'],
      [310, 'elected', undefined], // retryEvery later: the others go first
    ]);
  });

  describe('believes', () => {
    it('ends the tenure at once, lost first, when asked after the lease ran out and before its timer fired', () => {
      const scheduler = virtualTime();
      const clock = pausableClock(scheduler);
      const seen: Array<[number, string]> = [];
      const answers: boolean[] = [];
      scheduler.run(() => {
        const campaign = new Campaign(
          store,
          0,
          'b',
          { renewEvery: 30, expiresAfter: 90, retryEvery: 50 },
          {
            next: (event) => seen.push([clock.now(), event.type]),
            error: (error) => {
              throw error;
            },
          },
          clock,
        );
        campaign.start();
        scheduler.schedule(() => answers.push(campaign.believes(1), campaign.believes(2)), 10);
        // A pause of 200 at 20: the next timer (the renewal at 30) has not fired yet.
        scheduler.schedule(() => {
          clock.pause(200);
          answers.push(campaign.believes(1));
        }, 20);
        scheduler.schedule(() => campaign.stop(), 75);
      });
      expect(answers).toEqual([true, false, false]);
      expect(seen).toEqual([
        [0, 'elected'],
        [220, 'lost'],
        [270, 'elected'], // retryEvery later: the others go first
      ]);
    });
  });

  describe('while another connection holds the lock (the store never waits for it)', () => {
    const timing = { renewEvery: 30, expiresAfter: 90, retryEvery: 50 };
    /** The store, locked from `from` to `to` (virtual ms): every operation throws LockTaken meanwhile. */
    function lockedStore(scheduler: { now(): number }, from: number, to: number): { store: LeaseStore; calls: Array<[number, string]> } {
      const calls: Array<[number, string]> = [];
      const guarded =
        <A extends unknown[], R>(name: string, operation: (...args: A) => R) =>
        (...args: A): R => {
          const now = scheduler.now();
          calls.push([now, name]);
          if (now >= from && now < to) throw new LockTaken('database is locked');
          return operation(...args);
        };
      return {
        calls,
        store: {
          ...store,
          acquire: guarded('acquire', store.acquire),
          renew: guarded('renew', store.renew),
          release: guarded('release', store.release),
        },
      };
    }
    function run(lockFrom: number, lockTo: number, stopAt: number, random = 0.5) {
      jest.spyOn(Math, 'random').mockReturnValue(random);
      const scheduler = virtualTime();
      const seen: Array<[number, string, string?]> = [];
      const { store: locked, calls } = lockedStore(scheduler, lockFrom, lockTo);
      scheduler.run(() => {
        const campaign = new Campaign(
          locked,
          0,
          'b',
          timing,
          {
            next: (event) =>
              seen.push(event.type === 'error' ? [scheduler.now(), event.type, event.error.code] : [scheduler.now(), event.type]),
            error: (error) => {
              throw error;
            },
          },
          scheduler,
        );
        campaign.start();
        scheduler.schedule(() => campaign.stop(), stopAt);
      });
      return { seen, calls };
    }

    it('a renewal tries again on short, widening steps, silently, and renews once the lock is free', () => {
      const { seen, calls } = run(30, 40, 50);
      // Steps of 2, 3, 5, 9 ms (random 0.5 in widths 2, 4, 8, 16): the renewal of 49 gets through.
      expect(calls.filter(([, name]) => name === 'renew').map(([at]) => at)).toEqual([30, 32, 35, 40]);
      expect(seen).toEqual([
        [0, 'elected'],
        [40, 'renewed'],
      ]);
    });

    it('a renewal locked out until its lease ends: an error event every retryEvery, then lost at the very end of the lease', () => {
      const { seen, calls } = run(30, 1_000, 95);
      // Tries at 30, 32, 35, 40, 49, 66, 83 (steps 2, 3, 5, 9, then 17: the widest, 32, at 0.5).
      expect(seen).toEqual([
        [0, 'elected'],
        [83, 'error', 'DATABASE_BUSY'],
        [90, 'lost'],
      ]);
      // Never more than the widest step (32 ms) between two tries, and none past the lease.
      const renewals = calls.filter(([, name]) => name === 'renew').map(([at]) => at);
      expect(Math.max(...renewals)).toBeLessThan(90);
      expect(
        renewals
          .slice(1)
          .map((at, i) => at - renewals[i])
          .every((gap) => gap >= 1 && gap <= 32),
      ).toBe(true);
    });

    it('a follower locked out for retryEvery reports it once, then tries every retryEvery until the lock is free', () => {
      const { seen, calls } = run(0, 170, 230);
      const attempts = calls.filter(([, name]) => name === 'acquire').map(([at]) => at);
      // Tries at 0, 2, 5, 10, 19, 36, 53: reported; then at 103 and on the same steps to 156: reported; then 206.
      expect(seen).toEqual([
        [53, 'error', 'DATABASE_BUSY'],
        [156, 'error', 'DATABASE_BUSY'],
        [206, 'elected'],
      ]);
      expect(attempts.filter((at) => at > 53 && at < 103)).toEqual([]);
      expect(attempts.filter((at) => at > 156 && at < 206)).toEqual([]);
    });

    it('a release that finds the lock taken is tried again until it gets through, for up to retryEvery', () => {
      const { calls } = run(40, 45, 40);
      expect(calls.filter(([, name]) => name === 'release').map(([at]) => at)).toEqual([40, 42, 45]);
      expect(sqliteLeaseStore(db).look(0, at(0))?.lease).toBeUndefined();
    });

    it('spreads a crowd: campaigns drawing different steps try again at different moments', () => {
      const first = run(30, 60, 70, 0.1).calls.filter(([, name]) => name === 'renew');
      jest.restoreAllMocks();
      const second = run(30, 60, 70, 0.9).calls.filter(([, name]) => name === 'renew');
      expect(first.slice(1, 4)).not.toEqual(second.slice(1, 4));
    });
  });
});

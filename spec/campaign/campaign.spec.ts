import Database from 'better-sqlite3';
import { Campaign } from '../../src/campaign/campaign';
import { LeadershipEvent } from '../../src';
import { ChangeOrigin, LeaseStore } from '../../src/store/lease-store';
import { sqliteLeaseStore } from '../../src/store/sqlite/sqlite-lease-store';
import { virtualTime } from '../support/virtual-time';

// The campaign on its own, with a store whose change notifications the spec fires by hand.
describe('Campaign', () => {
  let db: Database.Database;
  let notify: ((origin: ChangeOrigin) => void) | undefined;
  let store: LeaseStore;

  beforeEach(() => {
    db = new Database(':memory:');
    const sqlite = sqliteLeaseStore(db);
    store = {
      acquire: (...args) => sqlite.acquire(...args),
      renew: (...args) => sqlite.renew(...args),
      release: (...args) => sqlite.release(...args),
      read: (...args) => sqlite.read(...args),
      fenced: (...args) => sqlite.fenced(...args),
      watch: (listener) => {
        notify = listener;
        return () => (notify = undefined);
      },
    };
  });
  afterEach(() => {
    jest.restoreAllMocks();
    db.close();
  });

  /** Runs a campaign for `b` while `x` holds the slot until 100, with `script` at given frames. */
  function campaignOfB(script: Record<number, () => void>, until = 40): Array<[number, LeadershipEvent['type']]> {
    const scheduler = virtualTime();
    const seen: Array<[number, LeadershipEvent['type']]> = [];
    scheduler.run(() => {
      sqliteLeaseStore(db).acquire(0, 'x', 0, 100);
      const campaign = new Campaign(
        store,
        0,
        'b',
        { renewEvery: 30, expiresAfter: 90, retryEvery: 50 },
        { next: (event) => seen.push([scheduler.now(), event.type]), error: (error) => { throw error; } },
        scheduler,
      );
      campaign.start();
      for (const [frame, step] of Object.entries(script)) scheduler.schedule(step, Number(frame));
      scheduler.schedule(() => campaign.stop(), until);
    });
    return seen;
  }
  const releaseX = () => sqliteLeaseStore(db).release({ slot: 0, holder: 'x', term: 1 });

  it('tries at once after a change in this process, long before its timer (due at 50)', () => {
    expect(campaignOfB({ 10: () => (releaseX(), notify?.('here')) })).toEqual([[10, 'elected']]);
  });

  it('spreads its attempt over up to 10 ms after a change seen through the file, and makes one attempt for a burst', () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.55); // 5.5 ms, floored
    const acquire = jest.spyOn(store, 'acquire');
    const seen = campaignOfB({ 10: () => (releaseX(), [1, 2, 3].forEach(() => notify?.('anywhere'))) });
    expect(seen).toEqual([[15, 'elected']]);
    expect(acquire).toHaveBeenCalledTimes(2); // at 0, and once at 15
  });

  it('pays no attention to changes while it leads', () => {
    const renew = jest.spyOn(store, 'renew');
    const acquire = jest.spyOn(store, 'acquire');
    const seen = campaignOfB({ 10: () => (releaseX(), notify?.('here')), 20: () => notify?.('here') }, 60);
    expect(seen).toEqual([[10, 'elected'], [40, 'renewed']]);
    expect(acquire).toHaveBeenCalledTimes(2);
    expect(renew).toHaveBeenCalledTimes(1);
  });

  it('stops listening when stopped', () => {
    campaignOfB({});
    expect(notify).toBeUndefined();
  });
});

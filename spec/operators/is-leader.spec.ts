import { isLeader, LeadershipError, LeadershipEvent } from '../../src';
import { virtualTime } from '../support/virtual-time';

describe('isLeader', () => {
  it('starts false, turns true on elected and false on lost, ignores errors, and never repeats itself', () => {
    const scheduler = virtualTime();
    scheduler.run(({ cold, expectObservable }) => {
      const events: Record<string, LeadershipEvent> = {
        e: { type: 'elected', slot: 0, holder: 'a', term: 1, expiresAt: 30 },
        r: { type: 'renewed', slot: 0, holder: 'a', term: 1, expiresAt: 40 },
        x: { type: 'error', slot: 0, holder: 'a', error: new LeadershipError('DATABASE_BUSY', 'busy') },
        l: { type: 'lost', slot: 0, holder: 'a', term: 1, reason: 'superseded' },
      };
      expectObservable(cold('-x-e-r-x-l-x-e|', events).pipe(isLeader())).toBe('f--t-----f---t|', { f: false, t: true });
    });
  });
});

import { LeadershipError, LeadershipEvent, whileLeader } from '../../src';
import { virtualTime } from '../support/virtual-time';

const events: Record<string, LeadershipEvent> = {
  e: { type: 'elected', slot: 0, holder: 'a', term: 1, expiresAt: 30 },
  r: { type: 'renewed', slot: 0, holder: 'a', term: 1, expiresAt: 40 },
  x: { type: 'error', slot: 0, holder: 'a', error: new LeadershipError('DATABASE_BUSY', 'busy') },
  l: { type: 'lost', slot: 0, holder: 'a', term: 1, reason: 'expired' },
  f: { type: 'elected', slot: 0, holder: 'a', term: 2, expiresAt: 80 },
};

describe('whileLeader', () => {
  it('runs the project for each tenure: from elected to lost, through renewals and errors', () => {
    const scheduler = virtualTime();
    const tenures: number[] = [];
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const job = cold('-j-j-j-j-j-j-j-j');
      const source = hot('e-r-x-----l--f-----', events);
      const result = source.pipe(
        whileLeader((lease) => {
          tenures.push(lease.term);
          return job;
        }),
      );
      expectObservable(result, '^ 17ms !').toBe('-j-j-j-j-j----j-j', { j: 'j' });
      expectSubscriptions(job.subscriptions).toBe(['^---------!', '-------------^----!']);
    });
    expect(tenures).toEqual([1, 2]);
  });

  it('unsubscribes the project when the events end with an error, and passes the error on', () => {
    const scheduler = virtualTime();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const job = cold('-j-j-j-j');
      const failure = new LeadershipError('DATABASE_CLOSED', 'closed');
      const source = hot('e----#', events, failure);
      expectObservable(source.pipe(whileLeader(() => job))).toBe('-j-j-#', { j: 'j' }, failure);
      expectSubscriptions(job.subscriptions).toBe('^----!');
    });
  });

  it('refuses a project that is not a function, at once', () => {
    expect(() => whileLeader('jobs' as never)).toThrow(
      new TypeError('Expected `project` to be a function of the lease, got `"jobs"` (string)'),
    );
  });
});

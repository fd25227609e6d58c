import Database from 'better-sqlite3';
import { fenced, observeLeader, observeLeadership } from '../src';

describe('observeLeadership config', () => {
  const db = new Database(':memory:');
  afterAll(() => db.close());
  const attempt = (config: unknown) => () => observeLeadership(db, config as never);

  it.each([
    ['renewEvery', 0, RangeError, 'Expected `renewEvery` to be an integer from 1 to 2147483647, got `0` (number)'],
    ['renewEvery', -1, RangeError, 'got `-1` (number)'],
    ['renewEvery', NaN, RangeError, 'got `NaN` (number)'],
    ['renewEvery', Infinity, RangeError, 'got `Infinity` (number)'],
    ['renewEvery', 1.5, RangeError, 'got `1.5` (number)'],
    ['renewEvery', '30s', TypeError, 'Expected `renewEvery` to be an integer from 1 to 2147483647, got `"30s"` (string)'],
    ['expiresAfter', 2 ** 31, RangeError, 'Expected `expiresAfter` to be an integer from 2 to 2147483647, got `2147483648`'],
    ['expiresAfter', null, TypeError, 'got `null` (null)'],
    ['retryEvery', 0, RangeError, 'Expected `retryEvery` to be an integer from 1 to 2147483647, got `0` (number)'],
    ['slot', -1, RangeError, 'Expected `slot` to be an integer from 0 to 9007199254740991, got `-1` (number)'],
    ['slot', 0.5, RangeError, 'got `0.5` (number)'],
    ['slot', '0', TypeError, 'got `"0"` (string)'],
    ['holder', '', RangeError, 'Expected `holder` to be a non-empty string of at most 256 characters, got `""` (string)'],
    ['holder', 'h'.repeat(257), RangeError, `got \`"${'h'.repeat(40)}…"\` (string)`],
    ['holder', 42, TypeError, 'got `42` (number)'],
    ['scheduler', {}, TypeError, 'Expected `scheduler` to be a SchedulerLike, got `Object` (object)'],
    [
      'instrument',
      {},
      TypeError,
      'Expected `instrument` to be an instrument with a begin method (leadershipHealth() or leadershipMetrics(), say), got `Object` (object)',
    ],
    ['stepDown', () => undefined, TypeError, 'Expected `stepDown` to be an Observable, got'],
    ['stepDown', Promise.resolve(), TypeError, 'Expected `stepDown` to be an Observable, got `Promise` (object)'],
    ['sitOut', -1, RangeError, 'Expected `sitOut` to be an integer from 0 to 2147483647, got `-1` (number)'],
    ['sitOut', 0.5, RangeError, 'got `0.5` (number)'],
    ['lockDelay', -1, RangeError, 'Expected `lockDelay` to be an integer from 0 to 2147483647, got `-1` (number)'],
    ['lockDelay', '5s', TypeError, 'got `"5s"` (string)'],
    ['advertise', '', RangeError, 'Expected `advertise` to be a non-empty string of at most 1024 characters, got `""` (string)'],
    ['advertise', 'u'.repeat(1_025), RangeError, 'Expected `advertise` to be a non-empty string of at most 1024 characters'],
    ['advertise', 8080, TypeError, 'Expected `advertise` to be a string or an Observable of strings, got `8080` (number)'],
    [
      'advertise',
      Promise.resolve('http://a'),
      TypeError,
      'Expected `advertise` to be a string or an Observable of strings, got `Promise` (object)',
    ],
    ['priority', -1, RangeError, 'Expected `priority` to be an integer from 0 to 1000000, got `-1` (number)'],
    ['priority', 1.5, RangeError, 'got `1.5` (number)'],
    ['priority', Number.NaN, RangeError, 'got `NaN` (number)'],
    ['priority', Number.POSITIVE_INFINITY, RangeError, 'got `Infinity` (number)'],
    ['priority', 1_000_001, RangeError, 'got `1000001` (number)'],
    ['priority', '5', TypeError, 'got `"5"` (string)'],
    ['preempt', 'yes', TypeError, 'Expected `preempt` to be a boolean, got `"yes"` (string)'],
  ])('refuses %s = %p with a %p that says what it expected', (field, value, kind, message) => {
    expect(attempt({ [field]: value })).toThrow(kind);
    expect(attempt({ [field]: value })).toThrow(message);
  });

  it('refuses renewEvery that is not less than expiresAfter', () => {
    expect(attempt({ renewEvery: 500, expiresAfter: 400 })).toThrow(
      new RangeError('Expected `renewEvery` to be less than `expiresAfter` (400), got `500` (number)'),
    );
  });

  it('says which side of renewEvery < expiresAfter is a default the user never set', () => {
    expect(attempt({ renewEvery: 60_000 })).toThrow(
      new RangeError('Expected `renewEvery` to be less than `expiresAfter` (60000, its default), got `60000` (number)'),
    );
    expect(attempt({ expiresAfter: 20_000 })).toThrow(
      new RangeError('Expected `renewEvery` to be less than `expiresAfter` (20000), got `30000` (number, its default)'),
    );
  });

  it('refuses unknown options, so that a misspelt one is not silently ignored', () => {
    expect(attempt({ renewEveryMs: 100 })).toThrow(
      new TypeError(
        'Expected `config` to be an object with only renewEvery, expiresAfter, retryEvery, slot, holder, scheduler, instrument, stepDown, sitOut, lockDelay, advertise, priority, preempt, got `"renewEveryMs"` (string)',
      ),
    );
  });

  it('refuses a config that is not an object, and a db that is neither a SQLite database nor a lease store', () => {
    expect(attempt(null)).toThrow(new TypeError('Expected `config` to be an object, got `null` (null)'));
    expect(() => observeLeadership({} as never)).toThrow(
      new TypeError(
        'Expected `db` to be a SQLite database (better-sqlite3, node:sqlite or bun:sqlite) or a lease store (clock, look, acquire, renew, release), got `Object` (object)',
      ),
    );
  });

  it('names what a store of your own lacks, and needs nothing beyond the five operations', () => {
    const operation = () => undefined as never;
    expect(() => observeLeadership({ clock: 'server', look: operation, acquire: operation } as never)).toThrow(
      new TypeError('Expected `db` to be a lease store, got one without renew, release'),
    );
    expect(() =>
      observeLeadership({ clock: 'wall', look: operation, acquire: operation, renew: operation, release: operation } as never),
    ).toThrow(new TypeError("Expected `db` to be a lease store, got one without clock ('candidate' or 'server')"));
    const store = { clock: 'server', look: operation, acquire: operation, renew: operation, release: operation } as const;
    expect(() => observeLeadership(store)).not.toThrow();
    expect(() => observeLeader({ clock: 'server', look: operation })).not.toThrow();
    expect(() => fenced(store as never, { slot: 0, holder: 'a', term: 1 }, async () => undefined)).toThrow(
      new TypeError('Expected `db` to be a SQLite database or a lease store that can fence, got a store without the fencing capability'),
    );
  });

  it('accepts no config at all, and the smallest valid durations', () => {
    expect(attempt(undefined)).not.toThrow();
    expect(attempt({ renewEvery: 1, expiresAfter: 2, retryEvery: 1, slot: 0, holder: 'h' })).not.toThrow();
  });
});

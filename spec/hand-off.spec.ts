import Database from 'better-sqlite3';
import { Subscription } from 'rxjs';
import { handOff, LeadershipEvent, LeaseReader, observeLeadership, sqliteLeaseStore } from '../src';
import { eventually } from '../test-kit/eventually';
import { originalStatements, originalTable } from '../test-kit/original-statements';
import { temporaryDatabase, TemporaryDatabase } from './support/temporary-database';

// handOff with bad input, on a real file: each case a clear error, or a documented no-op
// (docs/bad-input.md). Handoffs themselves are in the stores' conformance spec and across
// processes.
describe('handOff with bad input', () => {
  let file: TemporaryDatabase;
  let db: Database.Database;
  const subscriptions: Subscription[] = [];
  beforeEach(() => {
    file = temporaryDatabase();
    db = file.open();
  });
  afterEach(() => {
    subscriptions.splice(0).forEach((subscription) => subscription.unsubscribe());
    file.remove();
  });
  const timing = { renewEvery: 100, expiresAfter: 1_000, retryEvery: 100 };
  const candidate = (holder: string, slot = 0) => {
    const events: LeadershipEvent[] = [];
    subscriptions.push(observeLeadership(file.open(), { ...timing, holder, slot }).subscribe((event) => events.push(event)));
    return events;
  };

  it('refuses bad options at the call, naming the field', () => {
    expect(() => handOff(db, { to: '' })).toThrow(/`to`/);
    expect(() => handOff(db, { to: 'x'.repeat(257) })).toThrow(/`to`/);
    expect(() => handOff(db, { to: 7 as unknown as string })).toThrow(TypeError);
    expect(() => handOff(db, { within: 0 })).toThrow(/`within`/);
    expect(() => handOff(db, { slot: -1 })).toThrow(/`slot`/);
    expect(() => handOff(db, { too: 'b' } as never)).toThrow(/too/);
    expect(() => handOff({} as never)).toThrow(TypeError);
    const store = sqliteLeaseStore(db);
    const plain: LeaseReader = { clock: 'candidate', look: (...args) => store.look(...args) };
    expect(() => handOff(plain)).toThrow('Expected `db` to be a store that can hand off (`capabilities.handoffs`), got one without');
  });

  it('says NO_LEADER before any candidate ran, and once the leader has gone', async () => {
    await expect(handOff(db)).rejects.toMatchObject({ name: 'LeadershipError', code: 'NO_LEADER' });
    const events = candidate('a');
    await eventually('a elected', () => events.some((event) => event.type === 'elected'));
    subscriptions.splice(0).forEach((subscription) => subscription.unsubscribe());
    await expect(handOff(db, { to: 'a' })).rejects.toMatchObject({ code: 'NO_LEADER' });
  });

  it('changes nothing for a candidate of another slot: it does not stand for this one, and stays where it is', async () => {
    const a = candidate('a');
    await eventually('a elected', () => a.some((event) => event.type === 'elected'));
    const elsewhere = candidate('b', 1);
    await eventually('b elected on slot 1', () => elsewhere.some((event) => event.type === 'elected'));
    const c = candidate('c');
    await expect(handOff(db, { to: 'b', within: 500 })).rejects.toMatchObject({
      code: 'HANDOFF_NOT_STANDING',
      message: expect.stringMatching(
        /^b did not answer as a standing candidate of slot 0 within 500 ms.*Standing candidates that answered: c$/,
      ),
    });
    expect([...a, ...elsewhere, ...c].filter((event) => event.type === 'lost')).toEqual([]);
    expect(c.filter((event) => event.type === 'elected')).toEqual([]);
  });

  it('says HANDOFF_UNANSWERED when the original worker’s statements lead: they hear no request, and keep leading', async () => {
    db.exec(originalTable);
    const original = originalStatements(db, 'rust-worker', 60_000);
    expect(original.tryAcquire(Date.now())).toBe(true);
    await expect(handOff(db, { within: 300 })).rejects.toMatchObject({
      code: 'HANDOFF_UNANSWERED',
      message: expect.stringContaining('The leader of slot 0, rust-worker (term 0), did not hand over within 300 ms'),
    });
    expect(original.renew(Date.now())).toBe(true);
  });
});

import Database from 'better-sqlite3';
import { performance } from 'node:perf_hooks';
import { Subscription } from 'rxjs';
import { eventually } from '../../../test-kit/eventually';
import { journalModes } from '../../../test-kit/worker-database';
import { ElectedEvent, LeadershipEvent, observeLeadership } from '../../../src';
import { sqliteLeaseStore } from '../../../src/store/sqlite/sqlite-lease-store';
import { TemporaryDatabase, temporaryDatabase } from '../../support/temporary-database';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Counts the campaign's calls to a connection's store (the calls still do what they do). */
function countCalls(db: Database.Database): () => number {
  const store = sqliteLeaseStore(db);
  const { standby } = store.capabilities;
  const spies = [
    ...(['acquire', 'renew', 'release'] as const).map((name) => jest.spyOn(store, name)),
    ...(['standBy', 'leaveStandby'] as const).map((name) => jest.spyOn(standby, name)),
  ];
  return () => spies.reduce((sum, spy) => sum + spy.mock.calls.length, 0);
}

// In every journal mode that SQLite offers for a shared file, with better-sqlite3's defaults
// otherwise (WAL as README advises): followers make a bounded number of store operations
// per lease, whatever else writes the file, so that a storm cannot come back unnoticed.
// Each connection here stands for a process: it has its own store and its own file watch.
describe.each(journalModes)('journal_mode %s', (journal) => {
  let file: TemporaryDatabase;
  let subscriptions: Subscription[];
  const events: Array<LeadershipEvent & { candidate: string }> = [];
  const campaign = (db: Database.Database, candidate: string, config: Parameters<typeof observeLeadership>[1]) => {
    subscriptions.push(observeLeadership(db, config).subscribe((event) => events.push({ ...event, candidate })));
  };
  const of = (type: string, slot = 0) => events.filter((event) => event.type === type && event.slot === slot);

  beforeEach(() => {
    file = temporaryDatabase(journal);
    subscriptions = [];
    events.length = 0;
  });
  afterEach(() => {
    for (const subscription of subscriptions) subscription.unsubscribe();
    file.remove();
  });

  it("idle followers poll at their lease's pace, woken by no renewal, no standby's claim and no commit of the application", async () => {
    const timing = { renewEvery: 200, expiresAfter: 1_000, retryEvery: 100 };
    // better-sqlite3's default busy timeout: readers wait out the application's commits.
    const open = () => file.open({ timeout: 5_000 });
    campaign(open(), 'leader', timing);
    await eventually('a leader', () => of('elected').length === 1);
    // Four followers: three standby places, and one that relies on them.
    const followers = Array.from({ length: 4 }, (_, i) => {
      const db = open();
      campaign(db, `follower${i}`, timing);
      return countCalls(db);
    });
    await sleep(300); // every follower has made its first attempt, and found its place

    const app = open();
    // Commits that wait for no disk (they change the file all the same): on a machine busy
    // with other suites' fsyncs, a durable commit can take 200 ms, too few to tell a woken
    // follower from one that polls.
    app.pragma('synchronous = OFF');
    app.exec('CREATE TABLE app_jobs (id INTEGER PRIMARY KEY, payload TEXT)');
    const insert = app.prepare('INSERT INTO app_jobs (payload) VALUES (?)');
    const before = followers.map((calls) => calls());
    const started = performance.now();
    let commits = 0;
    const writing = setInterval(() => insert.run(`job ${commits++}`), 5);
    await eventually('300 commits of the application', () => commits >= 300);
    clearInterval(writing);
    const period = performance.now() - started;
    const made = followers.map((calls, i) => calls() - before[i]);

    // Each follower tries once every renewEvery, two operations a try (the attempt, and its
    // standby place kept or asked for): 20 in 2 s, give or take the timers. A follower woken
    // by the application's 300 commits (or by the others' claims) would have made them by
    // the hundred.
    for (const count of made) expect(count).toBeLessThanOrEqual(2 * (period / timing.renewEvery + 2));
    // And the commits came fast enough to tell: a follower woken by each would have made two
    // operations a commit, over twice the bound above.
    expect(commits / (period / timing.renewEvery)).toBeGreaterThan(5);
    expect(events.filter((event) => event.type !== 'renewed').map((event) => `${event.candidate} ${event.type}`)).toEqual([
      'leader elected',
    ]);
  });

  it('several subscriptions on one connection, for one slot and for two, behave like processes: one leader a slot, handoff on release, no busy loop', async () => {
    // Polls far apart, so that only the release's own signal can explain a prompt handoff.
    const timing = { renewEvery: 5_000, expiresAfter: 20_000, retryEvery: 5_000 };
    const db = file.open({ timeout: 5_000 });
    const calls = countCalls(db);
    for (const [slot, count] of [
      [0, 3],
      [1, 2],
    ]) {
      for (let i = 0; i < count; i++) campaign(db, `s${slot}c${i}`, { ...timing, slot });
    }
    await eventually('a leader of each slot', () => of('elected', 0).length === 1 && of('elected', 1).length === 1);
    await sleep(300); // the elections' signals have woken the standbys, once
    const before = calls();
    await sleep(1_000);
    expect(calls() - before).toBe(0); // not a loop: nothing is due for seconds

    const elections = () => of('elected', 0) as Array<ElectedEvent & { candidate: string }>;
    const first = elections()[0];
    subscriptions[Number(first.candidate.slice(3))].unsubscribe();
    const second = await eventually('the next leader of slot 0', () => elections()[1], timing.retryEvery - 1_000);
    expect(second.candidate).not.toBe(first.candidate);
    expect(second.term).toBeGreaterThan(first.term);
    expect(of('elected', 1)).toHaveLength(1);
    expect(events.filter((event) => event.type === 'lost' || event.type === 'error')).toEqual([]);
  });
});

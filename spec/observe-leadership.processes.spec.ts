import { handOff } from '../src';
import { overlappingBeliefs } from '../test-kit/history';
import { eventually } from '../test-kit/eventually';
import { pauseOutsideWriteLock, workerGroup } from './support/worker-group';

// Real processes on a real file, opened as README advises (WAL) and as a new user does
// (better-sqlite3's defaults: the rollback journal, a 5 s busy timeout). Every wait is for a
// condition, with a generous limit; what is asserted is what happened (who led, with which
// term, what was written), never how fast.
describe.each(['wal', 'delete'] as const)('observeLeadership across processes, journal_mode %s', (journal) => {
  const processes = workerGroup(journal);
  const { start, leaderAmong, history, explain } = processes;

  it('elects exactly one of three candidates, and the lease row names it', () =>
    explain(async () => {
      const timing = { renewEvery: 300, expiresAfter: 3_000, retryEvery: 100 };
      const candidates = [start('candidate', timing), start('candidate', timing), start('candidate', timing)];
      const leader = await leaderAmong(candidates);
      const elected = leader.last('elected')!;
      await eventually('three renewals', () => leader.records.filter((r) => r.type === 'renewed').length >= 3);
      await eventually('every candidate campaigning', () => candidates.every((w) => w.find('subscribed')));

      expect(candidates.filter((w) => w.leads)).toEqual([leader]);
      const row = processes.database.open({ timeout: 5_000 }).prepare('SELECT holder FROM worker_leadership WHERE slot = 0').get();
      expect(row).toEqual({ holder: elected.holder });
      expect(overlappingBeliefs(history())).toEqual([]);
    }));

  it('hands over at once when the leader unsubscribes: the follower wakes on the release, long before its timer', () =>
    explain(async () => {
      // Timers this long leave only the release itself (and the watch of the signal file
      // that reports it) to wake the follower within the test's time.
      const timing = { renewEvery: 20_000, expiresAfter: 60_000, retryEvery: 30_000 };
      const first = start('candidate', timing);
      await leaderAmong([first]);
      const second = start('candidate', timing);
      await eventually('the second candidate campaigning', () => second.find('subscribed'));
      first.send('unsubscribe');
      const elected = await eventually('the second candidate elected', () => second.find('elected'), 20_000);

      expect(elected.at - first.find('unsubscribed')!.at).toBeLessThan(timing.retryEvery);
      expect(elected.term).toBe(first.last('elected')!.term! + 1);
    }));

  it('steps down on request and stays a candidate: another takes over at once, and the one that stepped down follows it', () =>
    explain(async () => {
      // Timers this long leave only the release (and its signal) to hand the slot over in time.
      const timing = { renewEvery: 20_000, expiresAfter: 60_000, retryEvery: 30_000 };
      const candidates = [start('candidate', timing), start('candidate', timing), start('candidate', timing)];
      const first = await leaderAmong(candidates);
      await eventually('every candidate campaigning', () => candidates.every((w) => w.find('subscribed')));
      first.send('step-down');
      const lost = await eventually('the leader stepped down', () => first.find('lost', (r) => r.reason === 'stepped-down'));
      const next = await leaderAmong(candidates.filter((w) => w !== first));
      const elected = next.last('elected')!;
      expect(elected.at - lost.at).toBeLessThan(timing.retryEvery);
      expect(elected.term).toBeGreaterThan(first.last('elected')!.term!);
      // It still campaigns, and follows: nothing more from it, no second leader.
      expect(first.alive).toBe(true);
      expect(first.records.filter((r) => r.type === 'elected')).toHaveLength(1);
      expect(overlappingBeliefs(history())).toEqual([]);
    }));

  it('hands off to the named standing candidate, asked from another process on a read-only connection: it alone takes over, at once', () =>
    explain(async () => {
      // Timers this long leave only the messages about the handoff to move the slot in time.
      const timing = { renewEvery: 20_000, expiresAfter: 60_000, retryEvery: 30_000 };
      const candidates = [start('candidate', timing), start('candidate', timing), start('candidate', timing)];
      const first = await leaderAmong(candidates);
      await eventually('every candidate campaigning', () => candidates.every((w) => w.holder !== undefined));
      for (const successor of candidates.filter((w) => w !== first)) {
        const leader = candidates.find((w) => w.leads)!;
        const db = processes.database.open({ readonly: true });
        const { from, to } = await handOff(db, { to: successor.holder });
        db.close();
        const elected = await eventually('the successor elected', () => successor.last('elected'));
        const lost = leader.last('lost')!;
        expect(lost).toMatchObject({ reason: 'handed-off', term: from.term });
        expect(to).toEqual({ slot: 0, holder: successor.holder, term: elected.term });
        expect(elected.at - lost.at).toBeLessThan(timing.retryEvery);
      }
      expect(overlappingBeliefs(history())).toEqual([]);
      expect(candidates.every((w) => w.alive)).toBe(true);
    }));

  it('never leads at the same time as processes running the original worker’s statements', () =>
    explain(async () => {
      const timing = { renewEvery: 100, expiresAfter: 500, retryEvery: 50 };
      // The original worker leads first, and releases with its DELETE; ours take over.
      const original = start('original', timing);
      await leaderAmong([original]);
      const ours = [start('candidate', timing), start('candidate', timing)];
      await eventually('our candidates campaigning', () => ours.every((w) => w.find('subscribed')));
      original.signal('SIGTERM');
      await original.exited;
      let leader = await leaderAmong(ours);
      // Then a new original worker joins, and leaders are killed one after another: each
      // is replaced by a process of its own kind, and the next leader takes over at expiry.
      start('original', timing);
      for (let round = 0; round < 4; round++) {
        leader.signal('SIGKILL');
        await leader.exited;
        start(leader.kind, timing);
        leader = await leaderAmong(processes.workers);
      }

      const segments = history();
      expect(overlappingBeliefs(segments)).toEqual([]);
      const originalHolders = new Set(
        processes.workers.filter((w) => w.kind === 'original').flatMap((w) => w.records.map((r) => r.holder)),
      );
      expect(segments.some((s) => originalHolders.has(s.holder))).toBe(true);
      expect(segments.some((s) => !originalHolders.has(s.holder))).toBe(true);
      // Our tenures' terms only grow, also across the original worker's tenures.
      const terms = processes.electedTerms();
      expect(terms).toEqual([...terms].sort((a, b) => a - b));
      expect(new Set(terms).size).toBe(terms.length);
    }));

  it('rejects the fenced writes of a leader paused past its lease: no old term commits after the new one', () =>
    explain(async () => {
      const timing = { renewEvery: 200, expiresAfter: 1_000, retryEvery: 100, ledgerEvery: 20 };
      const paused = start('candidate', timing);
      await leaderAmong([paused]);
      await eventually('fenced writes by the first leader', () => paused.find('fenced-write'));
      const next = start('candidate', timing);
      await eventually('the second candidate campaigning', () => next.find('subscribed'));

      await pauseOutsideWriteLock(paused, processes.database.open({ timeout: 0 }));
      await eventually('fenced writes by the new leader', () => next.records.filter((r) => r.type === 'fenced-write').length >= 3);
      paused.signal('SIGCONT');
      paused.send('fenced-write'); // with its old lease, whatever its timers did first

      const oldTerm = paused.last('elected')!.term!;
      const rejected = await eventually('the old leader’s write rejected', () => paused.find('fenced-rejected', (r) => r.term === oldTerm));
      expect(rejected.code).toBe('LEASE_LOST');
      await eventually('the old leader’s lost', () => paused.find('lost'));
      // Superseded when its renewal after the pause finds the slot taken; expired when the pause
      // fell inside a renewal, after its write: an answer past its lease is never believed.
      expect(['superseded', 'expired']).toContain(paused.find('lost')!.reason);

      // A read waits for the writers' locks (outside WAL mode a commit keeps readers out for a moment).
      const ledger = processes.database
        .open({ timeout: 5_000 })
        .prepare('SELECT term FROM chaos_ledger ORDER BY id')
        .pluck()
        .all() as number[];
      const newTerm = next.find('elected')!.term!;
      expect(newTerm).toBeGreaterThan(oldTerm);
      expect(ledger.slice(ledger.indexOf(newTerm))).not.toContain(oldTerm);
      expect(ledger).toEqual([...ledger].sort((a, b) => a - b));
      expect(overlappingBeliefs(history())).toEqual([]);
    }));
});

import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { overlappingBeliefs, uncommittedSeq } from '../test-kit/history';
import type { WorkerOptions } from '../test-kit/worker-options';
import { eventually } from '../test-kit/eventually';
import { sleep } from '../test-kit/worker-process';
import { ChildWorker } from './support/child-worker';
import { networkNamespace } from '../test-kit/network-namespace';
import { watcherCount } from '../test-kit/endpoint-sockets';
import { workerGroup } from './support/worker-group';

// A crashed leader's successor, on one host: real processes on a real file, in WAL mode as
// README advises and with better-sqlite3's defaults. What is asserted is who led when, by
// the processes' own reports, against the leases they wrote; never how fast (the benchmark
// measures that).
describe.each(['wal', 'delete'] as const)('early takeover across processes, journal_mode %s', (journal) => {
  const defaults = { renewEvery: 30_000, expiresAfter: 60_000, retryEvery: 1_000 };
  const processes = workerGroup(journal);
  const { leaderAmong, explain } = processes;
  const start = (count: number, options: Partial<WorkerOptions> = {}, launcher: string[] = []) =>
    Array.from({ length: count }, () => processes.start('candidate', { ...defaults, ...options }, launcher));
  /** The end of the last lease that `worker` wrote, by its own reports. */
  // On the host's monotonic clock, which every process reads alike: each process's own
  // clock (its expiresAt) and Date.now() (a record's `at`) drift apart by a few ms, which
  // made an election 15 ms after the lease's end read as 2 ms before it (Node.js 24, CI).
  const lastExpiry = (worker: ChildWorker) => Math.max(...worker.records.filter((r) => r.monoExpiresAt).map((r) => r.monoExpiresAt!));
  const noOverlap = () => expect(overlappingBeliefs(processes.history())).toEqual([]);

  it('replaces a killed leader long before its lease ends (the default 60 s lease)', () =>
    explain(async () => {
      const candidates = start(3);
      const first = await leaderAmong(candidates);
      await eventually('both followers watching the leader', () => watcherCount(processes.database.file) === 2);
      await eventually('both followers greeted', () => first.greetedSinceElected() >= 2);
      first.signal('SIGKILL');
      const killedAt = Date.now();
      const second = await leaderAmong(candidates.filter((w) => w !== first));

      const elected = second.last('elected')!;
      expect(elected.at - killedAt).toBeLessThan(10_000); // generous: the lease had ~60 s left
      expect(elected.mono!).toBeLessThan(lastExpiry(first) - 40_000);
      expect(elected.term).toBeGreaterThan(first.last('elected')!.term!);
      noOverlap();
      // The new leader's followers watch it in turn: the next crash is seen as quickly.
      await eventually('the follower watching the new leader', () => watcherCount(processes.database.file) === 1);
    }));

  it(
    'with a lock-delay: takes a killed leader over at once, on proof, and a stopped one only a lock-delay after its lease',
    () =>
      explain(async () => {
        const timing = { renewEvery: 1_000, expiresAfter: 3_000, retryEvery: 200, lockDelay: 5_000 };
        const candidates = start(3, timing);
        const first = await leaderAmong(candidates);
        await eventually('both followers watching the leader', () => watcherCount(processes.database.file) === 2);
        await eventually('both followers greeted', () => first.greetedSinceElected() >= 2);
        first.signal('SIGKILL');
        const second = await leaderAmong(candidates.filter((w) => w !== first));
        // On proof of death, no lock-delay: well before the dead leader's lease even ended.
        expect(second.last('elected')!.mono!).toBeLessThan(lastExpiry(first));
        await eventually('the follower watching the new leader', () => watcherCount(processes.database.file) === 1);
        second.signal('SIGSTOP');
        await eventually('the leader stopped', () => second.stopped);
        const [third] = candidates.filter((w) => w !== first && w !== second);
        await leaderAmong([third]);
        // Alive but silent: its lease ran out, then the lock-delay, before anyone said elected.
        expect(third.last('elected')!.mono!).toBeGreaterThanOrEqual(lastExpiry(second) + timing.lockDelay);
        second.signal('SIGCONT');
        await eventually('the stopped leader’s loss', () => second.find('lost'));
        noOverlap();
      }),
    60_000,
  );

  it('replaces early a killed leader that ran in a network namespace of its own (as in another container), sharing the folder', () =>
    explain(async () => {
      const namespace = networkNamespace(0);
      try {
        const [first] = start(1, {}, namespace.launcher);
        await leaderAmong([first]);
        const [second] = start(1);
        await eventually('the follower watching the leader across namespaces', () => watcherCount(processes.database.file) === 1);
        await eventually('the follower greeted', () => first.greetedSinceElected() >= 1);
        first.signal('SIGKILL');
        await leaderAmong([second]);
        expect(second.last('elected')!.mono!).toBeLessThan(lastExpiry(first) - 40_000);
        noOverlap();
      } finally {
        namespace.remove();
      }
    }));

  it('replaces early a leader whose worker thread was terminated', () =>
    explain(async () => {
      // The leader campaigns in a worker thread of this process, with the built library. It
      // says when it greeted a follower: the kernel lists a connection as accepted before the
      // endpoint's callback writes the greeting, and a follower that never got it has no proof
      // (a rehearsal under load terminated the thread in between, and the follower rightly
      // waited out the lease).
      const thread = new Worker(
        `const { parentPort, workerData } = require('node:worker_threads');
         const { Server } = require('node:net');
         const emit = Server.prototype.emit;
         Server.prototype.emit = function (event, ...args) {
           const handled = emit.call(this, event, ...args);
           if (event === 'connection') parentPort.postMessage({ type: 'greeted' });
           return handled;
         };
         const Database = require(workerData.driver);
         const { observeLeadership } = require(workerData.library);
         const db = new Database(workerData.file);
         db.pragma('journal_mode = ' + workerData.journal);
         observeLeadership(db, { holder: 'thread' }).subscribe((event) => parentPort.postMessage(event));`,
        {
          eval: true,
          workerData: {
            driver: require.resolve('better-sqlite3'),
            library: join(__dirname, '..', 'dist'),
            file: processes.database.file,
            journal,
          },
        },
      );
      const events: Array<{ type: string; expiresAt?: number }> = [];
      thread.on('message', (event) => events.push(event));
      try {
        await eventually('the thread elected', () => events.find((event) => event.type === 'elected'));
        const [follower] = start(1);
        await eventually('the follower watching the thread', () => watcherCount(processes.database.file) === 1);
        await eventually('the follower greeted', () => events.some((event) => event.type === 'greeted'));
        const terminatedAt = Date.now();
        await thread.terminate();
        await leaderAmong([follower]);
        expect(follower.last('elected')!.at - terminatedAt).toBeLessThan(10_000);
        expect(follower.last('elected')!.mono!).toBeLessThan(Math.max(...events.map((event) => event.expiresAt ?? 0)) - 40_000);
      } finally {
        await thread.terminate();
      }
    }));

  it('never takes over a stopped leader (SIGSTOP) before its lease expires, and it learns of its loss when it resumes', () =>
    explain(async () => {
      const candidates = start(3, { renewEvery: 1_000, expiresAfter: 3_000, retryEvery: 200 });
      const first = await leaderAmong(candidates);
      await eventually('both followers watching the leader', () => watcherCount(processes.database.file) === 2);
      first.signal('SIGSTOP');
      await eventually('the leader stopped', () => first.stopped);
      const second = await leaderAmong(candidates.filter((w) => w !== first));
      expect(second.last('elected')!.mono!).toBeGreaterThan(lastExpiry(first));
      first.signal('SIGCONT');
      await eventually('the old leader’s loss', () => first.find('lost'));
      noOverlap();
    }));

  it('replaces at once a stopped leader once it is killed', () =>
    explain(async () => {
      const candidates = start(2);
      const first = await leaderAmong(candidates);
      await eventually('the follower watching the leader', () => watcherCount(processes.database.file) === 1);
      first.signal('SIGSTOP');
      await eventually('the leader stopped', () => first.stopped);
      await sleep(500);
      expect(candidates.filter((w) => w.leads)).toEqual([first]);
      first.signal('SIGKILL');
      const second = await leaderAmong(candidates.filter((w) => w !== first));
      expect(second.last('elected')!.mono!).toBeLessThan(lastExpiry(first) - 40_000);
      noOverlap();
    }));

  it('rolls back what a leader killed inside a fenced transaction wrote, and replaces it early', () =>
    explain(async () => {
      const candidates = start(2);
      const first = await leaderAmong(candidates);
      await eventually('the follower watching the leader', () => watcherCount(processes.database.file) === 1);
      first.send('fenced-hang 0');
      await eventually('the leader inside its transaction', () => first.find('fenced-hang'));
      first.signal('SIGKILL');
      const second = await leaderAmong(candidates.filter((w) => w !== first));
      expect(second.last('elected')!.mono!).toBeLessThan(lastExpiry(first) - 40_000);
      const ledger = new Database(processes.database.file, { readonly: true });
      try {
        expect(ledger.prepare('SELECT count(*) FROM chaos_ledger WHERE seq = ?').pluck().get(uncommittedSeq)).toBe(0);
      } finally {
        ledger.close();
      }
      noOverlap();
    }));

  it('waits for the lease when no follower saw the leader die: killed with its standbys', () =>
    explain(async () => {
      // Three standbys watch; the fourth follower relies on them, and polls.
      const candidates = start(5, { renewEvery: 500, expiresAfter: 2_000, retryEvery: 200 });
      const first = await leaderAmong(candidates);
      await eventually('three standbys watching the leader', () => watcherCount(processes.database.file) === 3);
      await eventually('every candidate’s holder known', () => candidates.every((w) => w.holder));
      const standbys = new Database(processes.database.file, { readonly: true })
        .prepare('SELECT holder FROM worker_leadership_standby')
        .pluck()
        .all();
      const [poller] = candidates.filter((w) => w !== first && !standbys.includes(w.holder));
      for (const worker of candidates.filter((w) => w !== poller)) worker.signal('SIGKILL');
      await leaderAmong([poller]);
      expect(poller.last('elected')!.mono!).toBeGreaterThan(lastExpiry(first));
      expect(poller.last('elected')!.term).toBeGreaterThan(first.last('elected')!.term!);
      noOverlap();
    }));
});

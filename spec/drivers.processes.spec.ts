import { lstatSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { overlappingBeliefs } from '../test-kit/history';
import { endpointSockets, watcherCount } from '../test-kit/endpoint-sockets';
import { eventually } from '../test-kit/eventually';
import { bunRuntime, nodeRuntime } from '../test-kit/runtimes';
import type { SqliteDriver } from '../test-kit/worker-database';
import { ChildWorker } from './support/child-worker';
import { workerGroup } from './support/worker-group';

/** The endpoint files beside `file` (a follower trusts a socket of the database's owner) and the sockets connected to them. */
function endpointsBeside(file: string): { files: string[]; sockets: unknown[] } {
  const folder = dirname(file);
  const files = readdirSync(folder)
    .filter((name) => name.includes('-leadership-'))
    .map((name) => {
      const found = lstatSync(join(folder, name));
      return `${name}: socket ${found.isSocket()}, mode ${(found.mode & 0o777).toString(8)}, uid ${found.uid} (database's ${statSync(file).uid})`;
    });
  return { files, sockets: endpointSockets(file) };
}

// One file, three drivers, three runtimes: this Node.js with better-sqlite3, Node.js 24 with
// its built-in node:sqlite (no native addon loaded), and Bun with bun:sqlite, beside the
// original worker's statements. The runtimes are the official builds from npm, fetched once
// (test-kit/runtimes.ts).
describe.each(['wal', 'delete'] as const)('one leader among three drivers on one file, journal_mode %s', (journal) => {
  const processes = workerGroup(journal);
  const { start, leaderAmong, history, explain } = processes;
  let runtimes: Record<SqliteDriver, string>;
  beforeAll(() => {
    runtimes = { 'better-sqlite3': process.execPath, 'node:sqlite': nodeRuntime('24.22.3').node, 'bun:sqlite': bunRuntime() };
  }, 300_000);

  const timing = { renewEvery: 200, expiresAfter: 2_000, retryEvery: 100 };
  const drivers: SqliteDriver[] = ['better-sqlite3', 'node:sqlite', 'bun:sqlite'];
  const startOn = (driver: SqliteDriver) => start('candidate', { ...timing, driver }, [], runtimes[driver]);

  it('elects one of them at a time, hands over between drivers, and takes over from a killed one of each', () =>
    explain(async () => {
      const workers = new Map<ChildWorker, SqliteDriver>(drivers.map((driver) => [startOn(driver), driver]));
      start('original', timing);
      await eventually('every driver campaigning', () => [...workers.keys()].every((w) => w.find('subscribed')), 30_000);
      const ledBy = new Set<SqliteDriver>();
      // Each round ends the leader's process, gracefully or not, and starts a new one on its
      // driver; until each driver has led, and for six rounds at least.
      for (let round = 0; round < 6 || (ledBy.size < drivers.length && round < 40); round++) {
        const leader = await leaderAmong(processes.workers);
        const driver = workers.get(leader);
        if (driver !== undefined) ledBy.add(driver);
        leader.signal(round % 2 === 0 ? 'SIGTERM' : 'SIGKILL');
        await leader.exited;
        if (driver === undefined) start('original', timing);
        else workers.set(startOn(driver), driver);
        workers.delete(leader);
      }
      await leaderAmong(processes.workers);

      expect(overlappingBeliefs(history())).toEqual([]);
      expect([...ledBy].sort()).toEqual([...drivers].sort());
      const terms = processes.electedTerms();
      expect(terms).toEqual([...terms].sort((a, b) => a - b));
    }));

  it("takes over at once from a killed leader of each driver, on the kernel's proof, long before its lease ends", () =>
    explain(async () => {
      const long = { renewEvery: 20_000, expiresAfter: 60_000, retryEvery: 30_000 };
      const startLong = (driver: SqliteDriver) => start('candidate', { ...long, driver }, [], runtimes[driver]);
      const workers = new Map<ChildWorker, SqliteDriver>(drivers.map((driver) => [startLong(driver), driver]));
      await eventually('every driver campaigning', () => [...workers.keys()].every((w) => w.find('subscribed')), 30_000);
      const killed = new Set<SqliteDriver>();
      for (let round = 0; killed.size < drivers.length && round < 15; round++) {
        const leader = await leaderAmong(processes.workers);
        const driver = workers.get(leader) as SqliteDriver;
        // Only a follower that reached the leader's endpoint has its proof: a follower that
        // first reads the tenure after the kill waits for the lease (docs/how-it-works.md).
        await eventually('both followers watching the leader', () => watcherCount(processes.database.file) === workers.size - 1, {
          explain: () => endpointsBeside(processes.database.file), // what a follower could find there, for a failure to tell
        });
        // Accepted is not yet greeted (test-kit/worker.ts, reportGreetings): a kill in between leaves no proof.
        await eventually('both followers greeted', () => leader.greetedSinceElected() >= workers.size - 1);
        leader.signal('SIGKILL');
        await leader.exited;
        const killedAt = Date.now();
        workers.delete(leader);
        const next = await leaderAmong([...workers.keys()]);
        // Well inside the lease: only the proof of the leader's death lets a follower in this soon.
        expect(Date.now() - killedAt).toBeLessThan(long.expiresAfter / 3);
        expect(next).not.toBe(leader);
        killed.add(driver);
        workers.set(startLong(driver), driver);
        await eventually('the new process campaigning', () => [...workers.keys()].every((w) => w.find('subscribed')), 30_000);
      }
      expect([...killed].sort()).toEqual([...drivers].sort());
      expect(overlappingBeliefs(history())).toEqual([]);
    }));
});

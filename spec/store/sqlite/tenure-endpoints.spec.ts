import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { chownSync, lstatSync, mkdirSync, readdirSync, readlinkSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { eventually } from '../../../test-kit/eventually';
import { sleep } from '../../../test-kit/worker-process';
import { Lease } from '../../../src';
import { sqliteLeaseStore } from '../../../src/store/sqlite/sqlite-lease-store';
import { TenureEndpoints } from '../../../src/store/sqlite/tenure-endpoints';
import { ChildWorker } from '../../support/child-worker';
import { endpointSockets, watcherCount } from '../../../test-kit/endpoint-sockets';
import { temporaryDatabase, TemporaryDatabase } from '../../support/temporary-database';
import { at } from '../../support/clock-reading';

// Real sockets beside a real file. A follower here is a store's watch in this process; a
// leader is a store in this process or a worker in a process of its own, to be killed.
describe('tenure endpoints', () => {
  let database: TemporaryDatabase;
  let workers: ChildWorker[];
  beforeEach(() => {
    database = temporaryDatabase('wal');
    workers = [];
  });
  afterEach(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    database.remove();
  });

  const socketFiles = () => readdirSync(join(database.file, '..')).filter((name) => lstatSync(join(database.file, '..', name)).isSocket());
  /** A leader in a process of its own, and the tenure it reports. */
  const leaderProcess = async (): Promise<{ worker: ChildWorker; lease: Lease }> => {
    const worker = new ChildWorker('candidate', {
      file: database.file,
      journal: 'wal',
      renewEvery: 30_000,
      expiresAfter: 60_000,
      retryEvery: 1_000,
    });
    workers.push(worker);
    const { slot = 0, holder, term } = await eventually('the election', () => worker.find('elected'));
    return { worker, lease: { slot, holder: holder!, term: term! } };
  };
  const watch = (lease: Lease) => {
    const ended = jest.fn();
    const follower = sqliteLeaseStore(database.open()).capabilities.tenureProof.watchTenure(lease, ended);
    return { follower, ended };
  };

  it('opens with the tenure, before anyone can read it, with the database file’s permissions, and closes with the release', () => {
    const store = sqliteLeaseStore(database.open());
    const { acquired, lease } = store.acquire(0, 'a', at(Date.now()), 60_000);
    expect(acquired).toBe(true);
    // acquire returns only once it committed, and the endpoint opened before that: it is there now.
    expect(endpointSockets(database.file)).toEqual([expect.objectContaining({ state: 'listening' })]);
    const [socket] = socketFiles();
    expect(lstatSync(join(database.file, '..', socket)).mode & 0o777).toBe(statSync(database.file).mode & 0o666);
    store.release({ slot: 0, holder: 'a', term: lease.term });
    expect(endpointSockets(database.file)).toEqual([]);
    expect(socketFiles()).toEqual([]);
  });

  it('keeps one endpoint per slot: a new tenure through the same connection closes the earlier one', () => {
    const store = sqliteLeaseStore(database.open());
    // The same holder taking its own row again starts a new tenure each time.
    for (let i = 0; i < 50; i++) expect(store.acquire(0, 'a', at(Date.now()), 60_000).acquired).toBe(true);
    store.acquire(1, 'a', at(Date.now()), 60_000);
    expect(endpointSockets(database.file).filter((socket) => socket.state === 'listening')).toHaveLength(2);
    expect(socketFiles()).toHaveLength(2);
  });

  it('proves the end of a leader whose process is killed: its connection closed, then nobody listens', async () => {
    const { worker, lease } = await leaderProcess();
    const { follower, ended } = watch(lease);
    await eventually('the follower connected', () => watcherCount(database.file) === 1);
    expect(ended).not.toHaveBeenCalled();
    worker.signal('SIGKILL');
    await eventually('the proof', () => ended.mock.calls.length === 1);
    expect(follower.watching).toBe(false);
  });

  it('proves nothing while the leader is stopped (SIGSTOP), and its end once it is killed', async () => {
    const { worker, lease } = await leaderProcess();
    const { follower, ended } = watch(lease);
    await eventually('the follower connected', () => watcherCount(database.file) === 1);
    worker.signal('SIGSTOP');
    await eventually('the leader stopped', () => worker.stopped);
    // A stopped process keeps its sockets: the follower's connection stays open as long as it likes.
    await sleep(1_000);
    expect(ended).not.toHaveBeenCalled();
    expect(follower.watching).toBe(true);
    worker.signal('SIGKILL');
    await eventually('the proof', () => ended.mock.calls.length === 1);
  });

  it('proves the end of a tenure its holder gave up: the listener removed its file as it closed', async () => {
    const store = sqliteLeaseStore(database.open());
    const { lease } = store.acquire(0, 'a', at(Date.now()), 60_000);
    const { ended } = watch({ slot: 0, holder: 'a', term: lease.term });
    await eventually('the follower connected', () => watcherCount(database.file) === 1);
    store.release({ slot: 0, holder: 'a', term: lease.term });
    await eventually('the proof', () => ended.mock.calls.length === 1);
  });

  it('proves nothing while the connection stays open, whatever happens to the file', async () => {
    const store = sqliteLeaseStore(database.open());
    const { lease } = store.acquire(0, 'a', at(Date.now()), 60_000);
    const tenure = { slot: 0, holder: 'a', term: lease.term };
    const { follower, ended } = watch(tenure);
    await eventually('the follower connected', () => watcherCount(database.file) === 1);
    unlinkSync(new TenureEndpoints(database.file).pathOf(tenure)!); // a cleaner of the folder, say
    await sleep(500);
    expect(follower.watching).toBe(true);
    expect(ended).not.toHaveBeenCalled();
    store.release(tenure);
  });

  it('trusts no endpoint it cannot tie to the leader: no socket, another owner’s socket, a wrong greeting', async () => {
    const endpoints = new TenureEndpoints(database.file);
    const lease = { slot: 0, holder: 'a', term: 7 };
    const path = endpoints.pathOf(lease)!;

    writeFileSync(path, ''); // a plain file where the socket would be
    const plain = watch(lease);
    await eventually('the watch given up', () => !plain.follower.watching);

    const squatter = createServer((socket) => socket.end('{"slot":0,"term":7,"holder":"b"}\n'));
    await new Promise<void>((listening) => squatter.listen(join(database.file, '..', 'squat'), listening));
    const squatted = { ...lease, holder: 'squatted' };
    // The squatter's socket, moved to where the tenure's endpoint would be.
    const squatPath = endpoints.pathOf(squatted)!;
    spawnSync('mv', [join(database.file, '..', 'squat'), squatPath]);
    const greeted = watch(squatted);
    await eventually('the watch given up', () => !greeted.follower.watching);
    squatter.close();

    if (process.getuid?.() === 0) {
      const store = sqliteLeaseStore(database.open());
      const { lease: own } = store.acquire(0, 'c', at(Date.now()), 60_000);
      chownSync(endpoints.pathOf({ slot: 0, holder: 'c', term: own.term })!, 12345, 12345);
      const foreign = watch({ slot: 0, holder: 'c', term: own.term });
      await eventually('the watch given up', () => !foreign.follower.watching);
      expect(foreign.ended).not.toHaveBeenCalled();
    }
    expect(plain.ended).not.toHaveBeenCalled();
    expect(greeted.ended).not.toHaveBeenCalled();
  });

  it('makes no endpoint where the socket’s path would be too long, and campaigns as before', async () => {
    const folder = join(database.file, '..', 'a-folder-with-a-name-long-enough-to-leave-no-room-for-a-socket-path-beside-it');
    mkdirSync(folder);
    const [leader, follower] = [new Database(join(folder, 'leader.db')), new Database(join(folder, 'leader.db'))];
    try {
      const { acquired, lease } = sqliteLeaseStore(leader).acquire(0, 'a', at(Date.now()), 60_000);
      expect(acquired).toBe(true);
      expect(readdirSync(folder).filter((name) => name.includes('-leadership-'))).toEqual([]);
      expect(
        sqliteLeaseStore(follower).capabilities.tenureProof.watchTenure(
          { slot: 0, holder: lease.holder, term: lease.term },
          () => undefined,
        ).watching,
      ).toBe(false);
    } finally {
      leader.close();
      follower.close();
    }
  });

  it('is not inherited by the leader’s child processes: neither the listening socket nor its followers’ connections', async () => {
    const store = sqliteLeaseStore(database.open());
    const { lease } = store.acquire(0, 'a', at(Date.now()), 60_000);
    const tenure = { slot: 0, holder: 'a', term: lease.term };
    watch(tenure); // a follower in this process: both ends of its connection are here
    await eventually('the follower connected', () => watcherCount(database.file) === 1);
    const inodes = endpointSockets(database.file).map((socket) => `socket:[${socket.inode}]`);
    expect(inodes).toHaveLength(2);
    expect(readlinkSync(`/proc/self/fd/${store.endpointDescriptor(tenure)}`)).toMatch(/^socket:/);
    const child = spawnSync(
      process.execPath,
      [
        '-e',
        `
      const { readdirSync, readlinkSync } = require('node:fs');
      console.log(JSON.stringify(readdirSync('/proc/self/fd').map((fd) => { try { return readlinkSync('/proc/self/fd/' + fd); } catch { return ''; } })));
    `,
      ],
      { encoding: 'utf8' },
    );
    const inherited: string[] = JSON.parse(child.stdout);
    expect(inherited.length).toBeGreaterThan(0);
    expect(inherited.filter((link) => inodes.includes(link))).toEqual([]);
    store.release(tenure);
  });
});

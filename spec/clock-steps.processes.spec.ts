import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { postgresLedgerTable } from '../test-kit/chaos-database';
import { eventually } from '../test-kit/eventually';
import { beliefSegments, overlappingBeliefs, WorkerRecord } from '../test-kit/history';
import { PostgresServer, startPostgresServer } from '../test-kit/postgres-server';
import { SteppedClock } from '../test-kit/stepped-clock';
import { sleep } from '../test-kit/worker-process';
import { Pool } from 'pg';
import { ChildWorker, explainFailure } from './support/child-worker';
import { SpawnedScript } from './support/spawned-script';
import { pauseOutsideWriteLock, workerGroup } from './support/worker-group';

// Real processes whose wall clock steps, all at the same moment, as NTP steps a host's clock
// (libfaketime, from Debian's faketime package; the monotonic clock stays real). Beliefs are
// compared on the host's monotonic clock, which no step moves. What is asserted is what
// happened: who led, with which term, which writes went through; every wait is generous.
// Shorter than the 1 s / 3 s / 250 ms, in the same proportions, to keep `npm test` short.
const timing = { renewEvery: 500, expiresAfter: 1_500, retryEvery: 125 };
const cliScript = join(__dirname, '..', 'dist', 'cli', 'main.js');

const count = (workers: readonly ChildWorker[], type: string, after = -Infinity) =>
  workers.flatMap((w) => w.records).filter((record) => record.type === type && (record.mono ?? 0) > after).length;

const monotonicNow = () => Number(process.hrtime.bigint()) / 1e6;

/** Waits for `leader`'s next renewal. */
const nextRenewal = (leader: ChildWorker) => {
  const since = monotonicNow();
  return eventually('a renewal', () => leader.records.some((r) => r.type === 'renewed' && (r.mono as number) > since));
};

/**
 * Four forward steps of ten minutes, each right after a renewal: until the next one, every
 * follower that polls finds a lease that ends, by the wall clock, ten minutes ago.
 */
async function stepForward(clock: SteppedClock, leader: ChildWorker): Promise<void> {
  for (let i = 0; i < 4; i++) {
    await nextRenewal(leader);
    clock.step(600);
    await sleep(timing.renewEvery);
  }
}

/** 200 s forward and back every 150 ms for 6 s: four leases. */
async function strobe(clock: SteppedClock): Promise<void> {
  for (let i = 0; i < 40; i++) {
    clock.step(i % 2 === 0 ? 200 : -200);
    await sleep(150);
  }
}

/**
 * What must hold after steps while a leader leads: the same leader, same term, no election,
 * no `lost`, no `error` but lock contention, its fenced writes still committing, and no two
 * beliefs at once. A follower that met the leader's fenced writes at every try for
 * `retryEvery` (a loaded machine, a rollback journal) reports `DATABASE_BUSY`: contention,
 * not a disturbance of who leads.
 */
function expectUndisturbed(
  workers: readonly ChildWorker[],
  leader: ChildWorker,
  since: number,
  segments: ReturnType<typeof beliefSegments>,
) {
  const disturbances = workers
    .flatMap((w) => w.records)
    .filter((r) => (r.mono ?? 0) > since && ['elected', 'lost', 'error', 'terminated'].includes(r.type))
    .filter((r) => !(r.type === 'error' && r.code === 'DATABASE_BUSY'));
  expect(disturbances).toEqual([]);
  expect(leader.leads).toBe(true);
  expect(count([leader], 'fenced-write', since)).toBeGreaterThan(10); // one every 100 ms
  expect(count(workers, 'fenced-rejected', since)).toBe(0);
  expect(overlappingBeliefs(segments)).toEqual([]);
}

describe.each(['wal', 'delete'] as const)('on SQLite (%s), every candidate on a wall clock that steps', (journal) => {
  const processes = workerGroup(journal);
  let clock: SteppedClock;
  beforeEach(() => {
    clock = new SteppedClock();
  });
  afterEach(() => clock.remove());

  const startCandidates = async () => {
    const workers = [0, 1, 2].map(() => processes.start('candidate', { ...timing, ledgerEvery: 100 }, clock.launcher));
    const leader = await processes.leaderAmong(workers);
    await eventually('every candidate campaigning', () => workers.every((w) => w.holder !== undefined));
    await sleep(timing.expiresAfter); // followers have looked at the lease, the leader renewed
    return { workers, leader };
  };

  it.each([
    ['four forward steps of ten minutes', stepForward],
    ['a strobe (200 s forward and back every 150 ms for 6 s)', strobe],
  ])('keeps its leader through %s: no election, no lost, its fenced writes go on, observers see no change', (_, steps) =>
    processes.explain(async () => {
      const { workers, leader } = await startCandidates();
      const watcher = new SpawnedScript(cliScript, ['watch', processes.database.file], clock.environment);
      await watcher.shows(/leads, term/);
      const since = monotonicNow();
      await steps(clock, leader);
      await sleep(timing.expiresAfter + 1_000); // more than a lease after the last step
      const status = new SpawnedScript(cliScript, ['status', processes.database.file, '--json'], clock.environment);
      expect(JSON.parse((await status.result()).output)).toMatchObject({ holder: leader.holder, live: true });
      watcher.process.kill();
      await watcher.exited;
      expect(watcher.output.match(/leads, term/g)).toHaveLength(1);
      expect(watcher.output).not.toMatch(/nobody leads/);
      expectUndisturbed(workers, leader, since, processes.history('monotonic'));
    }),
  );

  it('replaces a leader that stops right after the clock went back ten minutes within a lease of its last renewal', () =>
    processes.explain(async () => {
      const { workers, leader } = await startCandidates();
      // Right after a renewal: the lease it wrote ends, by the clock set back, ten minutes later.
      await nextRenewal(leader);
      clock.step(-600);
      // Alive: nothing proves it dead, only the lease can end it. Outside its locks: in a
      // rollback journal, a process paused holding one stops every writer.
      await pauseOutsideWriteLock(leader, processes.database.open({ timeout: 0 }));
      const lastWrite = leader.records.filter((r) => r.type === 'renewed' || r.type === 'elected').at(-1) as WorkerRecord;
      const others = workers.filter((w) => w !== leader);
      const next = await eventually('another leader', () => others.find((w) => w.leads), 20_000);
      const elected = next.last('elected') as WorkerRecord;
      // The next leader comes a lease after the last renewal, not ten minutes and a lease.
      expect((elected.mono as number) - (lastWrite.mono as number)).toBeLessThan(timing.expiresAfter + 1_500);
      leader.signal('SIGCONT');
      await eventually('the stopped leader learns it lost', () => leader.find('lost', (r) => (r.mono ?? 0) > (elected.mono as number)));
      expect(overlappingBeliefs(processes.history('monotonic'))).toEqual([]);
    }));
});

describe('on SQLite, a candidate in a time namespace of its own (its monotonic clock shifted)', () => {
  const processes = workerGroup('wal');
  const shift = 100_000; // seconds: to the others, its deadlines would end a day later

  it('agrees with the others on when a lease ends: its stopped lease is taken a lease later, and it takes no live one', () =>
    processes.explain(async () => {
      // unshare runs the worker as its child (and kills it if unshare dies): signals go to the worker's own pid.
      const shifted = processes.start('candidate', { ...timing, ledgerEvery: 100 }, [
        'unshare',
        '--time',
        '--monotonic',
        String(shift),
        '--fork',
        '--kill-child',
      ]);
      await processes.leaderAmong([shifted]);
      const { pid } = shifted.records[0];
      const others = [0, 1].map(() => processes.start('candidate', { ...timing, ledgerEvery: 100 }));
      await eventually('every candidate campaigning', () => others.every((w) => w.holder !== undefined));
      await sleep(timing.expiresAfter);
      await pauseOutsideWriteLock(shifted, processes.database.open({ timeout: 0 }), pid);
      const stoppedAt = monotonicNow();
      const next = await eventually('another leader', () => others.find((w) => w.leads), 20_000);
      expect((next.last('elected')!.mono as number) - stoppedAt).toBeLessThan(timing.expiresAfter + 1_500);
      process.kill(pid, 'SIGCONT');
      await eventually('the stopped leader learns it lost', () => shifted.find('lost'));
      await sleep(3 * timing.expiresAfter); // it follows a live lease now: it must leave it alone
      expect(shifted.leads).toBe(false);
      // Its own reports are on its shifted clock: put them back on the host's to compare.
      const onHost = shifted.records.map((r) => ({
        ...r,
        mono: (r.mono as number) - shift * 1_000,
        monoExpiresAt: r.monoExpiresAt && r.monoExpiresAt - shift * 1_000,
      }));
      const segments = [...beliefSegments(onHost, 'monotonic'), ...others.flatMap((w) => beliefSegments(w.records, 'monotonic'))];
      expect(overlappingBeliefs(segments)).toEqual([]);
      expect(count(others, 'elected')).toBe(1);
    }));
});

describe('on SQLite, a leader paused past its deadline', () => {
  const processes = workerGroup('wal');

  it('runs nothing of its job after the deadline once it resumes, though the job’s timer fell due first', () =>
    processes.explain(async () => {
      const workers = [0, 1].map(() => processes.start('candidate', { ...timing, tickEvery: 10 }));
      const leader = await processes.leaderAmong(workers);
      await eventually('the leader ticking', () => leader.records.some((r) => r.type === 'tick'));
      await sleep(300);
      leader.signal('SIGSTOP');
      await eventually('the leader stopped', () => leader.stopped);
      const beliefEnd = (leader.records.filter((r) => r.type === 'renewed' || r.type === 'elected').at(-1) as WorkerRecord)
        .monoExpiresAt as number;
      await sleep(3 * timing.expiresAfter);
      leader.signal('SIGCONT');
      await eventually('the paused leader learns it lost', () => leader.find('lost'));
      await sleep(200);
      const lateTicks = leader.records.filter((r) => r.type === 'tick' && (r.mono as number) > beliefEnd);
      expect(lateTicks).toEqual([]);
      expect(leader.records.filter((r) => r.type === 'tick').length).toBeGreaterThan(5);
    }));
});

describe('on PostgreSQL, a server whose clock steps', () => {
  let clock: SteppedClock;
  let server: PostgresServer;
  let pool: Pool;
  let workers: ChildWorker[];
  const schema = 'clock_steps';

  beforeAll(async () => {
    clock = new SteppedClock();
    server = await startPostgresServer({ environment: clock.environment });
    pool = new Pool({ connectionString: server.url, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    server.stop();
    clock.remove();
  });
  beforeEach(async () => {
    clock.reset();
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    await pool.query(postgresLedgerTable(schema));
    workers = [];
  });
  afterEach(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
  });

  // Print what every worker said when a test fails, so that a failure can be read.
  const explain = (test: () => Promise<void>) => explainFailure(() => workers, test);
  const startCandidates = async () => {
    workers = [0, 1, 2].map(() => new ChildWorker('candidate', { postgres: { url: server.url, schema }, ...timing, ledgerEvery: 100 }));
    const leader = await eventually('a leader', () => workers.find((w) => w.leads));
    await eventually('every candidate campaigning', () => workers.every((w) => w.holder !== undefined));
    await sleep(timing.expiresAfter);
    return leader;
  };
  const segments = () => workers.flatMap((w) => beliefSegments(w.records, 'monotonic'));

  it.each([
    ['four forward steps of ten minutes', stepForward],
    ['a strobe', strobe],
  ])('keeps its leader through %s, and an observer sees no change', (_, steps) =>
    explain(async () => {
      const leader = await startCandidates();
      const watcher = new SpawnedScript(cliScript, ['watch', server.url, '--schema', schema]);
      await watcher.shows(/leads, term/);
      const since = monotonicNow();
      await steps(clock, leader);
      await sleep(timing.expiresAfter + 1_000);
      watcher.process.kill();
      await watcher.exited;
      expect(watcher.output.match(/leads, term/g)).toHaveLength(1);
      expect(watcher.output).not.toMatch(/nobody leads/);
      expectUndisturbed(workers, leader, since, segments());
    }),
  );

  it('replaces a leader that stops right after the clock went back ten minutes within a lease of its last renewal', () =>
    explain(async () => {
      const leader = await startCandidates();
      await nextRenewal(leader);
      clock.step(-600);
      leader.signal('SIGSTOP');
      await eventually('the leader stopped', () => leader.stopped);
      const lastWrite = leader.records.filter((r) => r.type === 'renewed' || r.type === 'elected').at(-1) as WorkerRecord;
      const next = await eventually('another leader', () => workers.find((w) => w !== leader && w.leads), 20_000);
      const elected = next.last('elected') as WorkerRecord;
      expect((elected.mono as number) - (lastWrite.mono as number)).toBeLessThan(timing.expiresAfter + 1_500);
      leader.signal('SIGCONT');
      await eventually('the stopped leader learns it lost', () => leader.find('lost', (r) => (r.mono ?? 0) > (elected.mono as number)));
      expect(overlappingBeliefs(segments())).toEqual([]);
    }));
});

describe('the stepped clock', () => {
  it('removes what libfaketime left of a process killed outright before it starts another, and nothing of one still running', async () => {
    const clock = new SteppedClock();
    const objects = (pid: number | undefined) =>
      readdirSync('/dev/shm').filter((name) => name.endsWith(`faketime_shm_${pid}`) || name.endsWith(`faketime_sem_${pid}`));
    const running = new SpawnedScript('-e', ['setInterval(() => undefined, 1000)'], clock.environment);
    const killed = new SpawnedScript('-e', ['process.kill(process.pid, "SIGKILL")'], clock.environment);
    try {
      await killed.exited;
      await eventually('the running one started on the clock', () => objects(running.process.pid).length === 2);
      expect(objects(killed.process.pid)).toHaveLength(2); // what the kill left
      void clock.environment; // as the next process on the clock is started
      expect(objects(killed.process.pid)).toEqual([]);
      expect(objects(running.process.pid)).toHaveLength(2);
    } finally {
      running.process.kill('SIGKILL');
      await running.exited;
      clock.remove();
    }
    expect(objects(running.process.pid)).toEqual([]);
  });
});

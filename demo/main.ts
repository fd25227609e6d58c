/**
 * npm start: three worker processes elect a leader on a temporary database, and the demo
 * stops, kills and pauses leaders on a schedule, telling what happens as it happens and
 * measuring each failover. About 15 seconds, then a summary. Plain lines only, so that it
 * reads the same in a terminal and piped to a file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { eventually } from '../test-kit/eventually';
import { beliefSegments, overlappingBeliefs, WorkerRecord } from '../test-kit/history';
import { ledgerTable, openWorkerDatabase } from '../test-kit/worker-database';
import { sleep, stopWorkers, WorkerProcess } from '../test-kit/worker-process';

const timing = { renewEvery: 300, expiresAfter: 1_500, retryEvery: 500 };
/** Each leader writes a ledger row with `fenced` this often. */
const ledgerEvery = 250;

const startedAt = Date.now();
const clock = () => `${((Date.now() - startedAt) / 1000).toFixed(2).padStart(6)} s`;
const say = (line: string) => console.log(`${clock()}  ${line}`);
const announce = (line: string) => console.log(`\n${clock()}  ── ${line}`);

interface Failover {
  what: string;
  gap: number;
  note?: string;
}

/** The demo's workers on one file: started, started again once one exits, and asked who leads. */
class Cluster {
  /** Those running now. */
  readonly workers: WorkerProcess[] = [];
  /** Every one started, for the summary. */
  readonly all: WorkerProcess[] = [];

  constructor(private readonly file: string) {}

  spawn(name: string): WorkerProcess {
    leading.delete(name); // a killed worker reported nothing
    const worker = new WorkerProcess(
      name,
      'candidate',
      { file: this.file, journal: 'wal', ledgerEvery, ...timing },
      (record) => tell(name, record),
      (text) => process.stderr.write(text),
    );
    this.workers.push(worker);
    this.all.push(worker);
    return worker;
  }

  /** Once `worker` exited, a new one of its name, campaigning. */
  async replace(worker: WorkerProcess): Promise<void> {
    await worker.exited;
    this.workers.splice(this.workers.indexOf(worker), 1);
    const again = this.spawn(worker.name);
    await eventually(`${worker.name} campaigning again`, () => again.records.some((r) => r.type === 'subscribed'));
  }

  leader(): Promise<WorkerProcess> {
    return eventually('a leader', () => this.workers.find((w) => w.alive && !w.paused && w.leading.has(0)), 30_000);
  }

  /** The first election since `since` of any worker but `except`. */
  nextElection(since: number, except: WorkerProcess): Promise<WorkerRecord> {
    return eventually(
      'the next leader',
      () => this.all.flatMap((w) => (w === except ? [] : w.records)).find((r) => r.type === 'elected' && r.at >= since),
      30_000,
    );
  }
}

async function gracefulStop(cluster: Cluster, first: WorkerProcess): Promise<Failover> {
  announce(`stopping the leader, ${first.name}, gracefully (SIGTERM): it releases its lease on the way out`);
  const stoppedAt = Date.now();
  first.signal('SIGTERM');
  const afterStop = await cluster.nextElection(stoppedAt, first);
  const released = first.records.find((r) => r.type === 'unsubscribed' && r.at >= stoppedAt);
  await cluster.replace(first);
  return { what: 'graceful stop', gap: afterStop.at - (released?.at ?? stoppedAt) };
}

async function crash(cluster: Cluster): Promise<Failover> {
  const second = await cluster.leader();
  announce(`killing the leader, ${second.name} (SIGKILL): nobody releases, but the kernel closes its sockets, and its standbys see it`);
  const killedAt = Date.now();
  second.signal('SIGKILL');
  const afterKill = await cluster.nextElection(killedAt, second);
  const lastExpiry = Math.max(...second.records.map((r) => r.expiresAt ?? 0));
  await cluster.replace(second);
  return { what: 'crash', gap: afterKill.at - killedAt, note: `${lastExpiry - afterKill.at} ms before its lease would have expired` };
}

async function pauseTwiceItsLease(cluster: Cluster): Promise<Failover> {
  const third = await cluster.leader();
  const pause = 2 * timing.expiresAfter;
  announce(
    `pausing the leader, ${third.name} (SIGSTOP) for ${pause} ms, twice its lease: alive, but silent; the others wait for its lease`,
  );
  const pausedAt = Date.now();
  third.signal('SIGSTOP');
  third.paused = true;
  const afterPause = await cluster.nextElection(pausedAt, third);
  await sleep(pausedAt + pause - Date.now());
  announce(`resuming ${third.name} (SIGCONT): it must find out that it lost, and write nothing more`);
  const resumedAt = Date.now();
  third.signal('SIGCONT');
  third.paused = false;
  const noticed = await eventually('the loss noticed', () => third.records.find((r) => r.type === 'lost' && r.at >= resumedAt), 30_000);
  const pausedExpiry = Math.max(...third.records.filter((r) => r.at <= pausedAt).map((r) => r.expiresAt ?? 0));
  return {
    what: 'pause',
    gap: afterPause.at - pausedAt,
    note: `${afterPause.at - pausedExpiry} ms after its lease expired; ${third.name} noticed its loss ${noticed.at - resumedAt} ms after resuming`,
  };
}

async function main(): Promise<void> {
  const folder = mkdtempSync(join(os.tmpdir(), 'observe-leadership-demo-'));
  const file = join(folder, 'demo.db');
  openWorkerDatabase(file, { journal: 'wal', busyTimeout: 1_000, setupSql: ledgerTable }).close();
  console.log(`observe-leadership demo: 3 worker processes elect one leader through ${file}`);
  console.log(
    `leases last ${timing.expiresAfter} ms and are renewed every ${timing.renewEvery} ms; ` +
      `the leader writes a ledger row with fenced() every ${ledgerEvery} ms\n`,
  );
  const cluster = new Cluster(file);
  for (const name of ['A', 'B', 'C']) cluster.spawn(name);
  const first = await cluster.leader();
  await sleep(2_500);
  const failovers = [await gracefulStop(cluster, first)];
  await sleep(2_000);
  failovers.push(await crash(cluster));
  await sleep(2_000);
  failovers.push(await pauseTwiceItsLease(cluster));
  await sleep(2_000);

  announce('stopping every worker, the leader last');
  const last = cluster.workers.find((w) => w.leading.has(0));
  await stopWorkers(cluster.workers.filter((w) => w !== last));
  await stopWorkers(last ? [last] : []);
  summarize(
    cluster.all.flatMap((w) => w.records),
    failovers,
    file,
  );
  rmSync(folder, { recursive: true, force: true });
}

/** Which workers lead, by name, as their reports say: a worker reports its election before it says it campaigns. */
const leading = new Set<string>();

function tell(name: string, record: WorkerRecord): void {
  const until = record.expiresAt ? `, lease until +${((record.expiresAt - startedAt) / 1000).toFixed(2)} s` : '';
  switch (record.type) {
    case 'subscribed':
      return leading.has(name) ? undefined : say(`${name}  started, campaigning`);
    case 'elected':
      leading.add(name);
      return say(`${name}  elected, term ${record.term}${until}`);
    case 'lost':
      leading.delete(name);
      return say(`${name}  lost term ${record.term} (${record.reason})`);
    case 'unsubscribed':
      return say(`${name}  ${leading.delete(name) ? 'released its lease' : 'stopped'}`);
    case 'fenced-rejected':
      return say(`${name}  a late ledger write for term ${record.term} was refused: ${record.code}`);
    case 'error':
      return say(`${name}  database error, still campaigning: ${record.message}`);
    default:
      return; // renewals and accepted ledger writes: counted in the summary
  }
}

function summarize(records: WorkerRecord[], failovers: Failover[], file: string): void {
  const elected = records.filter((r) => r.type === 'elected').sort((a, b) => a.at - b.at);
  const terms = elected.map((r) => r.term!);
  const overlaps = overlappingBeliefs(beliefSegments(records));
  const count = (type: string) => records.filter((r) => r.type === type).length;
  console.log('\nsummary');
  for (const { what, gap, note } of failovers) {
    console.log(`  without a leader after a ${what}: ${gap} ms${note ? ` (${note})` : ''}`);
  }
  const increasing = terms.every((term, i) => i === 0 || term > terms[i - 1]);
  console.log(
    `  tenures: ${elected.length}, terms ${terms.join(', ')}: ${increasing ? 'each greater than the last' : 'NOT increasing (a bug: please report it)'}`,
  );
  console.log(
    `  renewals: ${count('renewed')}; fenced ledger writes accepted: ${count('fenced-write')}, refused: ${count('fenced-rejected')}`,
  );
  console.log(
    `  two leaders at once: ${overlaps.length === 0 ? 'never' : `${overlaps.length} times (a bug: please report it)`}, checked on every event`,
  );
  console.log(`\nthe database was ${file} (removed). To follow an election on your own database:`);
  console.log('  npx observe-leadership watch <db>    (in this repository: node dist/cli/main.js watch <db>)');
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});

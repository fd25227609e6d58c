/** What an idle cluster costs: the CPU its processes use by role, and what happened meanwhile. */
import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { eventually } from '../test-kit/eventually';
import { WorkerRecord } from '../test-kit/history';
import { sleep, WorkerProcess } from '../test-kit/worker-process';
import { Cluster } from './cluster';

/** One process of an idle cluster: what it was, and its % of a core. */
interface IdleProcess {
  role: 'leader' | 'standby' | 'polling';
  percent: number;
}

/** An idle run of one cluster: CPU by role, and whether the first leader led throughout. */
export interface IdleRun {
  processes: number;
  /** Rows a second that an application process wrote beside it, in another table of the file (0: none). */
  appRowsPerSecond: number;
  /** Mean and highest % of a core, by role; NaN where no process had the role. */
  leader: number;
  standby: { mean: number; max: number };
  polling: { mean: number; max: number };
  /** Over the whole run, from start-up to the stop: elections (1 when the first leader led throughout), `lost` and `error` reports. */
  elections: number;
  lost: number;
  errors: number;
  every: IdleProcess[];
}

/**
 * An idle cluster of `count` processes for `warmUp` + `seconds`: the CPU each uses over
 * the last `seconds` (for a minute after start-up a Node.js process still compiles and
 * collects garbage, several times more than it then uses idle), in % of one core, by role;
 * and every election, loss and error over the whole run. With `appRowsPerSecond`, an
 * application process writes that many rows a second into a table of its own in the same
 * file meanwhile, one commit each.
 */
export async function idleRun(cluster: Cluster, count: number, warmUp: number, seconds: number, appRowsPerSecond = 0): Promise<IdleRun> {
  let app: ChildProcess | undefined;
  try {
    await cluster.start(count);
    const leader = await cluster.leader();
    // Once every process has started: dozens of processes that create their tables at once,
    // each for a moment, beside an application that commits hundreds of times a second, on
    // two cores, can wait longer than a start-up should.
    let appReport = '';
    if (appRowsPerSecond > 0) {
      const options = { file: cluster.file, journal: cluster.journal, rowsPerSecond: appRowsPerSecond };
      app = spawn(process.execPath, [join(__dirname, 'app-writer.js'), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
      app.stdout!.on('data', (chunk) => (appReport += chunk));
    }
    const usage = async (worker: WorkerProcess) => {
      const mark = Date.now();
      worker.send('usage');
      return eventually('usage', () => worker.records.find((r) => r.type === 'usage' && r.at >= mark)) as Promise<
        WorkerRecord & { cpu: number; uptime: number; standby?: boolean | null }
      >;
    };
    await sleep(warmUp * 1000);
    const workers = cluster.alive();
    const before = await Promise.all(workers.map(usage));
    await sleep(seconds * 1000);
    const after = await Promise.all(workers.map(usage));
    const every = workers.map((worker, i): IdleProcess => ({
      role: worker === leader ? 'leader' : (after[i].standby ?? before[i].standby) === true ? 'standby' : 'polling',
      percent: ((after[i].cpu - before[i].cpu) / 1000 / (after[i].uptime - before[i].uptime)) * 100,
    }));
    const of = (role: IdleProcess['role']) => {
      const values = every.filter((p) => p.role === role).map((p) => p.percent);
      return { mean: values.reduce((a, b) => a + b, 0) / values.length, max: values.length ? Math.max(...values) : NaN };
    };
    const result = {
      processes: count,
      appRowsPerSecond,
      leader: of('leader').mean,
      standby: of('standby'),
      polling: of('polling'),
      elections: cluster.count('elected'),
      lost: cluster.count('lost'),
      errors: cluster.errors(),
      every,
    };
    if (app) {
      const exited = new Promise((resolve) => app!.once('exit', resolve));
      app.kill('SIGTERM');
      await exited;
      const { rows, seconds: ran } = JSON.parse(appReport) as { rows: number; seconds: number };
      result.appRowsPerSecond = Math.round(rows / ran);
    }
    return result;
  } finally {
    app?.kill('SIGKILL');
    await cluster.stop();
  }
}

/** What the benchmark and the specs ask of a worker from outside: its health endpoint, its event loop. */
import { get } from 'node:http';
import { performance } from 'node:perf_hooks';
import { eventually } from './eventually';
import type { WorkerRecord } from './history';
import type { WorkerProcess } from './worker-process';

/** The port of the worker's health endpoint (a worker started with `health`), once it listens. */
export async function healthPort(worker: WorkerProcess): Promise<number> {
  const record = await eventually('the health endpoint', () => worker.records.find((r) => r.type === 'health'));
  return (record as WorkerRecord & { port: number }).port;
}

/** Ms that GET /healthz took to answer on `port`, whatever the answer. */
export function healthAnswer(port: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/healthz' }, (response) => {
      response.resume();
      response.on('end', () => resolve(performance.now() - started));
    }).on('error', reject);
  });
}

/** The longest event-loop delay (ms) of the worker since it was last asked; the first ask starts the count. */
export async function loopDelay(worker: WorkerProcess): Promise<number> {
  const asked = worker.records.length;
  worker.send('loop-delay');
  const record = await eventually('the event loop’s delays', () => worker.records.slice(asked).find((r) => r.type === 'loop-delay'));
  return (record as WorkerRecord & { max: number }).max;
}

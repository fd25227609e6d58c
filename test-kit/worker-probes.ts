/** What the benchmark and the specs ask of a worker from outside: its health endpoint, its event loop. */
import { get } from 'node:http';
import { performance } from 'node:perf_hooks';
import { eventually } from './eventually';
import type { WorkerRecord } from './history';
import type { WorkerProcess } from './worker-process';

/** The port of the worker's health endpoint (a worker started with `health`), once it listens. */
export function healthPort(worker: WorkerProcess): Promise<number> {
  return reportedPort(worker, 'health');
}

/** The port of the worker's metrics endpoint (a worker started with `metrics`), once it listens. */
export function metricsPort(worker: WorkerProcess): Promise<number> {
  return reportedPort(worker, 'metrics');
}

/** The port the worker reported in its first record of `type`, once it did. */
async function reportedPort(worker: WorkerProcess, type: 'health' | 'metrics'): Promise<number> {
  const record = await eventually(`${worker.name}'s ${type} endpoint`, () => worker.records.find((r) => r.type === type));
  return (record as WorkerRecord & { port: number }).port;
}

/** Asks every port's GET /healthz, all at once, every `every` ms for `duration` ms: how long each answer took. */
export async function healthAnswersFor(ports: number[], duration: number, every: number): Promise<number[]> {
  const answers: number[] = [];
  const started = Date.now();
  while (Date.now() - started < duration) {
    answers.push(...(await Promise.all(ports.map(healthAnswer))));
    await new Promise((resolve) => setTimeout(resolve, every));
  }
  return answers;
}

/** Ms that GET /healthz took to answer on `port`, whatever the answer. */
function healthAnswer(port: number): Promise<number> {
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

/**
 * `explore` on every core: one worker thread per core, each running its share of the seeds
 * (seed, seed + threads, ...) on a library of its own (with the plant, if any, switched in
 * before it loads), all stopping once one finds a violation.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Exploration, Shape } from './explore';

export const cores = availableParallelism();

export async function exploreInThreads(
  shape: Shape,
  { seed, seconds, runs = Infinity, threads }: { seed: number; seconds: number; runs?: number; threads: number },
): Promise<Exploration> {
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const explorations = await Promise.all(
    Array.from({ length: threads }, (_, thread) => {
      const worker = new Worker(`${__dirname}/explore-thread.js`, {
        // Runs shared out: the seeds below seed + runs, whatever the threads.
        workerData: { shape, options: { seed: seed + thread, stride: threads, seconds, runs: Math.ceil((runs - thread) / threads) }, stop },
      });
      return new Promise<Exploration>((resolve, reject) => {
        worker.once('message', (exploration: Exploration) => {
          if (exploration.found !== undefined) Atomics.store(stop, 0, 1);
          resolve(exploration);
        });
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`a simulator thread exited with ${code} before it reported`)));
      });
    }),
  );
  return {
    runs: sum(explorations.map((e) => e.runs)),
    failovers: sum(explorations.map((e) => e.failovers)),
    faults: sum(explorations.map((e) => e.faults)),
    seeds: [seed, Math.max(...explorations.map((e) => e.seeds[1]))],
    found: explorations.find((e) => e.found !== undefined)?.found,
  };
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

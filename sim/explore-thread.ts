/**
 * One thread of `exploreInThreads`: plants the bug it was given, if any, loads the library,
 * explores its share of the seeds, and reports.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { ExploreOptions, Shape } from './explore';
import { plant } from './plants';
import { closeEngineOfThread } from './postgres/sim-server';

const { shape, options, stop } = workerData as { shape: Shape; options: ExploreOptions; stop: Int32Array };
if (shape.plant !== undefined) plant(shape.plant);
// A require, not an import: the plant hooks the CommonJS loader, which an import() would bypass.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { explore } = require('./explore') as typeof import('./explore');
void explore(shape, { ...options, stop: () => Atomics.load(stop, 0) === 1 }).then(async (exploration) => {
  parentPort?.postMessage(exploration);
  await closeEngineOfThread(); // its timers would keep the thread alive
});

import { join } from 'node:path';
import { freePort } from '../../test-kit/postgres-server';
import { SpawnedScript } from './spawned-script';

/** An example as a user starts it: its file, its arguments, and the output that shows it works. */
export type ExampleRun = [name: string, args: string[], works: RegExp];

/** The SQLite examples, each on `file` (the health endpoints on free ports). */
export async function sqliteExampleRuns(file: string): Promise<ExampleRun[]> {
  return [
    ['print-events.js', [file], /elected {2}term \d+, lease until/],
    ['job-queue.js', [file], /did job 1 \(term \d+\)/],
    ['graceful-shutdown.js', [file], /started job 1/],
    ['cron-singleton.js', [file, '200'], /ran the task for period \d+/],
    ['healthz.js', [file, String(await freePort())], /health on http/],
    ['follower-health.js', [file, String(await freePort())], /health on http/],
    [
      'forward-to-leader.js',
      [file, String(await freePort())],
      /elected term \d+[\s\S]*serving on http|serving on http[\s\S]*elected term \d+/,
    ],
  ];
}

/**
 * Starts each example of the installed package's `examples` folder in turn, as a user of the
 * project `cwd` would, until it shows that it works; then Ctrl-C, after which each must stop
 * by itself with code 0 (the examples' own specs check the rest).
 */
export async function startEach(examples: string, runs: ExampleRun[], cwd: string, runtime?: string): Promise<void> {
  for (const [name, args, works] of runs) {
    const example = new SpawnedScript(join(examples, name), args, {}, cwd, runtime);
    try {
      await example.shows(works);
      example.process.kill('SIGINT');
      expect({ name, code: await example.exited }).toEqual({ name, code: 0 });
    } finally {
      example.process.kill('SIGKILL');
    }
  }
}

import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import type { WorkerRecord } from '../../chaos/history';
import type { WorkerOptions } from '../../chaos/worker';

// The chaos harness's workers, as built by `npm test` (build/chaos), run in their own processes.
const scripts = { candidate: 'worker.js', seed: 'seed-worker.js' };
const buildFolder = join(__dirname, '..', '..', 'build', 'chaos');

/** A worker in its own Node.js process, and everything it has reported so far. */
export class ChildWorker {
  readonly records: WorkerRecord[] = [];
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;
  private stderr = '';

  constructor(
    readonly kind: keyof typeof scripts,
    options: WorkerOptions,
  ) {
    this.child = spawn(process.execPath, [join(buildFolder, scripts[kind]), JSON.stringify(options)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.records.push(JSON.parse(line)));
    this.child.stderr!.on('data', (chunk) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The first record of that type (and matching `where`), if any. */
  find(type: string, where: (record: WorkerRecord) => boolean = () => true): WorkerRecord | undefined {
    return this.records.find((record) => record.type === type && where(record));
  }

  last(type: string): WorkerRecord | undefined {
    return this.records.filter((record) => record.type === type).at(-1);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Whether, by its own reports, it leads now: alive, and its last elected not followed by a lost. */
  get leading(): boolean {
    if (!this.alive) return false;
    const state = this.records.filter((r) => ['elected', 'lost', 'unsubscribed', 'terminated'].includes(r.type)).at(-1);
    return state?.type === 'elected';
  }

  send(command: string): void {
    this.child.stdin!.write(`${command}\n`);
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Whether the kernel shows the process as stopped (SIGSTOP has taken effect). */
  get stopped(): boolean {
    try {
      // /proc/PID/stat: "pid (comm) STATE ..."; the name may hold spaces, so split after ')'.
      return readFileSync(`/proc/${this.pid}/stat`, 'utf8').split(') ')[1].startsWith('T');
    } catch {
      return false;
    }
  }

  /** Ends the process (if still running) and waits for it. */
  async stop(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }

  describe(): string {
    return `worker ${this.pid}:\n${this.records.map((r) => JSON.stringify(r)).join('\n')}\n${this.stderr}`;
  }
}

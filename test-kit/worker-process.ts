import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { endsBelief, WorkerRecord } from './history';
import type { WorkerOptions } from './worker-options';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export type WorkerKind = 'candidate' | 'original';

// The compiled worker scripts: beside this file once built, or in build/test-kit when this
// file runs from source (the specs, under ts-jest).
const scripts = __dirname.endsWith(join('build', 'test-kit')) ? __dirname : join(__dirname, '..', 'build', 'test-kit');

/** One worker process (worker.js or original-worker.js) and what it reported; restarts make new ones. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  paused = false;
  readonly records: WorkerRecord[] = [];
  /** By slot: the holder this process leads with, if it leads. */
  readonly leading = new Map<number, string>();
  readonly holders = new Map<number, string>();
  /** The holder of its current subscriptions (one for all its slots), once it reported it. */
  holder: string | undefined;

  constructor(
    readonly name: string,
    readonly kind: WorkerKind,
    options: WorkerOptions,
    private readonly onRecord: (record: WorkerRecord) => void,
    onStderr: (text: string) => void,
    /** A command that runs node for it (`ip netns exec NAME`, say), if not run directly. */
    launcher: string[] = [],
    /** The runtime that runs it: this process's Node.js, another one, or Bun (see runtimes.ts). */
    runtime: string = process.execPath,
  ) {
    const script = join(scripts, kind === 'original' ? 'original-worker.js' : 'worker.js');
    const [command, ...prefix] = [...launcher, runtime];
    this.child = spawn(command, [...prefix, script, JSON.stringify({ ...options, worker: name })], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdin!.on('error', () => undefined); // a killed worker's stdin may break
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let record: WorkerRecord;
      try {
        record = JSON.parse(line);
      } catch {
        return onStderr(`${name}: ${line}`);
      }
      this.record(record);
    });
    this.child.stderr!.on('data', (chunk) => onStderr(`${name}: ${chunk}`));
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * Sends `signal`; for SIGKILL, first records that every slot's belief ends here, and, for a
   * process that held no slot, that it stopped campaigning (the chaos checker's liveness).
   */
  signal(signal: NodeJS.Signals): void {
    if (!this.alive) return;
    if (signal === 'SIGKILL') {
      const at = Date.now();
      const mono = Number(process.hrtime.bigint()) / 1e6;
      for (const slot of this.holders.keys()) this.record({ at, mono, pid: this.pid, type: 'killed', slot });
      if (this.holders.size === 0) this.record({ at, mono, pid: this.pid, type: 'killed' });
    }
    this.child.kill(signal);
  }

  send(command: string): void {
    if (this.alive) this.child.stdin!.write(`${command}\n`);
  }

  private record(record: WorkerRecord): void {
    this.observe(record);
    this.records.push(record);
    this.onRecord(record);
  }

  private observe(record: WorkerRecord): void {
    if (record.type === 'subscribed') return void (this.holder = record.holder);
    const slot = record.slot ?? 0;
    if (record.holder) this.holders.set(slot, record.holder);
    if (record.type === 'elected' || record.type === 'renewed') this.leading.set(slot, record.holder!);
    if (endsBelief.has(record.type)) this.leading.delete(slot);
  }
}

/** Stops workers gracefully (SIGTERM: they release), then kills what is left after 5 s. */
export async function stopWorkers(workers: WorkerProcess[]): Promise<void> {
  for (const worker of workers) worker.signal('SIGTERM');
  // A timer of its own, cleared once they exited: left running, it would keep the caller's
  // process alive for the rest of the 5 s (the demo's last line, then a wait).
  let late: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([Promise.all(workers.map((w) => w.exited)), new Promise((resolve) => (late = setTimeout(resolve, 5_000)))]);
  clearTimeout(late);
  for (const worker of workers) worker.signal('SIGKILL');
  await Promise.all(workers.map((w) => w.exited));
}

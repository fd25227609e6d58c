import { readFileSync } from 'node:fs';
import type { WorkerRecord } from '../../test-kit/history';
import type { WorkerOptions } from '../../test-kit/worker-options';
import { WorkerKind, WorkerProcess } from '../../test-kit/worker-process';

/** A chaos worker in its own process, with what the specs ask of it. */
export class ChildWorker extends WorkerProcess {
  private stderr = '';

  constructor(kind: WorkerKind, options: WorkerOptions, launcher: string[] = [], runtime?: string) {
    super(
      kind,
      kind,
      options,
      () => undefined,
      (text) => (this.stderr += text),
      launcher,
      runtime,
    );
  }

  /** The first record of that type (and matching `where`), if any. */
  find(type: string, where: (record: WorkerRecord) => boolean = () => true): WorkerRecord | undefined {
    return this.records.find((record) => record.type === type && where(record));
  }

  last(type: string): WorkerRecord | undefined {
    return this.records.filter((record) => record.type === type).at(-1);
  }

  /** How many followers its tenure endpoints greeted since it was last elected (see test-kit/worker.ts, `greeted`). */
  greetedSinceElected(): number {
    const elected = this.last('elected');
    return elected === undefined ? 0 : this.records.filter((record) => record.type === 'greeted' && record.at >= elected.at).length;
  }

  /** Whether, by its own reports, it leads slot 0 now (and is alive). */
  get leads(): boolean {
    return this.alive && this.leading.has(0);
  }

  /** Whether the kernel shows the process as stopped (SIGSTOP has taken effect). */
  get stopped(): boolean {
    return isStopped(this.pid);
  }

  /** Ends the process (if still running) and waits for it. */
  async stop(): Promise<void> {
    this.signal('SIGKILL');
    await this.exited;
  }

  describe(): string {
    return `worker ${this.pid}:\n${this.records.map((r) => JSON.stringify(r)).join('\n')}\n${this.stderr}`;
  }
}

/** Whether the kernel shows process `pid` as stopped (SIGSTOP has taken effect). */
export function isStopped(pid: number): boolean {
  try {
    // /proc/PID/stat: "pid (comm) STATE ..."; the name may hold spaces, so split after ')'.
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('T');
  } catch {
    return false;
  }
}

/** Runs `test`; if it fails, the error carries what every one of `workers` said, so that a failure can be read. */
export async function explainFailure(workers: () => readonly ChildWorker[], test: () => Promise<void>): Promise<void> {
  try {
    await test();
  } catch (error) {
    throw new Error(
      `${(error as Error).message}\n\n${workers()
        .map((w) => w.describe())
        .join('\n')}`,
      { cause: error },
    );
  }
}

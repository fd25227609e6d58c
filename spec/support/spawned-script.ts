import { ChildProcess, spawn } from 'node:child_process';
import { eventually } from '../../test-kit/eventually';

/** A Node.js script in a process of its own, run as a user runs it, its output gathered as it comes. */
export class SpawnedScript {
  readonly process: ChildProcess;
  output = '';
  readonly exited: Promise<number | null>;

  constructor(script: string, args: string[], environment: Record<string, string> = {}, cwd?: string, runtime = process.execPath) {
    this.process = spawn(runtime, [script, ...args], { env: { ...process.env, ...environment }, cwd });
    this.process.stdout!.on('data', (chunk) => (this.output += chunk));
    this.process.stderr!.on('data', (chunk) => (this.output += chunk));
    this.exited = new Promise((resolve) => this.process.once('exit', (code) => resolve(code)));
  }

  /** Waits until the output matches `pattern`; the match. */
  shows(pattern: RegExp): Promise<RegExpMatchArray> {
    return eventually(`${pattern} in the output`, () => this.output.match(pattern), { explain: () => this.output });
  }

  /** Waits for the exit: the code, and everything it printed. */
  async result(): Promise<{ code: number | null; output: string }> {
    const code = await this.exited;
    return { code, output: this.output };
  }
}

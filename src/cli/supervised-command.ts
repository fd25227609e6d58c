import { ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { join } from 'node:path';
import { ElectedEvent } from '../core/leadership-event';

/**
 * The command that `run` runs while it leads, one tenure at a time: started under the guard
 * (see command-guard.ts) in a process group of its own, with the tenure in its environment
 * and the endpoint's socket passed down, so that the stop signals reach the command's
 * children too and a runner killed outright takes its command with it.
 */
export class SupervisedCommand {
  private child: ChildProcess | undefined;
  /** The exit code of the last command started, once it exited. */
  private exited: Promise<number> = Promise.resolve(0);

  constructor(
    private readonly command: string,
    private readonly commandArguments: readonly string[],
    /** Ms between SIGTERM and SIGKILL. */
    private readonly grace: number,
    private readonly log: (line: string) => void,
  ) {}

  /** The command, as logs name it. */
  get name(): string {
    return this.command;
  }

  /** Settles once the command started last has exited (at once if none runs). */
  whenExited(): Promise<number> {
    return this.exited;
  }

  /** Starts the command for `lease`; `onExit` hears of its exit code, whoever ended it. */
  start(lease: ElectedEvent, endpoint: number | undefined, onExit: (code: number) => void): void {
    const { command, commandArguments } = this;
    this.log(`elected, term ${lease.term}: starting ${[command, ...commandArguments].join(' ')}`);
    const started = spawn(process.execPath, [join(__dirname, 'command-guard.js'), command, ...commandArguments], {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe', endpoint ?? 'ignore'],
      detached: true,
      env: {
        ...process.env,
        OBSERVE_LEADERSHIP_SLOT: String(lease.slot),
        OBSERVE_LEADERSHIP_HOLDER: lease.holder,
        OBSERVE_LEADERSHIP_TERM: String(lease.term),
      },
    });
    this.child = started;
    this.exited = new Promise<number>((exited) => {
      started.once('error', (error) => {
        this.log(`cannot run ${command}: ${error.message}`);
        exited(127);
      });
      started.once('exit', (code, signal) => exited(code ?? 128 + (signal ? constants.signals[signal] : 0)));
    }).then((code) => {
      if (this.child === started) this.child = undefined;
      onExit(code);
      return code;
    });
  }

  /** Stops the command, if it runs: SIGTERM (the guard passes it on), then SIGKILL after the grace period; resolves with its exit code. */
  async stop(): Promise<number> {
    const running = this.child;
    if (running === undefined) return this.exited;
    this.child = undefined;
    running.kill('SIGTERM');
    const killer = setTimeout(() => {
      this.log(`${this.command} still runs ${this.grace} ms after SIGTERM: SIGKILL`);
      running.stdio[3]?.destroy(); // the lifeline: the guard kills the command's group
    }, this.grace);
    const code = await this.exited;
    clearTimeout(killer);
    return code;
  }
}

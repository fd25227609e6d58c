/**
 * The process between `observe-leadership run` and its command, so that the command never
 * outlives its runner: `node command-guard.js <command> [arguments...]`.
 *
 * It runs the command in a process group of its own, and holds two descriptors from the
 * runner:
 * - fd 3, the lifeline: a socket whose other end only the runner holds. The kernel closes
 *   it when the runner dies, however it dies (SIGKILL, the OOM killer); the guard then sends
 *   SIGKILL to the command's whole group, and exits once the command has. The runner closes
 *   it too, to kill the command when it outstays its grace period.
 * - fd 4, the listening socket of the runner's tenure endpoint (when it has one). Followers
 *   take over early only once nobody listens there any more: once the runner is gone, and
 *   the guard, which ends only after its command. A killed runner's command cannot run
 *   beside the next leader's.
 *
 * SIGTERM, SIGINT and SIGHUP are passed on to the command's group. It exits with the
 * command's code (128 + the signal's number for a signal), after sending SIGKILL to whatever
 * the command left behind in its group.
 */
import { spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { constants } from 'node:os';

const lifelineDescriptor = 3;

function guard([command, ...commandArguments]: string[]): void {
  if (command === undefined) {
    process.stderr.write('observe-leadership command-guard: which command?\n');
    return void (process.exitCode = 2);
  }
  const child = spawn(command, commandArguments, { stdio: 'inherit', detached: true });
  const signalCommand = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // Gone already.
    }
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => signalCommand(signal));
  child.once('error', (error) => {
    process.stderr.write(`observe-leadership: cannot run ${command}: ${error.message}\n`);
    process.exit(127);
  });
  child.once('exit', (code, signal) => {
    signalCommand('SIGKILL');
    process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0));
  });

  const lifeline = new Socket({ fd: lifelineDescriptor, readable: true, writable: false });
  lifeline.on('error', () => undefined);
  lifeline.once('close', () => signalCommand('SIGKILL'));
  lifeline.resume();
  lifeline.unref(); // the guard lives as long as its command, no longer
}

guard(process.argv.slice(2));

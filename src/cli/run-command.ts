import { ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import { join } from 'node:path';
import { Observable, Subscription } from 'rxjs';
import { MAX_DELAY } from '../core/argument-check';
import { ElectedEvent } from '../core/leadership-event';
import { observeLeadership } from '../surface/observe-leadership';
import { CliError, exitCode, integerOption, parseArguments } from './cli-arguments';
import { openCliDatabase } from './cli-database';

/**
 * `run <db> [--slot N] [--renew-every MS] [--expires-after MS] [--retry-every MS]
 * [--grace MS] -- <command...>`: campaigns, and runs the command only while this process
 * leads. On `lost` it stops the command (SIGTERM, then SIGKILL after the grace period) and
 * campaigns again; when `stop` emits (SIGINT, SIGTERM) it stops the command, then releases.
 * It ends with the command's exit code: when the command exits by itself while leading
 * (the lease is released), or when asked to stop.
 *
 * The command runs under a guard (see command-guard.ts), in a process group of its own:
 * the stop signals reach the command's children too, and a runner killed outright takes its
 * command with it before any follower can take over.
 */
export async function runCommand(argv: readonly string[], log: (line: string) => void, stop: Observable<unknown>): Promise<number> {
  const parsed = parseArguments(argv, ['slot', 'renew-every', 'expires-after', 'retry-every', 'grace', 'schema', 'table'], []);
  const [command, ...commandArguments] = parsed.rest;
  if (command === undefined) throw new CliError(exitCode.usage, 'which command? Give it after --, as in: run jobs.db -- ./nightly.sh');
  const slot = integerOption(parsed, 'slot', 0, 0, Number.MAX_SAFE_INTEGER) as number;
  const grace = integerOption(parsed, 'grace', 10_000, 0, MAX_DELAY) as number;
  const config = {
    slot,
    renewEvery: integerOption(parsed, 'renew-every', undefined, 1, MAX_DELAY),
    expiresAfter: integerOption(parsed, 'expires-after', undefined, 2, MAX_DELAY),
    retryEvery: integerOption(parsed, 'retry-every', undefined, 1, MAX_DELAY),
  };
  const db = await openCliDatabase(parsed, { readonly: false });
  let events: ReturnType<typeof observeLeadership>;
  try {
    events = observeLeadership(db.source, Object.fromEntries(Object.entries(config).filter(([, value]) => value !== undefined)));
  } catch (error) {
    await db.close();
    throw new CliError(exitCode.usage, (error as Error).message); // renewEvery not below expiresAfter, say
  }

  return new Promise((resolve) => {
    let child: ChildProcess | undefined;
    let childExited: Promise<number> = Promise.resolve(exitCode.ok);
    let leading: ElectedEvent | undefined;
    let finishing = false;
    let subscription: Subscription | undefined;
    let stopping: Subscription | undefined;

    const start = (lease: ElectedEvent) => {
      log(`elected, term ${lease.term}: starting ${[command, ...commandArguments].join(' ')}`);
      const endpoint = db.endpointDescriptor(lease);
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
      child = started;
      childExited = new Promise<number>((exited) => {
        started.once('error', (error) => {
          log(`cannot run ${command}: ${error.message}`);
          exited(127);
        });
        started.once('exit', (code, signal) => exited(code ?? 128 + (signal ? constants.signals[signal] : 0)));
      }).then((code) => {
        if (child === started) child = undefined;
        // By itself, while leading: the work is done (or failed); so is this process.
        if (!finishing && leading?.term === lease.term) {
          log(`${command} exited with code ${code}: releasing`);
          void finish(code);
        }
        return code;
      });
    };

    const stopChild = async (): Promise<number> => {
      const running = child;
      if (running === undefined) return childExited;
      child = undefined;
      running.kill('SIGTERM'); // the guard passes it on
      const killer = setTimeout(() => {
        log(`${command} still runs ${grace} ms after SIGTERM: SIGKILL`);
        running.stdio[3]?.destroy(); // the lifeline: the guard kills the command's group
      }, grace);
      const code = await childExited;
      clearTimeout(killer);
      return code;
    };

    const finish = async (code?: number) => {
      if (finishing) return;
      finishing = true;
      await Promise.resolve(); // the subscriptions are assigned by then, even if this came from subscribe
      stopping?.unsubscribe();
      const childCode = await stopChild();
      subscription?.unsubscribe(); // releases the lease, if held
      await db.close(); // once the release is done
      resolve(code ?? childCode);
    };

    log(`campaigning for slot ${slot} of ${db.name}`);
    subscription = events.subscribe({
      next: (event) => {
        switch (event.type) {
          case 'elected':
            leading = event;
            // A command stopped after an earlier tenure may still be exiting: start after it.
            void childExited.then(() => {
              if (!finishing && leading === event) start(event);
            });
            break;
          case 'lost':
            leading = undefined;
            log(`lost the lease (${event.reason}), term ${event.term}: stopping ${command}`);
            void stopChild();
            break;
          case 'error':
            log(`database error, still campaigning: ${event.error.message}`);
            break;
          default:
            break;
        }
      },
      error: (error: Error) => {
        log(`stopped campaigning: ${error.message}`);
        leading = undefined;
        void finish(exitCode.failed);
      },
    });
    stopping = stop.subscribe(() => {
      log(leading ? `stopping ${command}, then releasing` : 'stopping');
      void finish();
    });
  });
}

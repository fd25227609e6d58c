import { Observable, Subscription } from 'rxjs';
import { ulid } from 'ulid';
import { MAX_DELAY } from '../core/argument-check';
import { ElectedEvent, LeadershipEvent } from '../core/leadership-event';
import { observeLeadership } from '../surface/observe-leadership';
import { errorText } from '../core/error-text';
import { CliError, exitCode, integerOption, parseArguments } from './cli-arguments';
import { CliDatabase, openCliDatabase } from './cli-database';
import { SupervisedCommand } from './supervised-command';

/**
 * `run <db> [--slot N] [--holder H] [--renew-every MS] [--expires-after MS] [--retry-every MS]
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
  const options = readRunOptions(argv);
  const { db, events } = await campaignOn(options);
  const command = new SupervisedCommand(options.command, options.commandArguments, options.grace, log);
  log(`campaigning for slot ${options.slot} of ${db.name} as ${options.holder}`);
  return superviseWhileLeading(events, command, db, log, stop);
}

/** What `run` was asked, checked: the command and its arguments, the slot, the grace period, the timing. */
function readRunOptions(argv: readonly string[]) {
  const parsed = parseArguments(argv, ['slot', 'holder', 'renew-every', 'expires-after', 'retry-every', 'grace', 'schema', 'table'], []);
  const [command, ...commandArguments] = parsed.rest;
  if (command === undefined) throw new CliError(exitCode.usage, 'which command? Give it after --, as in: run jobs.db -- ./nightly.sh');
  const timing = {
    renewEvery: integerOption(parsed, 'renew-every', undefined, 1, MAX_DELAY),
    expiresAfter: integerOption(parsed, 'expires-after', undefined, 2, MAX_DELAY),
    retryEvery: integerOption(parsed, 'retry-every', undefined, 1, MAX_DELAY),
  };
  return {
    parsed,
    command,
    commandArguments,
    slot: integerOption(parsed, 'slot', 0, 0, Number.MAX_SAFE_INTEGER) as number,
    // Said at the start, for `handoff --to`: the library's default, made here so that it can be.
    holder: (parsed.options.get('holder') as string | undefined) ?? ulid(),
    grace: integerOption(parsed, 'grace', 10_000, 0, MAX_DELAY) as number,
    // Left out where not given: the library's defaults, and its checks of how they relate.
    timing: Object.fromEntries(Object.entries(timing).filter(([, value]) => value !== undefined)),
  };
}

/** Opens the database and makes the campaign; a config the library refuses is a usage error (renewEvery not below expiresAfter, say). */
async function campaignOn({ parsed, slot, holder, timing }: ReturnType<typeof readRunOptions>) {
  const db = await openCliDatabase(parsed, { readonly: false });
  try {
    return { db, events: observeLeadership(db.source, { slot, holder, ...timing }) };
  } catch (error) {
    await db.close();
    throw new CliError(exitCode.usage, inFlagWords((error as Error).message));
  }
}

const flagOf: Readonly<Record<string, string>> = {
  renewEvery: '--renew-every',
  expiresAfter: '--expires-after',
  retryEvery: '--retry-every',
  holder: '--holder',
  slot: '--slot',
};

/**
 * A message of the library's config check in the words of this command line: the flags the
 * user typed, not the API's fields. "Expected `renewEvery` to be less than `expiresAfter`
 * (3000), got `5000` (number)" becomes "--renew-every must be less than --expires-after
 * (3000), got 5000".
 */
function inFlagWords(message: string): string {
  const named = message.replace(/`(\w+)`/g, (field: string, name: string) => flagOf[name] ?? field);
  const check = /^Expected (--[\w-]+) to be (.*), got `(.*)` \(\w+(?:, (.*))?\)$/.exec(named);
  if (check === null) return named;
  const [, flag, expected, value, note] = check;
  return `${flag} must be ${expected}, got ${value}${note === undefined ? '' : ` (${note})`}`;
}

/**
 * Runs the command during each tenure: started at `elected` (once the command of an earlier
 * tenure has exited), stopped at `lost`. Ends, with the exit code, when the command exits by
 * itself while leading, when the campaign fails, or when `stop` emits: the command is stopped
 * first, then the lease released, then the database closed.
 */
function superviseWhileLeading(
  events: Observable<LeadershipEvent>,
  command: SupervisedCommand,
  db: CliDatabase,
  log: (line: string) => void,
  stop: Observable<unknown>,
): Promise<number> {
  const { name } = command;
  return new Promise((resolve) => {
    let leading: ElectedEvent | undefined;
    let finishing = false;
    let subscription: Subscription | undefined;
    let stopping: Subscription | undefined;

    const finish = async (code?: number) => {
      if (finishing) return;
      finishing = true;
      await Promise.resolve(); // the subscriptions are assigned by then, even if this came from subscribe
      stopping?.unsubscribe();
      const commandCode = await command.stop();
      subscription?.unsubscribe(); // releases the lease, if held
      await db.close(); // once the release is done
      resolve(code ?? commandCode);
    };
    const start = (lease: ElectedEvent) =>
      command.start(lease, db.endpointDescriptor(lease), (code) => {
        // By itself, while leading: the work is done (or failed); so is this process.
        if (finishing || leading?.term !== lease.term) return;
        log(`${name} exited with code ${code}: releasing`);
        void finish(code);
      });

    subscription = events.subscribe({
      next: (event) => {
        if (event.type === 'elected') {
          leading = event;
          // A command stopped after an earlier tenure may still be exiting: start after it.
          void command.whenExited().then(() => {
            if (!finishing && leading === event) start(event);
          });
        } else if (event.type === 'lost') {
          leading = undefined;
          log(`lost the lease (${event.reason}), term ${event.term}: stopping ${name}`);
          void command.stop();
        } else if (event.type === 'error') {
          log(`database error, still campaigning: ${errorText(event.error)}`);
        }
      },
      error: (error: Error) => {
        log(`stopped campaigning: ${errorText(error)}`);
        leading = undefined;
        void finish(exitCode.failed);
      },
    });
    stopping = stop.subscribe(() => {
      log(leading ? `stopping ${name}, then releasing` : 'stopping');
      void finish();
    });
  });
}

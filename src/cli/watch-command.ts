import { Observable } from 'rxjs';
import { MAX_DELAY } from '../core/argument-check';
import type { LeaderState } from '../surface/leader-state';
import { observeLeader } from '../surface/observe-leader';
import { errorText } from '../core/error-text';
import { exitCode, integerOption, parseArguments } from './cli-arguments';
import { openCliDatabase } from './cli-database';
import { prometheusText } from './prometheus-text';
import { timeOfDay } from './time-text';

/**
 * `watch <db> [--slot N] [--prometheus]`: a line each time the slot changes hands, is
 * renewed, or runs out, until `stop` emits (Ctrl-C). Plain lines, so that it reads the same
 * piped to a file; with `--prometheus`, the state in Prometheus text format at each change.
 */
export async function watchCommand(argv: readonly string[], print: (line: string) => void, stop: Observable<unknown>): Promise<number> {
  const parsed = parseArguments(argv, ['slot', 'poll-every', 'schema', 'table'], ['prometheus']);
  const prometheus = parsed.options.has('prometheus');
  const slot = integerOption(parsed, 'slot', 0, 0, Number.MAX_SAFE_INTEGER) as number;
  const pollEvery = integerOption(parsed, 'poll-every', 1_000, 1, MAX_DELAY) as number;
  const db = await openCliDatabase(parsed, { readonly: true });
  if (!prometheus && !(await db.hasLeaseTable())) print(`(no candidate has campaigned on ${db.name} yet: waiting)`);
  return new Promise((resolve) => {
    let previous: LeaderState | undefined;
    const subscription = observeLeader(db.source, { slot, pollEvery }).subscribe({
      next: (state) => {
        if (prometheus) {
          // A whole exposition at each change, then a blank line. The lease's time left is
          // left out: on PostgreSQL only the server's clock can say it.
          const live = state.holder !== null;
          print(prometheusText({ ...state, expiresIn: null, live }));
        } else {
          print(`${timeOfDay(Date.now())}  slot ${slot}  ${describeChange(previous, state)}`);
        }
        previous = state;
      },
      error: (error: Error) => {
        print(`stopped: ${errorText(error)}`);
        finish(exitCode.failed);
      },
    });
    const stopping = stop.subscribe(() => finish(exitCode.ok));
    function finish(code: number) {
      subscription.unsubscribe();
      stopping.unsubscribe();
      void db.close().then(
        () => resolve(code),
        () => resolve(code),
      );
    }
  });
}

function describeChange(previous: LeaderState | undefined, { holder, term, expiresAt, advertised }: LeaderState): string {
  if (holder === null) return previous?.holder ? `nobody leads (${previous.holder} released or its lease ran out)` : 'nobody leads';
  const until = `lease until ${timeOfDay(expiresAt as number)}`;
  const reach = advertised === null ? '' : `, reach at ${advertised}`;
  if (previous?.holder === holder && previous.term === term) {
    return previous.advertised === advertised
      ? `${holder} renewed, term ${term}, ${until}`
      : `${holder} renewed, term ${term}, ${until}${reach || ', advertises nothing'}`;
  }
  return `${holder} leads, term ${term}, ${until}${reach}`;
}

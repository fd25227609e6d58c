import { distinctUntilChanged, map, Observable, shareReplay, switchMap } from 'rxjs';
import { MAX_DELAY } from '../core/argument-check';
import type { LeaderState } from '../surface/leader-state';
import { observeLeader } from '../surface/observe-leader';
import { errorText } from '../core/error-text';
import { exitCode, integerOption, parseArguments } from './cli-arguments';
import { CliDatabase, openCliDatabase } from './cli-database';
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
    const leaders = observeLeader(db.source, { slot, pollEvery }).pipe(shareReplay({ bufferSize: 1, refCount: true }));
    const subscription = leaders.subscribe({
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
    // Who stands by, after each change of hands: the names `handoff --to` takes.
    if (!prometheus)
      subscription.add(standbyLines(leaders, db, slot).subscribe((line) => print(`${timeOfDay(Date.now())}  slot ${slot}  ${line}`)));
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

/** How long `watch` waits for candidates to answer a roll call: their messages take ms. */
const rollCallWithin = 250;

/**
 * A line `standing by: a, b` at the start and after each change of hands, when the
 * candidates that answer a roll call differ from those last said.
 */
function standbyLines(leaders: Observable<LeaderState>, db: CliDatabase, slot: number): Observable<string> {
  return leaders.pipe(
    distinctUntilChanged((before, now) => before.holder === now.holder && before.term === now.term),
    switchMap(() => db.present(slot, rollCallWithin)),
    map((present) => present.sort().join(', ')),
    distinctUntilChanged(),
    map((names) => `standing by: ${names || '(no candidate answered)'}`),
  );
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

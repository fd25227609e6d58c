import { CliError, exitCode, integerOption, parseArguments } from './cli-arguments';
import { prometheusText } from './prometheus-text';
import type { SlotStatus } from './slot-status';
import { noTableError, openCliDatabase } from './cli-database';
import { describeDuration } from './time-text';
import type { LeaseView } from '../store/lease-store';
import { stands } from '../store/lease-check';

/**
 * `status <db> [--slot N] [--json | --prometheus]`: who holds the slot, for which term,
 * until when. On PostgreSQL, the time left is the server's to say.
 */
export async function statusCommand(argv: readonly string[], print: (line: string) => void): Promise<number> {
  const parsed = parseArguments(argv, ['slot', 'schema', 'table'], ['json', 'prometheus']);
  if (parsed.options.has('json') && parsed.options.has('prometheus'))
    throw new CliError(exitCode.usage, '--json or --prometheus, not both');
  const slot = integerOption(parsed, 'slot', 0, 0, Number.MAX_SAFE_INTEGER) as number;
  const db = await openCliDatabase(parsed, { readonly: true });
  try {
    if (!(await db.hasLeaseTable())) throw noTableError(db);
    const view = await db.look(slot);
    // A roll call for people, who copy a name from it; a textfile collector needs none.
    const standingBy = parsed.options.has('prometheus') ? undefined : (await db.present(slot, rollCallWithin)).sort();
    const found: SlotStatus = view
      ? {
          slot,
          ...view.lease,
          advertised: view.lease.advertised ?? null,
          // Whole ms, as the lease's end is stored: what is below comes from the reading, not the lease.
          expiresIn: Math.round(view.expiresIn),
          live: liveness(view),
          ...(view.observeFor !== undefined && { length: view.observeFor }),
        }
      : { slot, holder: null, term: null, expiresAt: null, expiresIn: null, live: false, advertised: null };
    const status: SlotStatus = standingBy === undefined ? found : { ...found, standingBy };
    if (parsed.options.has('json')) {
      print(JSON.stringify(status));
    } else if (parsed.options.has('prometheus')) {
      print(prometheusText(status).trimEnd());
    } else {
      for (const line of statusLines(status)) print(line);
    }
    return exitCode.ok;
  } finally {
    await db.close();
  }
}

/** How long `status` waits for candidates to answer its roll call: their messages take ms. */
const rollCallWithin = 250;

/** Whether the lease of `view` stands, as far as one look can tell (see `SlotStatus.live`). */
function liveness({ expiresIn, observeFor }: LeaseView): boolean | null {
  if (observeFor === undefined) return stands(expiresIn); // a clock that cannot jump said it
  return stands(expiresIn) && expiresIn <= observeFor ? true : null;
}

function statusLines({ slot, holder, term, expiresAt, expiresIn, live, length, advertised, standingBy = [] }: SlotStatus): string[] {
  const standby = `standby  ${standingBy.length > 0 ? standingBy.join(', ') : '(no candidate answered)'}`;
  if (holder === null || expiresAt === null || expiresIn === null) {
    return [`slot     ${slot}`, 'holder   (none: the slot is free)', 'live     no', standby];
  }
  const when = stands(expiresIn) ? `in ${describeDuration(expiresIn)}` : `${describeDuration(-expiresIn)} ago`;
  return [
    `slot     ${slot}`,
    `holder   ${holder}`,
    `term     ${term}`,
    `expires  ${when} (${new Date(expiresAt).toISOString()})`,
    ...(advertised === null ? [] : [`reach    ${advertised}`]),
    `live     ${
      live === null
        ? `unknown: the server's clock may have stepped; candidates take the lease once they watched it unchanged for ${describeDuration(length ?? 0)}`
        : live
          ? 'yes'
          : 'no: the lease has expired, any candidate may take the slot'
    }`,
    standby,
  ];
}

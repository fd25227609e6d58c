import { MAX_DELAY } from '../core/argument-check';
import { LeadershipError } from '../core/leadership-error';
import { handOff } from '../surface/hand-off';
import { CliError, exitCode, integerOption, parseArguments } from './cli-arguments';
import { noTableError, openCliDatabase } from './cli-database';

/**
 * `handoff <db> [--slot N] [--to HOLDER] [--within MS]`: asks the leader to hand its tenure
 * to the standing candidate HOLDER (to anybody, without `--to`), and says who leads next.
 * Asks on a read-only connection: the request is a message to the candidates, never a write.
 */
export async function handoffCommand(argv: readonly string[], print: (line: string) => void): Promise<number> {
  const parsed = parseArguments(argv, ['slot', 'to', 'within', 'schema', 'table'], []);
  const slot = integerOption(parsed, 'slot', 0, 0, Number.MAX_SAFE_INTEGER) as number;
  const within = integerOption(parsed, 'within', 10_000, 1, MAX_DELAY) as number;
  const to = parsed.options.get('to') as string | undefined;
  if (to === '') throw new CliError(exitCode.usage, '--to needs the holder of a standing candidate');
  const db = await openCliDatabase(parsed, { readonly: true });
  try {
    if (!(await db.hasLeaseTable())) throw noTableError(db);
    const askedAt = performance.now();
    const { from, to: next } = await handOff(db.source, { slot, within, ...(to !== undefined && { to }) }).catch((error: unknown) => {
      throw error instanceof LeadershipError ? new CliError(exitCode.failed, `${error.code}: ${error.message}`) : error;
    });
    const ms = Math.round(performance.now() - askedAt);
    print(
      next.term === from.term
        ? `slot ${slot}: ${from.holder} leads already (term ${from.term}); nothing to hand off`
        : `slot ${slot}: ${from.holder} (term ${from.term}) handed over to ${next.holder} (term ${next.term}) in ${ms} ms`,
    );
    return exitCode.ok;
  } finally {
    await db.close();
  }
}

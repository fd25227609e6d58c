import { sqliteLeaseStore } from '../store/sqlite/sqlite-lease-store';
import { exitCode, integerOption, parseArguments } from './cli-arguments';
import { hasLeaseTable, noTableError, openDatabase } from './open-database';
import { describeDuration } from './time-text';

/** What `status` tells of a slot: the row as stored, and whether its lease stands now. */
export interface SlotStatus {
  readonly slot: number;
  readonly holder: string | null;
  readonly term: number | null;
  readonly expiresAt: number | null;
  /** Ms until the lease expires; negative once it has. */
  readonly expiresIn: number | null;
  readonly live: boolean;
}

/** `status <db> [--slot N] [--json]`: who holds the slot, for which term, until when. */
export function statusCommand(argv: readonly string[], print: (line: string) => void): number {
  const parsed = parseArguments(argv, ['slot'], ['json']);
  const [file] = parsed.positional;
  const slot = integerOption(parsed, 'slot', 0, 0, Number.MAX_SAFE_INTEGER) as number;
  const db = openDatabase(file, { readonly: true });
  try {
    if (!hasLeaseTable(db)) throw noTableError(file);
    const row = sqliteLeaseStore(db).read(slot);
    const now = Date.now();
    const status: SlotStatus = row
      ? { slot, holder: row.holder, term: row.term, expiresAt: row.expiresAt, expiresIn: row.expiresAt - now, live: row.expiresAt >= now }
      : { slot, holder: null, term: null, expiresAt: null, expiresIn: null, live: false };
    if (parsed.options.has('json')) {
      print(JSON.stringify(status));
    } else {
      for (const line of statusLines(status)) print(line);
    }
    return exitCode.ok;
  } finally {
    db.close();
  }
}

function statusLines({ slot, holder, term, expiresAt, expiresIn, live }: SlotStatus): string[] {
  if (holder === null || expiresAt === null || expiresIn === null) {
    return [`slot     ${slot}`, 'holder   (none: the slot is free)', 'live     no'];
  }
  const when = expiresIn >= 0 ? `in ${describeDuration(expiresIn)}` : `${describeDuration(-expiresIn)} ago`;
  return [
    `slot     ${slot}`,
    `holder   ${holder}`,
    `term     ${term}`,
    `expires  ${when} (${new Date(expiresAt).toISOString()})`,
    `live     ${live ? 'yes' : 'no: the lease has expired, any candidate may take the slot'}`,
  ];
}

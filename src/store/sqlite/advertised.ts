import type { Database } from 'better-sqlite3';
import type { Lease } from '../../core/leadership-event';
import { perConnection, SqliteTable } from './sqlite-capability';

/**
 * What each tenure's holder advertises to followers (the `advertise` option). Like a deadline,
 * it counts only for the tenure it names: a tenure the original worker's statements start
 * advertises nothing. Read with the lease (`readText` joins it).
 */
export const advertisedTable: SqliteTable = {
  name: 'worker_leadership_advertised',
  create: `CREATE TABLE IF NOT EXISTS worker_leadership_advertised (
    slot INTEGER PRIMARY KEY,
    holder TEXT NOT NULL,
    term INTEGER NOT NULL,
    value TEXT NOT NULL
  )`,
  columns: { slot: 'INTEGER', holder: 'TEXT', term: 'INTEGER', value: 'TEXT' },
  key: ['slot'],
};

/** On a connection, what writes what the holder of `tenure` advertises (`undefined`: nothing), with each take and renewal. */
export const advertiseOn = perConnection((db: Database) => {
  const write = db.prepare<[Lease & { value: string }]>(`INSERT INTO worker_leadership_advertised (slot, holder, term, value)
    VALUES (@slot, @holder, @term, @value)
    ON CONFLICT (slot) DO UPDATE SET holder = excluded.holder, term = excluded.term, value = excluded.value`);
  const clear = db.prepare<[{ slot: number }]>(`DELETE FROM worker_leadership_advertised WHERE slot = @slot`);
  return (tenure: Lease, advertised: string | undefined): void =>
    void (advertised === undefined ? clear.run(tenure) : write.run({ ...tenure, value: advertised }));
});

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Scenario } from '../../sim/scenario';

/**
 * The runs the simulator found a violation in (spec/sim/corpus), shrunk and kept with what
 * it found and what fixed it: those of one store, SQLite's (`undefined`) or PostgreSQL's.
 */
export function simCorpus(store: Scenario['store']): { file: string; scenario: Scenario }[] {
  const folder = join(__dirname, '..', 'sim', 'corpus');
  return readdirSync(folder)
    .filter((file) => file.endsWith('.json'))
    .map((file) => ({ file, scenario: JSON.parse(readFileSync(join(folder, file), 'utf8')) as Scenario }))
    .filter(({ scenario }) => scenario.store === store);
}

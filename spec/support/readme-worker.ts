import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

/**
 * README's worker as README shows it (TypeScript, on better-sqlite3), and the lines README
 * gives to put in place of its first ones for node:sqlite.
 */
export function readmeWorker(): { worker: string; nodeSqliteLines: string } {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A worker that dispatches jobs only while it leads'));
  const worker = /```ts\n([\s\S]*?)\n```/.exec(section)?.[1];
  const nodeSqliteLines = /```ts partial\n(import \{ DatabaseSync \} from 'node:sqlite';[\s\S]*?)\n```/.exec(section)?.[1];
  if (worker === undefined || nodeSqliteLines === undefined)
    throw new Error("README's worker or its node:sqlite lines are not where they were");
  return { worker, nodeSqliteLines };
}

// Every documented bad-input case of docs/bad-input.md ("A connection that cannot serve"),
// run on one SQLite driver, through the built package as a user gets it: prints one JSON
// object, `{ "<situation>": { "<entry point>": "<outcome>" } }`, in the words of the table.
//   node spec/support/bad-input-cases.js DRIVER FOLDER      (bun for bun:sqlite)
// Plain JavaScript, so that Node.js 20, Node.js 24 and Bun all run it as it is
// (spec/bad-input-matrix.processes.spec.ts runs it on each driver's runtime).
// @ts-check
'use strict';
const { spawnSync } = require('node:child_process');
const { chmodSync, copyFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { firstValueFrom, lastValueFrom, filter, take } = require('rxjs');
const { fenced, holdsLease, observeLeader, observeLeadership } = require('observe-leadership');

const [driver, folder] = process.argv.slice(2);
const cli = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const quick = { renewEvery: 50, expiresAfter: 1_000, retryEvery: 50 };

/**
 * A connection of the driver under test.
 *
 * @param {string} file
 * @param {{ readonly?: boolean }} [options]
 * @returns {any}
 */
function open(file, { readonly = false } = {}) {
  if (driver === 'better-sqlite3') return new (require('better-sqlite3'))(file, { readonly });
  if (driver === 'node:sqlite') return new (process.getBuiltinModule('node:sqlite').DatabaseSync)(file, { readOnly: readonly });
  return new (require(/** @type {any} */ ('bun:sqlite')).Database)(file, readonly ? { readonly: true } : { create: true });
}

/** @param {unknown} error */
const codeOf = (error) => /** @type {{ code?: string }} */ (error).code ?? `${/** @type {Error} */ (error).name}: ${String(error)}`;

/**
 * How an Observable ended: `ends with CODE`, or `emits TYPE` for its first value.
 *
 * @param {import('rxjs').Observable<any>} events
 */
async function firstOutcome(events) {
  try {
    const first = await firstValueFrom(events);
    return first.type === 'error' ? `emits \`error\` ${first.error.code}` : first.type ? `emits \`${first.type}\`` : 'emits states';
  } catch (error) {
    return `ends with \`${codeOf(error)}\``;
  }
}

/** @param {() => unknown} call */
function thrown(call) {
  try {
    call();
    return 'commits';
  } catch (error) {
    return `throws \`${codeOf(error)}\``;
  }
}

/**
 * The command line's exit code, and the code it names if it names one.
 *
 * @param {string[]} args
 * @param {string[]} [as] what runs it (setpriv, to run it without a power of root's)
 */
function command(args, as = []) {
  const [program, ...rest] = [...as, process.execPath, cli, ...args];
  const run = spawnSync(program, rest, { encoding: 'utf8', timeout: 30_000 });
  const code = /\b([A-Z]+_[A-Z_]+):/.exec(run.stderr)?.[1];
  return `exit ${run.status}${code ? ` (${code})` : ''}`;
}

const someLease = { slot: 0, holder: 'nobody-here', term: 1 };

async function main() {
  const file = join(folder, `${driver.replace(':', '-')}.db`);
  const made = open(file);
  // The lease tables, made by a candidate that leads, then leaves.
  await firstValueFrom(observeLeadership(made, quick).pipe(filter((event) => event.type === 'elected')));
  made.close();
  const text = join(folder, 'not-a-database.txt');
  writeFileSync(text, 'not a database, and long enough to be read as one '.repeat(20));

  /** @type {Record<string, Record<string, string>>} */
  const outcomes = {};

  const closedBefore = () => {
    const db = open(file);
    db.close();
    return db;
  };
  outcomes['closed before the call'] = {
    observeLeadership: await firstOutcome(observeLeadership(closedBefore(), quick)),
    observeLeader: await firstOutcome(observeLeader(closedBefore(), { pollEvery: 50 })),
    fenced: thrown(() => fenced(closedBefore(), someLease, () => undefined)),
  };

  // A leader whose connection is closed under it: its stream, then what holdsLease says of its tenure.
  const leading = open(file);
  /** @type {(event: any) => void} */
  let onElected = () => undefined;
  const elected = new Promise((resolve) => (onElected = resolve));
  const ended = new Promise((resolve) =>
    observeLeadership(leading, quick).subscribe({
      next: (event) => event.type === 'elected' && onElected(event),
      error: (error) => resolve(`ends with \`${codeOf(error)}\``),
      complete: () => resolve('completes'),
    }),
  );
  const lease = await elected;
  const fencedInside = thrown(() => fenced(leading, lease, () => leading.close()));
  const watched = open(file);
  const watching = lastValueFrom(observeLeader(watched, { pollEvery: 50 })).then(
    () => 'completes',
    (error) => `ends with \`${codeOf(error)}\``,
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  watched.close();
  outcomes['closed while running'] = {
    observeLeadership: await ended,
    observeLeader: await watching,
    fenced: fencedInside,
    holdsLease: `\`${holdsLease(lease)}\``,
  };

  const reader = open(file, { readonly: true });
  // The command line opens its own connection: to a file its user may read, not write (root
  // may write any file: the command runs without that power there).
  const readOnlyFile = join(folder, 'read-only.db');
  copyFileSync(file, readOnlyFile);
  chmodSync(readOnlyFile, 0o444);
  const asReader = process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-dac_override,-dac_read_search'] : [];
  outcomes['read-only connection'] = {
    observeLeadership: await firstOutcome(observeLeadership(reader, quick)),
    observeLeader: await firstOutcome(observeLeader(reader).pipe(take(1))),
    fenced: thrown(() => fenced(reader, someLease, () => undefined)),
    'the command line': `run ${command(['run', readOnlyFile, '--', 'true'], asReader)}, status ${command(['status', readOnlyFile], asReader)}`,
  };
  reader.close();

  const notDatabase = () => open(text);
  outcomes['not a database'] = {
    observeLeadership: await firstOutcome(observeLeadership(notDatabase(), quick)),
    observeLeader: await firstOutcome(observeLeader(notDatabase())),
    fenced: thrown(() => fenced(notDatabase(), someLease, () => undefined)),
    'the command line': ['status', 'watch', 'run']
      .map((name) => `${name} ${command(name === 'run' ? [name, text, '--', 'true'] : [name, text])}`)
      .join(', '),
  };
  process.stdout.write(`${JSON.stringify(outcomes)}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

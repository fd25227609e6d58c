// Graceful shutdown: on SIGTERM (a deploy) or Ctrl-C, start no new job, let the job in
// flight finish, then release the lease: the next leader starts at once, and no job is cut
// in half. A second Ctrl-C cuts the job at once, and so would a job still running after 10 s.
// Run two on one file, and stop the leader during a job:
//   node examples/graceful-shutdown.js /tmp/jobs.db
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { openSqlite } = require('observe-leadership/examples/support/open-sqlite');
const { exhaustMap, fromEvent, interval, merge, tap, timer } = require('rxjs');
const { fenced, observeLeadership, whileLeader } = require('observe-leadership');

const file = process.argv[2] ?? 'jobs.db';
const db = openSqlite(file);
db.exec('CREATE TABLE IF NOT EXISTS job_results (job TEXT PRIMARY KEY, term INTEGER NOT NULL)');
const recordResult = db.prepare('INSERT INTO job_results (job, term) VALUES (?, ?)');
/** @param {string} line */
const log = (line) => console.log(`${new Date().toISOString().slice(11, 23)}  ${line}`);

const holder = `graceful-shutdown-${process.pid}`;
let jobs = 0;
/** @type {string | undefined} the job in flight, for the log */
let inFlight;

/**
 * A job: a second of work, then its result written in the same transaction that checks the
 * lease (`fenced`), then a message out, which `fenced` cannot cover: a drain lets the job
 * finish before the lease is released, so the message never goes out from a process that
 * no longer leads.
 *
 * @param {import('observe-leadership').ElectedEvent} lease
 * @param {AbortSignal} signal aborted if the job is cut
 */
function job(lease, signal) {
  const name = `job ${++jobs}`;
  inFlight = name;
  log(`started ${name} (term ${lease.term})`);
  signal.addEventListener('abort', () => log(`cut ${name}`));
  return timer(1_000).pipe(
    tap(() => {
      fenced(db, lease, () => recordResult.run(`${holder} ${name}`, lease.term));
      log(`finished ${name}: result recorded, message sent`);
      inFlight = undefined;
    }),
  );
}

let signals = 0;
const shutdown = merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')).pipe(
  tap(() => {
    if (++signals > 1) log(`stopping now${inFlight ? `: cutting ${inFlight}` : ''}`);
    else log(inFlight ? `stopping: no new job; waiting for ${inFlight} (Ctrl-C again to cut it)` : 'stopping');
  }),
);

let leading = false;
log(`${holder} campaigning on ${file}`);
observeLeadership(db, { holder, renewEvery: 1_000, expiresAfter: 3_000 })
  .pipe(
    tap((event) => {
      if (event.type === 'elected') log(`elected, term ${event.term}`);
      if (event.type === 'lost') log(`lost term ${event.term} (${event.reason}); standing by`);
      if (event.type !== 'error') leading = event.type !== 'lost';
    }),
    // A job every 100 ms at most, one at a time; the drain waits for the one in flight.
    whileLeader((lease, start) => interval(100).pipe(exhaustMap(() => start((signal) => job(lease, signal)))), {
      drainOn: shutdown,
      drainFor: 10_000,
    }),
  )
  .subscribe({
    complete: () => {
      // The drain ended the subscription, which released the lease first.
      db.close();
      log(`${leading ? 'released' : 'stopped'}, exiting`);
    },
    error: (error) => {
      log(`stopped: ${error.code ?? error.name}: ${error.message}`);
      process.exitCode = 1;
    },
  });
if (!leading) log('standing by');

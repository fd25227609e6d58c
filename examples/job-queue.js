// A job-queue worker: every process runs this, only the leader dispatches. Jobs are taken
// while leading (`whileLeader` starts none once leadership ends) and marked done with
// `fenced`, so that a leader deposed mid-job (a pause, a lost lease) cannot write after its
// successor began: its write is refused and the successor does the job. Ctrl-C drains: the
// job in flight finishes, then the lease is released.
// Run it in two terminals on one file:
//   node examples/job-queue.js /tmp/jobs.db [jobs to enqueue into an empty queue, 20 by default]
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { openSqlite } = require('observe-leadership/examples/support/open-sqlite');
const { concatMap, fromEvent, interval, merge, tap } = require('rxjs');
const { observeLeadership, whileLeader, fenced, LeadershipError } = require('observe-leadership');

const file = process.argv[2] ?? 'jobs.db';
const db = openSqlite(file);
db.exec('PRAGMA synchronous = NORMAL');
db.exec(`CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY, payload TEXT NOT NULL, done_by TEXT, done_in_term INTEGER)`);
if (db.prepare('SELECT count(*) AS n FROM jobs').get().n === 0) {
  const enqueue = db.prepare('INSERT INTO jobs (payload) VALUES (?)');
  for (let i = 1; i <= Number(process.argv[3] ?? 20); i++) enqueue.run(`job ${i}`);
}
const nextJob = db.prepare('SELECT id, payload FROM jobs WHERE done_by IS NULL ORDER BY id LIMIT 1');
const markDone = db.prepare('UPDATE jobs SET done_by = ?, done_in_term = ? WHERE id = ? AND done_by IS NULL');

/** @param {string} line */
const log = (line) => console.log(`${new Date().toISOString().slice(11, 23)}  ${line}`);

/**
 * One job: the work, then its result written only if this tenure still holds the lease.
 *
 * @param {import('observe-leadership').ElectedEvent} lease
 */
function dispatch(lease) {
  /** @type {{ id: number; payload: string } | undefined | null} (null on bun:sqlite) */
  const job = nextJob.get();
  if (job == null) return;
  try {
    fenced(db, lease, () => markDone.run(lease.holder, lease.term, job.id));
    log(`did ${job.payload} (term ${lease.term})`);
  } catch (error) {
    // A lost lease (the successor does the job), or the database briefly locked (the next tick does).
    if (!LeadershipError.isSkippable(error)) throw error;
    log(`${job.payload}: not recorded (${error.code}: ${error.message})`);
  }
}

log(`worker ${process.pid} campaigning on ${file}`);
observeLeadership(db, { renewEvery: 1_000, expiresAfter: 3_000 })
  .pipe(
    // Every event but `error` has a term: the `type` tells TypeScript which one this is.
    tap(
      (event) =>
        event.type !== 'renewed' && log(event.type === 'error' ? `error, ${event.error.code}` : `${event.type}, term ${event.term}`),
    ),
    // A job every 200 ms, each started through `job`; on Ctrl-C, no new one, then the release.
    whileLeader((lease, job) => interval(200).pipe(concatMap(() => job(() => dispatch(lease)))), {
      drainOn: merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')),
    }),
  )
  .subscribe({
    complete: () => {
      db.close();
      log('stopped, lease released');
    },
    error: (error) => {
      console.error(`stopped: ${error.code}: ${error.message}`);
      process.exitCode = 1;
    },
  });

// A cron-style singleton: every process ticks on the same wall-clock schedule, and only
// the leader runs the task (`whileLeader` runs the schedule only while leading). A failover
// in the middle of a period must not run it twice, so a run is recorded under its period's
// key in the same `fenced` transaction as the task's own writes: exactly once, and a
// deposed leader cannot record a run after its successor began.
//   node examples/cron-singleton.js /tmp/cron.db [every-ms]
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { openSqlite } = require('observe-leadership/examples/support/open-sqlite');
const { concatMap, fromEvent, map, merge, tap, timer } = require('rxjs');
const { observeLeadership, whileLeader, fenced, LeadershipError } = require('observe-leadership');

const file = process.argv[2] ?? 'cron.db';
const every = Number(process.argv[3] ?? 5_000);
const db = openSqlite(file);
db.exec('CREATE TABLE IF NOT EXISTS cron_runs (period INTEGER PRIMARY KEY, ran_by TEXT NOT NULL, term INTEGER NOT NULL)');
const recordRun = db.prepare('INSERT OR IGNORE INTO cron_runs (period, ran_by, term) VALUES (?, ?, ?)');
/** @param {string} line */
const log = (line) => console.log(`${new Date().toISOString().slice(11, 23)}  ${line}`);

/** Every process's periods: numbered by wall-clock time, so that all agree on them. */
const periods = () => timer(every - (Date.now() % every), every).pipe(map(() => Math.floor(Date.now() / every)));

/**
 * The task, inside the transaction that records its run. A task with effects outside this
 * database cannot be exactly once: do it after the commit (at most once) or before it (at
 * least once), as suits it.
 *
 * @param {import('observe-leadership').ElectedEvent} lease
 * @param {number} period
 */
function runOnce(lease, period) {
  try {
    fenced(db, lease, () => {
      if (recordRun.run(period, lease.holder, lease.term).changes === 1) log(`ran the task for period ${period} (term ${lease.term})`);
      else log(`period ${period} already ran`);
    });
  } catch (error) {
    // A lost lease, or the database briefly locked: this period is the next leader's, or the next tick's.
    if (!LeadershipError.isSkippable(error)) throw error;
    log(`period ${period}: not run (${error.code})`);
  }
}

log(`worker ${process.pid} on ${file}, a task every ${every} ms`);
observeLeadership(db, { renewEvery: 1_000, expiresAfter: 3_000 })
  .pipe(
    // Every event but `error` has a term: the `type` tells TypeScript which one this is.
    tap(
      (event) =>
        event.type !== 'renewed' && log(event.type === 'error' ? `error, ${event.error.code}` : `${event.type}, term ${event.term}`),
    ),
    // Each period's run is a job: started only while this tenure holds, waited for on Ctrl-C.
    whileLeader((lease, job) => periods().pipe(concatMap((period) => job(() => runOnce(lease, period)))), {
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

// A cron-style singleton: every process ticks on the same wall-clock schedule, and only
// the leader runs the task (`whileLeader` runs the schedule only while leading). A failover
// in the middle of a period must not run it twice, so a run is recorded under its period's
// key in the same `fenced` transaction as the task's own writes: exactly once, and a
// deposed leader cannot record a run after its successor began.
//   node examples/cron-singleton.js /tmp/cron.db [every-ms]
'use strict';
const Database = require('better-sqlite3');
const { map, tap, timer } = require('rxjs');
const { observeLeadership, whileLeader, fenced, LeadershipError } = require('observe-leadership');

const file = process.argv[2] ?? 'cron.db';
const every = Number(process.argv[3] ?? 5_000);
const db = new Database(file, { timeout: 1_000 });
db.pragma('journal_mode = WAL');
db.exec('CREATE TABLE IF NOT EXISTS cron_runs (period INTEGER PRIMARY KEY, ran_by TEXT NOT NULL, term INTEGER NOT NULL)');
const recordRun = db.prepare('INSERT OR IGNORE INTO cron_runs (period, ran_by, term) VALUES (?, ?, ?)');
const log = (line) => console.log(`${new Date().toISOString().slice(11, 23)}  ${line}`);

/** Every process's periods: numbered by wall-clock time, so that all agree on them. */
const periods = () => timer(every - (Date.now() % every), every).pipe(map(() => Math.floor(Date.now() / every)));

/**
 * The task, inside the transaction that records its run. A task with effects outside this
 * database cannot be exactly once: do it after the commit (at most once) or before it (at
 * least once), as suits it.
 */
function runOnce(lease, period) {
  try {
    fenced(db, lease, () => {
      if (recordRun.run(period, lease.holder, lease.term).changes === 1) log(`ran the task for period ${period} (term ${lease.term})`);
      else log(`period ${period} already ran`);
    });
  } catch (error) {
    if (!(error instanceof LeadershipError && error.code === 'LEASE_LOST')) throw error;
    log(`period ${period}: not run, this tenure is over`);
  }
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    subscription.unsubscribe(); // releases the lease
    db.close();
    log('stopped, lease released');
  });
}

log(`worker ${process.pid} on ${file}, a task every ${every} ms`);
const subscription = observeLeadership(db, { renewEvery: 1_000, expiresAfter: 3_000 })
  .pipe(
    tap((event) => event.type !== 'renewed' && log(`${event.type}${event.term ? `, term ${event.term}` : ''}`)),
    whileLeader((lease) => periods().pipe(tap((period) => runOnce(lease, period)))),
  )
  .subscribe({
    error: (error) => {
      console.error(`stopped: ${error.code}: ${error.message}`);
      process.exitCode = 1;
    },
  });

// A job queue shared by workers on any number of machines, on PostgreSQL. Run it in two
// terminals (or on two hosts) with the same database URL:
//   npm run example:postgres -- postgres://user@host/db
// The leader marks one job done every 200 ms, each in a fenced transaction; Ctrl-C it (the
// job in flight finishes, then the lease is released) and the other takes the queue over
// where it was, with a greater term.
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { Pool } = requirePg();
const { concatMap, fromEvent, interval, merge } = require('rxjs');
const { fenced, LeadershipError, observeLeadership, whileLeader } = require('observe-leadership');
const { postgresLeaseStore } = require('observe-leadership/postgres');

/** @returns {typeof import('pg')} */
function requirePg() {
  try {
    return require('pg');
  } catch {
    console.error('this example needs the PostgreSQL driver: npm install pg');
    process.exit(1);
  }
}

const url = process.argv[2] ?? process.env.DATABASE_URL;
const schema = process.argv[3] ?? 'example';
const pool = new Pool({ connectionString: url, connectionTimeoutMillis: 5_000, idleTimeoutMillis: 0 });
const store = postgresLeaseStore(pool, { schema });
const jobs = `"${schema}".jobs`;
const time = () => new Date().toISOString().slice(11, 23);

/**
 * Marks the next job done, in one transaction that first checks that `lease` still holds.
 *
 * @param {import('observe-leadership').ElectedEvent} lease
 */
const doNextJob = (lease) =>
  fenced(store, lease, async (client) => {
    /** @type {import('pg').QueryResult<{ id: number }>} */
    const { rows } = await client.query(
      `UPDATE ${jobs} SET done_by = $1, done_in_term = $2
       WHERE id = (SELECT min(id) FROM ${jobs} WHERE done_by IS NULL) RETURNING id`,
      [lease.holder, lease.term],
    );
    if (rows.length > 0) console.log(`${time()}  did job ${rows[0].id} (term ${lease.term})`);
  }).catch((error) => {
    // A lost lease (the next leader does the job), or the server briefly unreachable (the next tick does).
    if (!LeadershipError.isSkippable(error)) throw error;
    console.log(`${time()}  job not done: ${error.code}`);
  });

async function main() {
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await pool.query(`CREATE TABLE IF NOT EXISTS ${jobs} (id int PRIMARY KEY, done_by text, done_in_term bigint)`);
  await pool.query(`INSERT INTO ${jobs} (id) SELECT generate_series(1, 1000) ON CONFLICT DO NOTHING`);

  console.log(`${time()}  campaigning (pid ${process.pid}); Ctrl-C to stop`);
  const drainOn = merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM'));
  observeLeadership(store, { renewEvery: 1_000, expiresAfter: 3_000 })
    .pipe(whileLeader((lease, job) => interval(200).pipe(concatMap(() => job(() => doNextJob(lease)))), { drainOn }))
    .subscribe({
      complete: async () => {
        // The release has started; wait for its end before the pool goes.
        await store.settled();
        await pool.end();
        console.log(`${time()}  stopped, lease released`);
      },
      error: (error) => {
        console.error(`stopped: ${error.code}: ${error.message}`);
        process.exitCode = 1;
      },
    });
}

main().catch((error) => {
  console.error(error.message);
  process.exitCode = 1;
});

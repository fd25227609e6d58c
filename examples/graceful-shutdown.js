// Graceful shutdown: on SIGTERM (a deploy) or Ctrl-C, take no new job, let the job in
// flight finish, then end the subscription, which releases the lease: the next leader
// starts at once, and no job is cut in half.
//   node examples/graceful-shutdown.js /tmp/jobs.db
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { openSqlite } = require('./support/open-sqlite');
const {
  BehaviorSubject,
  concatMap,
  defer,
  filter,
  finalize,
  fromEvent,
  interval,
  merge,
  share,
  switchMap,
  take,
  takeUntil,
  timer,
  tap,
} = require('rxjs');
const { observeLeadership, whileLeader } = require('observe-leadership');

const file = process.argv[2] ?? 'jobs.db';
const db = openSqlite(file);
/** @param {string} line */
const log = (line) => console.log(`${new Date().toISOString().slice(11, 23)}  ${line}`);

const shutdown$ = merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')).pipe(take(1), share());
const busy$ = new BehaviorSubject(false);
// Done once asked to stop and no job is in flight.
const done$ = shutdown$.pipe(
  tap(() => log(busy$.value ? 'stopping: no new job; waiting for the one in flight' : 'stopping')),
  switchMap(() =>
    busy$.pipe(
      filter((busy) => !busy),
      take(1),
    ),
  ),
);

let number = 0;
/**
 * A job that takes a while: a second, here.
 *
 * @param {import('observe-leadership').ElectedEvent} lease
 */
const job = (lease) =>
  defer(() => {
    const name = `job ${++number}`;
    busy$.next(true);
    log(`started ${name} (term ${lease.term})`);
    return timer(1_000).pipe(
      tap(() => log(`finished ${name}`)),
      finalize(() => busy$.next(false)),
    );
  });

log(`worker ${process.pid} campaigning on ${file}`);
observeLeadership(db, { renewEvery: 1_000, expiresAfter: 3_000 })
  .pipe(
    whileLeader((lease) =>
      interval(100).pipe(
        takeUntil(shutdown$),
        concatMap(() => job(lease)),
      ),
    ),
    takeUntil(done$),
    finalize(() => {
      // The subscription has ended: the lease is released.
      db.close();
      log('lease released, exiting');
    }),
  )
  .subscribe({ error: (error) => log(`stopped: ${error.code}: ${error.message}`) });

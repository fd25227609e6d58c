// A worker that prints its leadership events. Run it in two terminals on the same file:
//   npm run example -- /tmp/leader.db
// One is elected and renews; the other stands by, and says who leads (observeLeader: a
// candidate that follows emits no event of its own until it is elected). Stop the leader
// with Ctrl-C and the other takes over at once; or move the leadership to the other one,
// named as it printed it, and both go on:
//   npx observe-leadership handoff /tmp/leader.db --to print-events-<its pid>
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { openSqlite } = require('observe-leadership/examples/support/open-sqlite');
const { distinctUntilChanged } = require('rxjs');
const { observeLeader, observeLeadership } = require('observe-leadership');

const file = process.argv[2] ?? 'leader.db';
const db = openSqlite(file);
db.exec('PRAGMA synchronous = NORMAL');

/** @param {number} ms */
const time = (ms) => new Date(ms).toISOString().slice(11, 23);
/** @param {import('observe-leadership').LeadershipEvent} event the type says which fields there are */
const describe = (event) => {
  switch (event.type) {
    case 'elected':
    case 'renewed':
      return `${event.type.padEnd(8)} term ${event.term}, lease until ${time(event.expiresAt)}`;
    case 'lost':
      return `lost     term ${event.term} (${event.reason})`;
    case 'error':
      return `error    ${event.error.code}: ${event.error.message}`;
  }
};

let leading = false;
// Set before subscribing: the election is printed during subscribe, and a Ctrl-C right after
// it must already find the handler that releases.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    subscription.unsubscribe(); // stops the timers and releases the lease if it leads
    db.close();
    console.log(`${time(Date.now())}  stopped${leading ? ', lease released' : ''}`);
  });
}

// A holder that says who it is, where the default is a new ULID per subscription: what a
// handoff names. Unique among the candidates of the file: one per process of this host.
const holder = `print-events-${process.pid}`;
console.log(`${time(Date.now())}  campaigning on ${file} as ${holder}; Ctrl-C to stop`);
const subscription = observeLeadership(db, { holder, renewEvery: 1_000, expiresAfter: 3_000 }).subscribe({
  next: (event) => {
    if (event.type !== 'error') leading = event.type !== 'lost';
    console.log(`${time(Date.now())}  ${describe(event)}`);
  },
  error: (error) => {
    console.error(`stopped: ${error.code}: ${error.message}`);
    process.exitCode = 1;
  },
});
// While it follows, who leads instead (each change of hands, not each renewal).
subscription.add(
  observeLeader(db)
    .pipe(distinctUntilChanged((before, now) => before.holder === now.holder && before.term === now.term))
    .subscribe((state) => {
      if (leading) return;
      console.log(
        `${time(Date.now())}  standing by: ${state.holder === null ? 'nobody leads' : `${state.holder} leads, term ${state.term}`}`,
      );
    }),
);

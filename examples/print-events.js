// A worker that prints its leadership events. Run it in two terminals on the same file:
//   npm run example -- /tmp/leader.db
// One is elected and renews; stop it with Ctrl-C and the other takes over at once.
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { openSqlite } = require('./support/open-sqlite');
const { observeLeadership } = require('observe-leadership');

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

// Set before subscribing: the election is printed during subscribe, and a Ctrl-C right after
// it must already find the handler that releases.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    subscription.unsubscribe(); // stops the timers and releases the lease if it leads
    db.close();
    console.log(`${time(Date.now())}  stopped, lease released`);
  });
}

console.log(`${time(Date.now())}  campaigning on ${file} (pid ${process.pid}); Ctrl-C to stop`);
const subscription = observeLeadership(db, { renewEvery: 1_000, expiresAfter: 3_000 }).subscribe({
  next: (event) => console.log(`${time(Date.now())}  ${describe(event)}`),
  error: (error) => {
    console.error(`stopped: ${error.code}: ${error.message}`);
    process.exitCode = 1;
  },
});

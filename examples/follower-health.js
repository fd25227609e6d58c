// A health endpoint for a process that only follows: it watches who leads (observeLeader)
// without campaigning, as a process that forwards work to the leader does. GET /healthz
// answers 200 while its reads of the database succeed, 503 once they have failed for
// longer than failingAfter (or its stream ended); GET /leader answers 200 while somebody
// leads. Both return the report: who leads, with which term, and since when.
//   node examples/follower-health.js /tmp/jobs.db 8081
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { createServer } = require('node:http');
const { openSqlite } = require('observe-leadership/examples/support/open-sqlite');
const { fromEvent, merge, take, takeUntil } = require('rxjs');
const { leaderHealth, observeLeader } = require('observe-leadership');

const file = process.argv[2] ?? 'jobs.db';
const port = Number(process.argv[3] ?? 8081);
// Read-only: a follower never writes. The file must exist (a candidate, or
// `npx observe-leadership init`, made it).
const db = openSqlite(file, { readonly: true });

const health = leaderHealth({ failingAfter: 30_000 });
const stop$ = merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')).pipe(take(1));
observeLeader(db, { instrument: health })
  .pipe(takeUntil(stop$))
  .subscribe({
    next: ({ holder, term }) => console.log(holder === null ? 'nobody leads' : `${holder} leads, term ${term}`),
    error: (error) => console.error(`watch ended: ${error.code} ${error.message}`),
    complete: () => server.close(),
  });

const server = createServer((request, response) => {
  const report = health.check();
  const ok = request.url === '/leader' ? report.led : report.healthy;
  response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(`${JSON.stringify(report)}\n`);
});
server.listen(port, '127.0.0.1', () => console.log(`health on http://127.0.0.1:${port}/healthz`));

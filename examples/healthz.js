// A health endpoint for readiness and liveness probes: GET /healthz answers 200 while this
// process's candidate is healthy (following normally, or leading with a lease that stands)
// and 503 when it is not (its database calls have failed for longer than failingAfter, it
// believes it leads past its lease, or its stream ended), with the report as JSON.
// GET /leader answers 200 only in the leader: a readiness probe for a Service that routes
// to the leader alone.
//   node examples/healthz.js /tmp/jobs.db 8080
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { createServer } = require('node:http');
const { openSqlite } = require('observe-leadership/examples/support/open-sqlite');
const { fromEvent, merge, take, takeUntil } = require('rxjs');
const { leadershipHealth, observeLeadership } = require('observe-leadership');

const file = process.argv[2] ?? 'jobs.db';
const port = Number(process.argv[3] ?? 8080);
const db = openSqlite(file);

const health = leadershipHealth({ failingAfter: 30_000 });
const stop$ = merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')).pipe(take(1));
observeLeadership(db, { instrument: health })
  .pipe(takeUntil(stop$))
  .subscribe({
    // Every event but `error` has a term: the `type` tells TypeScript which one this is.
    next: (event) => console.log(event.type === 'error' ? `error ${event.error.code}` : `${event.type} term ${event.term}`),
    error: (error) => console.error(`leadership ended: ${error.code} ${error.message}`),
    complete: () => server.close(),
  });

const server = createServer((request, response) => {
  const report = health.check();
  const ok = request.url === '/leader' ? report.leading : report.healthy;
  response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(`${JSON.stringify(report)}\n`);
});
server.listen(port, '127.0.0.1', () => console.log(`health on http://127.0.0.1:${port}/healthz`));

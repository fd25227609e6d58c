// A service whose requests only the leader may handle: every process serves HTTP, the
// leader answers, and a follower forwards each request to the address the leader
// advertises (the `advertise` option), which it learns from observeLeader. Run two or more:
//   node examples/forward-to-leader.js /tmp/jobs.db 8081
//   node examples/forward-to-leader.js /tmp/jobs.db 8082
//   curl http://127.0.0.1:8082/hello     # answered by the leader, whichever port you ask
// Stop the leader and ask again: the next leader answers, at its own address.
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';
const { createServer } = require('node:http');
const { openSqlite } = require('observe-leadership/examples/support/open-sqlite');
const { fromEvent, merge, take, takeUntil } = require('rxjs');
const { observeLeader, observeLeadership } = require('observe-leadership');

const file = process.argv[2] ?? 'jobs.db';
const port = Number(process.argv[3] ?? 8080);
const db = openSqlite(file);
// What followers need to reach this process when it leads: anybody who can read the
// database reads it, so an address, never a secret.
const self = `http://127.0.0.1:${port}`;
const stop$ = merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')).pipe(take(1));

let leading = false;
/** @type {string | null} where whoever leads says it can be reached; null when nobody leads */
let leaderAddress = null;

observeLeadership(db, { advertise: self })
  .pipe(takeUntil(stop$))
  .subscribe({
    next: (event) => {
      if (event.type !== 'error') leading = event.type !== 'lost';
      console.log(event.type === 'error' ? `error ${event.error.code}` : `${event.type} term ${event.term}`);
    },
    error: (error) => console.error(`leadership ended: ${error.code} ${error.message}`),
    complete: () => server.close(() => db.close()),
  });
observeLeader(db)
  .pipe(takeUntil(stop$))
  .subscribe(({ advertised }) => (leaderAddress = advertised));

const server = createServer((request, response) => {
  const chunks = /** @type {Buffer[]} */ ([]);
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    if (leading) {
      response.writeHead(200, { 'content-type': 'text/plain' }).end(`${request.method} ${request.url} handled by the leader at ${self}\n`);
      return;
    }
    // One hop only: a request forwarded to a process that no longer leads is not sent on.
    if (leaderAddress === null || leaderAddress === self || request.headers['x-forwarded-by'] !== undefined) {
      response.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' }).end('no leader to forward to; try again\n');
      return;
    }
    const method = request.method ?? 'GET';
    fetch(new URL(request.url ?? '/', leaderAddress), {
      method,
      headers: { 'content-type': request.headers['content-type'] ?? 'application/octet-stream', 'x-forwarded-by': self },
      body: method === 'GET' || method === 'HEAD' ? undefined : body,
    }).then(
      async (answer) => {
        response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
        response.end(Buffer.from(await answer.arrayBuffer()));
      },
      (error) =>
        response.writeHead(502, { 'content-type': 'text/plain' }).end(`the leader at ${leaderAddress} did not answer: ${error.message}\n`),
    );
  });
});
server.listen(port, '127.0.0.1', () => console.log(`serving on ${self}, forwarding to the leader while following`));

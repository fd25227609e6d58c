// A worker process for the multi-process specs. It campaigns with the built library
// (dist/, which `npm test` builds first), reports every event as one JSON line on stdout,
// and takes commands, one per line, on stdin:
//   unsubscribe | subscribe | fenced-write | exit
// Options come as JSON in argv[2]: { file, slot, renewEvery, expiresAfter, retryEvery,
// ledgerEvery (ms between fenced ledger writes while leading; none if absent) }.
'use strict';
const Database = require('better-sqlite3');
const readline = require('node:readline');
const { interval, map, tap } = require('rxjs');
const { fenced, observeLeadership, whileLeader } = require('../../../dist');

const { file, ledgerEvery, ...config } = JSON.parse(process.argv[2]);
const db = new Database(file, { timeout: 100 });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, holder TEXT NOT NULL, term INTEGER NOT NULL)');
const appendToLedger = db.prepare('INSERT INTO ledger (holder, term) VALUES (?, ?)');

const report = (record) => process.stdout.write(`${JSON.stringify({ at: Date.now(), pid: process.pid, ...record })}\n`);

let subscription;
let lastLease;

function fencedWrite(lease) {
  try {
    fenced(db, lease, () => appendToLedger.run(lease.holder, lease.term));
    report({ type: 'fenced-write', term: lease.term });
  } catch (error) {
    report({ type: 'fenced-rejected', term: lease.term, code: error.code, message: error.message });
  }
}

function subscribe() {
  subscription = observeLeadership(db, config)
    .pipe(
      tap((event) => {
        if (event.type === 'elected') lastLease = event;
        const { error, ...fields } = event;
        report(error ? { ...fields, code: error.code, message: error.message } : fields);
      }),
      whileLeader((lease) => (ledgerEvery ? interval(ledgerEvery).pipe(map(() => fencedWrite(lease))) : [])),
    )
    .subscribe({ error: (error) => report({ type: 'terminated', code: error.code, message: error.message }) });
  report({ type: 'subscribed' });
}

function unsubscribe() {
  subscription?.unsubscribe();
  report({ type: 'unsubscribed' });
}

const commands = {
  subscribe,
  unsubscribe,
  'fenced-write': () => (lastLease ? fencedWrite(lastLease) : report({ type: 'no-lease' })),
  exit: () => {
    unsubscribe();
    db.close();
    process.exit(0);
  },
};

readline.createInterface({ input: process.stdin }).on('line', (line) => commands[line.trim()]?.());
process.once('SIGTERM', commands.exit);
subscribe();

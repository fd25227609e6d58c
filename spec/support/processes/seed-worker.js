// A worker process that runs the original Rust worker's statements, unchanged, on slot 0
// (see shared/seed/leader.rs.txt): INSERT OR IGNORE, then the UPDATE compare-and-set to
// acquire; UPDATE ... WHERE holder = ? to renew. Unlike the original, it keeps trying to
// acquire while it follows (the original only tries at boot, then restarts), so that it
// competes all the time. It reports, as JSON lines, when it believes it leads: from a
// successful acquire to the expiry it last wrote, or until a renewal fails.
// Options come as JSON in argv[2]: { file, renewEvery, expiresAfter, retryEvery }.
'use strict';
const Database = require('better-sqlite3');
const { ulid } = require('ulid');
const { seedStatements } = require('./seed-statements');

const { file, renewEvery, expiresAfter, retryEvery } = JSON.parse(process.argv[2]);
const db = new Database(file, { timeout: 100 });
db.pragma('journal_mode = WAL');
db.exec(`CREATE TABLE IF NOT EXISTS worker_leadership (
  slot INTEGER PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL)`);

const holder = ulid();
const seed = seedStatements(db, holder, expiresAfter);

const report = (record) => process.stdout.write(`${JSON.stringify({ at: Date.now(), pid: process.pid, holder, ...record })}\n`);

function follow() {
  const now = Date.now();
  let acquired = false;
  try {
    acquired = seed.tryAcquire(now);
  } catch (error) {
    report({ type: 'error', code: error.code });
  }
  if (!acquired) return setTimeout(follow, retryEvery);
  const expiresAt = now + expiresAfter;
  report({ type: 'elected', expiresAt });
  setTimeout(lead, renewEvery);
}

function lead() {
  const now = Date.now();
  const expiresAt = now + expiresAfter;
  let renewed = false;
  try {
    renewed = seed.renew(now);
  } catch (error) {
    report({ type: 'error', code: error.code });
  }
  if (renewed) {
    report({ type: 'renewed', expiresAt });
    return setTimeout(lead, renewEvery);
  }
  report({ type: 'lost', reason: 'renewal failed' });
  follow();
}

process.once('SIGTERM', () => {
  seed.release();
  report({ type: 'unsubscribed' });
  process.exit(0);
});
follow();

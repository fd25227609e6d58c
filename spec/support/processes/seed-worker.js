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

const { file, renewEvery, expiresAfter, retryEvery } = JSON.parse(process.argv[2]);
const db = new Database(file, { timeout: 100 });
db.pragma('journal_mode = WAL');
db.exec(`CREATE TABLE IF NOT EXISTS worker_leadership (
  slot INTEGER PRIMARY KEY, holder TEXT NOT NULL, expires_at INTEGER NOT NULL)`);

const holder = ulid();
const insert = db.prepare('INSERT OR IGNORE INTO worker_leadership (slot, holder, expires_at) VALUES (0, ?, ?)');
const take = db.prepare(`UPDATE worker_leadership
             SET holder = ?, expires_at = ?
             WHERE slot = 0 AND (expires_at < ? OR holder = ?)`);
const renew = db.prepare('UPDATE worker_leadership SET expires_at = ? WHERE slot = 0 AND holder = ?');
const release = db.prepare('DELETE FROM worker_leadership WHERE holder = ?');

const report = (record) => process.stdout.write(`${JSON.stringify({ at: Date.now(), pid: process.pid, holder, ...record })}\n`);

function tryAcquire() {
  const now = Date.now();
  const expires = now + expiresAfter;
  if (insert.run(holder, expires).changes === 1) return expires;
  return take.run(holder, expires, now, holder).changes === 1 ? expires : undefined;
}

function follow() {
  let expiresAt;
  try {
    expiresAt = tryAcquire();
  } catch (error) {
    report({ type: 'error', code: error.code });
  }
  if (expiresAt === undefined) return setTimeout(follow, retryEvery);
  report({ type: 'elected', expiresAt });
  setTimeout(lead, renewEvery);
}

function lead() {
  const now = Date.now();
  const expiresAt = now + expiresAfter;
  let renewed = false;
  try {
    renewed = renew.run(expiresAt, holder).changes === 1;
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
  release.run(holder);
  report({ type: 'unsubscribed' });
  process.exit(0);
});
follow();

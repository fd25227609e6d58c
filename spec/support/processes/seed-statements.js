// The original Rust worker's statements, as they stand in shared/seed/leader.rs.txt, for
// the specs: in process (store spec) and in a child process (seed-worker.js). Time is an
// argument so that callers choose it.
'use strict';

function seedStatements(db, holder, expiresAfter) {
  const insert = db.prepare('INSERT OR IGNORE INTO worker_leadership (slot, holder, expires_at) VALUES (0, ?, ?)');
  const take = db.prepare(`UPDATE worker_leadership
             SET holder = ?, expires_at = ?
             WHERE slot = 0 AND (expires_at < ? OR holder = ?)`);
  const renew = db.prepare('UPDATE worker_leadership SET expires_at = ? WHERE slot = 0 AND holder = ?');
  const release = db.prepare('DELETE FROM worker_leadership WHERE holder = ?');
  return {
    tryAcquire(now) {
      const expires = now + expiresAfter;
      if (insert.run(holder, expires).changes === 1) return true;
      return take.run(holder, expires, now, holder).changes === 1;
    },
    renew: (now) => renew.run(now + expiresAfter, holder).changes === 1,
    release: () => void release.run(holder),
  };
}

module.exports = { seedStatements };

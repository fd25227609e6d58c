/**
 * The application beside the election: one process that writes about `rowsPerSecond` rows a
 * second (it reports what it wrote), one commit each, into a table of its own in the same SQLite file, as users keep
 * their jobs in the database their workers elect a leader in. A follower woken by these
 * commits would show in the benchmark's idle figures.
 *
 * Options come as JSON in argv[2]: { file, journal, rowsPerSecond }. SIGTERM stops it; it
 * then reports `{ type: 'app-writer', rows, seconds }` on stdout.
 */
import { JournalMode, openWorkerDatabase } from '../test-kit/worker-database';
import { report } from '../test-kit/worker-report';

interface AppWriterOptions {
  file: string;
  journal: JournalMode;
  rowsPerSecond: number;
}

function main(): void {
  const { file, journal, rowsPerSecond } = JSON.parse(process.argv[2]) as AppWriterOptions;
  const db = openWorkerDatabase(file, {
    journal,
    setupSql: 'CREATE TABLE IF NOT EXISTS app_jobs (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, at INTEGER NOT NULL)',
  });
  const insert = db.prepare('INSERT INTO app_jobs (payload, at) VALUES (?, ?)');
  const startedAt = Date.now();
  let rows = 0;
  // A few commits every few ms, one row each, never more to catch up: an application that
  // commits back to back without pause would lock the others out of a rollback-journal file
  // for as long as it keeps going (SQLite's nature), which is not what this measures.
  const perTick = Math.max(1, Math.round(rowsPerSecond / 100));
  const timer = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      try {
        insert.run(`job ${rows}`, Date.now());
        rows++;
      } catch {
        return; // locked for longer than the busy timeout: the next tick writes again
      }
    }
  }, 10);
  process.once('SIGTERM', () => {
    clearInterval(timer);
    report({ type: 'app-writer', rows, seconds: (Date.now() - startedAt) / 1000 });
    db.close();
    process.exit(0);
  });
}

if (require.main === module) main();

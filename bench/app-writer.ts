/**
 * The application beside the election: one process that writes `rowsPerSecond` rows a
 * second, one commit each, into a table of its own in the same SQLite file, as users keep
 * their jobs in the database their workers elect a leader in. A follower woken by these
 * commits would show in the benchmark's idle figures.
 *
 * Options come as JSON in argv[2]: { file, journal, rowsPerSecond }. SIGTERM stops it; it
 * then reports `{ type: 'app-writer', rows, seconds }` on stdout.
 */
import { JournalMode, openDatabase, report } from '../chaos/worker';

interface AppWriterOptions {
  file: string;
  journal: JournalMode;
  rowsPerSecond: number;
}

function main(): void {
  const { file, journal, rowsPerSecond } = JSON.parse(process.argv[2]) as AppWriterOptions;
  const db = openDatabase(file, {
    journal,
    setupSql: 'CREATE TABLE IF NOT EXISTS app_jobs (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, at INTEGER NOT NULL)',
  });
  const insert = db.prepare('INSERT INTO app_jobs (payload, at) VALUES (?, ?)');
  const startedAt = Date.now();
  let rows = 0;
  // Catches up every few ms with where the rate says it should be: one commit per row.
  const timer = setInterval(() => {
    const due = Math.floor(((Date.now() - startedAt) / 1000) * rowsPerSecond);
    for (; rows < due; rows++) {
      try {
        insert.run(`job ${rows}`, Date.now());
      } catch {
        return; // the file is locked for longer than the busy timeout: this row again next time
      }
    }
  }, 5);
  process.once('SIGTERM', () => {
    clearInterval(timer);
    report({ type: 'app-writer', rows, seconds: (Date.now() - startedAt) / 1000 });
    db.close();
    process.exit(0);
  });
}

if (require.main === module) main();

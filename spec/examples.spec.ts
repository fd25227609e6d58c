import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { eventually } from '../chaos/eventually';
import { temporaryDatabase } from './support/temporary-database';

// README's first example, run as a user runs it, so that it cannot rot.
describe('examples/print-events.js', () => {
  it('prints its election, and releases its lease on Ctrl-C', async () => {
    const database = temporaryDatabase();
    const worker = spawn(process.execPath, [join(__dirname, '..', 'examples', 'print-events.js'), database.file]);
    let output = '';
    worker.stdout.on('data', (chunk) => (output += chunk));
    worker.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => worker.once('exit', resolve));
    try {
      await eventually('the election', () => /elected {2}term 1, lease until/.test(output));
      worker.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(output).toMatch(/stopped, lease released/);
      expect(database.open().prepare('SELECT count(*) FROM worker_leadership').pluck().get()).toBe(0);
    } finally {
      worker.kill('SIGKILL');
      database.remove();
    }
  });
});

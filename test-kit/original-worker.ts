/**
 * A process that runs the original Rust worker's statements, unchanged, on slot 0. Unlike
 * the original, it keeps trying to acquire while it follows (the original tries at boot,
 * then restarts), so that it competes all the time. It reports when it believes it leads,
 * as JSON lines like worker.ts: from a successful acquire to the expiry it last wrote, or
 * until a renewal fails. SIGTERM releases with the original's DELETE. It takes the same
 * stdin commands as worker.ts (`unsubscribe` releases and stops, `subscribe` starts again).
 *
 * Options come as JSON in argv[2]: { file, worker?, renewEvery, expiresAfter, retryEvery, journal?, busyTimeout? }.
 */
import { ulid } from 'ulid';
import { originalStatements, originalTable } from './original-statements';
import { createInterface } from 'node:readline';
import { openWorkerDatabase } from './worker-database';
import type { WorkerOptions } from './worker-options';
import { monotonicNow, report, reportUsage } from './worker-report';

function main(): void {
  const { file, worker, renewEvery, expiresAfter, retryEvery, journal, busyTimeout } = JSON.parse(process.argv[2]) as WorkerOptions;
  const db = openWorkerDatabase(file!, { journal, busyTimeout, setupSql: originalTable }); // the original worker runs only on SQLite
  const holder = ulid();
  const original = originalStatements(db, holder, expiresAfter);
  // It believes by the wall clock, as the original does: on the monotonic clock, its belief
  // ends when the wall clock, as read now, reaches its expiry.
  const say = (record: Record<string, unknown> & { expiresAt?: number }) =>
    report({
      worker,
      slot: 0,
      holder,
      ...record,
      ...(record.expiresAt !== undefined && { monoExpiresAt: monotonicNow() + record.expiresAt - Date.now() }),
    });

  const attempt = <T>(statement: () => T, otherwise: T): T => {
    try {
      return statement();
    } catch (error) {
      say({ type: 'error', code: (error as { code?: string }).code });
      return otherwise;
    }
  };

  let timer: NodeJS.Timeout | undefined;
  const follow = (): void => {
    const now = Date.now();
    if (!attempt(() => original.tryAcquire(now), false)) {
      timer = setTimeout(follow, retryEvery);
      return;
    }
    say({ type: 'elected', expiresAt: now + expiresAfter });
    timer = setTimeout(lead, renewEvery);
  };

  const lead = (): void => {
    const now = Date.now();
    if (attempt(() => original.renew(now), false)) {
      say({ type: 'renewed', expiresAt: now + expiresAfter });
      timer = setTimeout(lead, renewEvery);
      return;
    }
    say({ type: 'lost', reason: 'renewal failed' });
    follow();
  };

  const subscribe = () => {
    say({ type: 'subscribed' });
    follow();
  };
  const unsubscribe = () => {
    clearTimeout(timer);
    say({ type: 'unsubscribed' }); // before the release, as worker.ts does
    attempt(() => original.release(), undefined);
  };
  const commands: Record<string, () => void> = { subscribe, unsubscribe, usage: reportUsage };
  createInterface({ input: process.stdin }).on('line', (line) => commands[line.trim()]?.());
  process.once('SIGTERM', () => {
    unsubscribe();
    process.exit(0);
  });
  subscribe();
}

if (require.main === module) main();

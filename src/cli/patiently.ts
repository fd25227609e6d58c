import { performance } from 'node:perf_hooks';
import { LockRetry } from '../pacing/lock-retry';
import type { Eventually } from '../core/eventually';

/**
 * `ask`'s answer. A store never waits for a lock (a commit in a rollback journal keeps even
 * readers out for a few ms): the command tries again on short steps, for up to a second, as
 * a busy timeout would have, then fails as it would have.
 */
export async function patiently<T>(ask: () => Eventually<T>): Promise<T> {
  const retry = new LockRetry();
  for (;;) {
    try {
      return await ask();
    } catch (error) {
      const step = retry.stepAfter(error, performance.now(), 1_000);
      if (step === undefined) throw error;
      await new Promise((resolve) => setTimeout(resolve, step));
    }
  }
}

import { dirname, join } from 'node:path';

/*
 * The two parts of the library below its public API that the benchmark times directly (the
 * SQLite store's statements, the clocks they are given), loaded from the built package that
 * `observe-leadership` resolves to: the same files, and so the same classes (one
 * `LeadershipError`), as the workers and the demo use, never a second copy compiled from src/.
 */

type SqliteStoreModule = typeof import('../dist/store/sqlite/sqlite-lease-store');
type ClockModule = typeof import('../dist/core/monotonic-scheduler');

const built = dirname(require.resolve('observe-leadership'));

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a path inside the built package, which its exports do not list
export const { sqliteLeaseStore } = require(join(built, 'store', 'sqlite', 'sqlite-lease-store.js')) as SqliteStoreModule;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- as above
export const { readClocks, monotonicScheduler } = require(join(built, 'core', 'monotonic-scheduler.js')) as ClockModule;

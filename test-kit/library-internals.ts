import { dirname, join } from 'node:path';

/*
 * The parts of the library below its public API that the benchmark times directly (the
 * SQLite store's statements, the clocks they are given) and that the workers drive their
 * own statements with (a SQLite connection of any driver as better-sqlite3's), loaded from the built package that
 * `observe-leadership` resolves to: the same files, and so the same classes (one
 * `LeadershipError`), as the workers and the demo use, never a second copy compiled from src/.
 */

type SqliteStoreModule = typeof import('../dist/store/sqlite/sqlite-lease-store');
type ClockModule = typeof import('../dist/core/monotonic-scheduler');
type DriverModule = typeof import('../dist/store/sqlite/sqlite-driver');

const built = dirname(require.resolve('observe-leadership'));

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a path inside the built package, which its exports do not list
export const { sqliteLeaseStore } = require(join(built, 'store', 'sqlite', 'sqlite-lease-store.js')) as SqliteStoreModule;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- as above
export const { readClocks, monotonicScheduler } = require(join(built, 'core', 'monotonic-scheduler.js')) as ClockModule;
// eslint-disable-next-line @typescript-eslint/no-require-imports -- as above
export const { asBetterSqlite3 } = require(join(built, 'store', 'sqlite', 'sqlite-driver.js')) as DriverModule;
export type { SqliteDatabaseLike, SqliteDriver } from '../dist/store/sqlite/sqlite-driver';

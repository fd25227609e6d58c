import { argumentError, expectObject } from '../core/argument-check';
import type { LeaseReader, LeaseStore } from './lease-store';
import { asBetterSqlite3 } from './sqlite/sqlite-driver';
import { sqliteLeaseStore } from './sqlite/sqlite-lease-store';

/** The operations every store has, and every reader (see {@link LeaseStore}). */
const storeOperations = ['look', 'acquire', 'renew', 'release'] as const;
const readerOperations = ['look'] as const;

/**
 * The one reading of a `db` argument, for candidates (`'store'`: every operation) and
 * observers (`'reader'`: `look`): a lease store is itself; a SQLite connection (any driver:
 * see sqlite-driver.ts) stands for its store, made once per connection (`sqliteLeaseStore`),
 * which touches nothing before its first operation. Anything else is refused with one
 * message, which names what a store lacks when it is almost one.
 */
export function leaseStoreOf(name: string, value: unknown, role: 'store'): LeaseStore;
export function leaseStoreOf(name: string, value: unknown, role: 'reader'): LeaseReader;
export function leaseStoreOf(name: string, value: unknown, role: 'store' | 'reader'): LeaseReader {
  const expected = `a SQLite database (better-sqlite3, node:sqlite or bun:sqlite) or a lease store (clock, ${(role === 'store' ? storeOperations : readerOperations).join(', ')})`;
  const given = expectObject(name, value, expected) as Record<string, unknown>;
  const database = asBetterSqlite3(given);
  if (database !== undefined) return sqliteLeaseStore(database);
  const operations = role === 'store' ? storeOperations : readerOperations;
  const missing = operations.filter((operation) => typeof given[operation] !== 'function');
  const clock = given.clock === 'candidate' || given.clock === 'server';
  if (missing.length === 0 && clock) return value as LeaseReader;
  const almost = storeOperations.some((operation) => typeof given[operation] === 'function');
  if (!almost) throw argumentError(TypeError, name, expected, value);
  const lacks = [...(clock ? [] : ["clock ('candidate' or 'server')"]), ...missing];
  throw new TypeError(`Expected \`${name}\` to be a lease store, got one without ${lacks.join(', ')}`);
}

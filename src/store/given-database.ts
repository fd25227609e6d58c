import type { Database } from 'better-sqlite3';
import { argumentError, expectObject } from '../core/argument-check';
import type { LeaseReader, LeaseStore } from './lease-store';
import { asBetterSqlite3 } from './sqlite/sqlite-driver';

/** The operations every store has, and every reader (see {@link LeaseStore}). */
const storeOperations = ['look', 'acquire', 'renew', 'release'] as const;
const readerOperations = ['look'] as const;

/** What a `db` argument is: a store (or reader) of its own, or a SQLite connection to make one of (as better-sqlite3's `Database`: see sqlite-driver.ts). */
export type GivenDatabase<Store> = { readonly store: Store } | { readonly database: Database };

/**
 * The one test of a `db` argument, for candidates (`'store'`: every operation) and observers
 * (`'reader'`: `look`): a lease store, or else a better-sqlite3 `Database`. Anything else is
 * refused with one message, which names what a store lacks when it is almost one.
 */
export function storeOrDatabase(name: string, value: unknown, role: 'store'): GivenDatabase<LeaseStore>;
export function storeOrDatabase(name: string, value: unknown, role: 'reader'): GivenDatabase<LeaseReader>;
export function storeOrDatabase(name: string, value: unknown, role: 'store' | 'reader'): GivenDatabase<LeaseReader> {
  const expected = `a SQLite database (better-sqlite3, node:sqlite or bun:sqlite) or a lease store (clock, ${(role === 'store' ? storeOperations : readerOperations).join(', ')})`;
  const given = expectObject(name, value, expected) as Record<string, unknown>;
  const database = asBetterSqlite3(given);
  if (database !== undefined) return { database };
  const operations = role === 'store' ? storeOperations : readerOperations;
  const missing = operations.filter((operation) => typeof given[operation] !== 'function');
  const clock = given.clock === 'candidate' || given.clock === 'server';
  if (missing.length === 0 && clock) return { store: value as LeaseReader };
  const almost = storeOperations.some((operation) => typeof given[operation] === 'function');
  if (!almost) throw argumentError(TypeError, name, expected, value);
  const lacks = [...(clock ? [] : ["clock ('candidate' or 'server')"]), ...missing];
  throw new TypeError(`Expected \`${name}\` to be a lease store, got one without ${lacks.join(', ')}`);
}

// Opens a SQLite file with a driver this runtime has, for the examples: bun:sqlite under
// Bun, else better-sqlite3 if it is installed, else node:sqlite (built into Node.js 22.13+,
// nothing to compile). SQLITE_DRIVER=better-sqlite3, node:sqlite or bun:sqlite picks one.
// observe-leadership takes a connection of any of the three as it is; the examples keep to
// what the three share: prepare, then get and run with positional parameters; exec; close.
// @ts-check: typed through JSDoc, checked by `tsc --checkJs` (spec/package.spec.ts)
'use strict';

/**
 * @typedef {object} Statement
 * @property {(...parameters: unknown[]) => any} get the first row, or `undefined` (`null` on bun:sqlite) when there is none
 * @property {(...parameters: unknown[]) => { changes: number | bigint }} run
 */
/**
 * @typedef {object} SqliteFile what the three drivers' connections share
 * @property {(sql: string) => Statement} prepare
 * @property {(sql: string) => void} exec
 * @property {() => void} close
 */

/** @returns {'better-sqlite3' | 'node:sqlite' | 'bun:sqlite'} */
function chosenDriver() {
  const chosen = process.env.SQLITE_DRIVER;
  if (chosen === 'better-sqlite3' || chosen === 'node:sqlite' || chosen === 'bun:sqlite') return chosen;
  if (chosen) throw new Error(`SQLITE_DRIVER must be better-sqlite3, node:sqlite or bun:sqlite, got ${chosen}`);
  if (process.versions.bun) return 'bun:sqlite';
  try {
    require.resolve('better-sqlite3');
    return 'better-sqlite3';
  } catch {
    return 'node:sqlite';
  }
}

/**
 * `file`, with a busy timeout of 1 s for the examples' own statements (the library's never
 * wait: it sets none around them) and, unless read-only, in WAL mode.
 *
 * @param {string} file
 * @param {{ readonly?: boolean }} [options] read-only: the file must exist (a candidate, or
 *   `npx observe-leadership init`, made it)
 * @returns {SqliteFile}
 */
function openSqlite(file, { readonly = false } = {}) {
  const driver = chosenDriver();
  /** @type {SqliteFile} */
  let db;
  if (driver === 'better-sqlite3') {
    // Typed as the drivers' common part, like the two below (its own types are stricter).
    const Database = /** @type {any} */ (require('better-sqlite3'));
    db = new Database(file, { readonly, fileMustExist: readonly });
  } else if (driver === 'node:sqlite') {
    /** @type {any} node:sqlite is not in this project's Node.js 20 types */
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite');
    db = new DatabaseSync(file, { readOnly: readonly });
  } else {
    const { Database } = require(/** @type {any} */ ('bun:sqlite'));
    db = new Database(file, readonly ? { readonly: true } : { create: true, readwrite: true });
  }
  db.exec('PRAGMA busy_timeout = 1000');
  if (!readonly) db.exec('PRAGMA journal_mode = WAL');
  return db;
}

module.exports = { openSqlite };

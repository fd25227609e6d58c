// Opens a SQLite file with a driver this runtime has, for the examples: bun:sqlite under
// Bun, else better-sqlite3 if it loads, else node:sqlite (built into Node.js 22.13+, nothing
// to compile). SQLITE_DRIVER=better-sqlite3, node:sqlite or bun:sqlite picks one. Without
// any, it says in one line what to install.
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

/**
 * The drivers to try, in order: the one SQLITE_DRIVER names, else bun:sqlite under Bun, else
 * better-sqlite3 and then node:sqlite.
 *
 * @returns {Array<'better-sqlite3' | 'node:sqlite' | 'bun:sqlite'>}
 */
function driversToTry() {
  const chosen = process.env.SQLITE_DRIVER;
  if (chosen === 'better-sqlite3' || chosen === 'node:sqlite' || chosen === 'bun:sqlite') return [chosen];
  if (chosen) throw new Error(`SQLITE_DRIVER must be better-sqlite3, node:sqlite or bun:sqlite, got ${chosen}`);
  return process.versions.bun ? ['bun:sqlite'] : ['better-sqlite3', 'node:sqlite'];
}

/**
 * Opens `file` with `driver`, or says why it cannot.
 *
 * @param {'better-sqlite3' | 'node:sqlite' | 'bun:sqlite'} driver
 * @param {string} file
 * @param {boolean} readonly
 * @returns {{ db: SqliteFile } | { failure: string }}
 */
function openWith(driver, file, readonly) {
  let open;
  try {
    if (driver === 'better-sqlite3') {
      // Typed as the drivers' common part, like the two below (its own types are stricter).
      const Database = /** @type {any} */ (require('better-sqlite3'));
      open = () => new Database(file, { readonly, fileMustExist: readonly });
    } else if (driver === 'node:sqlite') {
      /** @type {any} node:sqlite is not in this project's Node.js 20 types */
      const sqlite = process.getBuiltinModule?.('node:sqlite');
      if (!sqlite) return { failure: 'no node:sqlite here' };
      open = () => new sqlite.DatabaseSync(file, { readOnly: readonly });
    } else {
      const { Database } = require(/** @type {any} */ ('bun:sqlite'));
      open = () => new Database(file, readonly ? { readonly: true } : { create: true, readwrite: true });
    }
  } catch (error) {
    return { failure: /** @type {Error} */ (error).message.split('\n')[0] };
  }
  return { db: open() };
}

/** The one line that says what to install on this runtime, when no driver loads. */
function whatToInstall() {
  if (process.versions.bun) return `bun:sqlite does not load on Bun ${process.versions.bun}`;
  let installed = false;
  try {
    require.resolve('better-sqlite3');
    installed = true;
  } catch {
    // Not installed.
  }
  const newer = 'or run on Node.js 22.13 or later, which has node:sqlite built in';
  return installed
    ? `better-sqlite3 is installed but does not load on Node.js ${process.version}: npm rebuild better-sqlite3, ${newer}`
    : `Node.js ${process.version} has no node:sqlite: npm install better-sqlite3, ${newer}`;
}

/**
 * `file`, with a busy timeout of 1 s for the examples' own statements (the library's never
 * wait: it sets none around them) and, unless read-only, in WAL mode. Without a driver that
 * loads, it says in one line what to install on this runtime, and ends the process.
 *
 * @param {string} file
 * @param {{ readonly?: boolean }} [options] read-only: the file must exist (a candidate, or
 *   `npx observe-leadership init`, made it)
 * @returns {SqliteFile}
 */
function openSqlite(file, { readonly = false } = {}) {
  const drivers = driversToTry();
  for (const driver of drivers) {
    const opened = openWith(driver, file, readonly);
    if ('db' in opened) {
      opened.db.exec('PRAGMA busy_timeout = 1000');
      if (!readonly) opened.db.exec('PRAGMA journal_mode = WAL');
      return opened.db;
    }
    if (drivers.length === 1) {
      const install = driver === 'better-sqlite3' ? ': npm install better-sqlite3' : '';
      console.error(`no SQLite driver: SQLITE_DRIVER=${driver} does not load here (${opened.failure})${install}`);
      process.exit(1);
    }
  }
  console.error(`no SQLite driver: ${whatToInstall()}`);
  process.exit(1);
}

module.exports = { openSqlite };

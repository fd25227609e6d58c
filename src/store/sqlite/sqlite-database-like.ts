/**
 * A SQLite connection of any of the three drivers the library takes, recognised at run time:
 * better-sqlite3's `Database`, node:sqlite's `DatabaseSync` (Node.js 22.13+) and bun:sqlite's
 * `Database`. Named structurally, so that the declarations need none of the drivers' types.
 */
export interface SqliteDatabaseLike {
  /** Prepares a statement (the library prepares its own on your connection). */
  prepare(sql: string): unknown;
  /** Runs SQL text (the library sets the busy timeout around its own statements with it). */
  exec(sql: string): unknown;
  /** Closes the connection: the library's operations on it then end with `DATABASE_CLOSED`. */
  close(): unknown;
}

/**
 * Opening the history file: its modes and links checked (`files.ts`), the
 * connection's settings, and the migrations it lacks (`schema.ts`).
 */
import { DatabaseSync } from "node:sqlite";
import { AssistantError } from "../base/errors.ts";
import { prepareFiles, secureSidecars } from "./files.ts";
import { migrate } from "./schema.ts";

/** Milliseconds a statement waits for a lock held by another connection. */
export const BUSY_TIMEOUT_MS = 5000;

/** Whether `path` names a file rather than SQLite's in-memory database. */
function onDisk(path: string): boolean {
  return path !== ":memory:" && path !== "";
}

/**
 * Opens (creating when absent) the history at `path`, migrated to this
 * code's schema; `:memory:` for one that lives in memory. `prepare` runs on
 * the fresh connection: when it throws, the connection is closed.
 */
export function openHistory<T>(
  path: string,
  prepare: (db: DatabaseSync) => T,
): { db: DatabaseSync; prepared: T } {
  const file = onDisk(path);
  if (file) prepareFiles(path);
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path);
  } catch (error) {
    throw new AssistantError(
      `Cannot open the history database ${path}; check that it is a SQLite file the daemon may read and write.`,
      { cause: error },
    );
  }
  try {
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");
    // Checkpoints are upkeep's (see store.ts), never a commit's.
    db.exec("PRAGMA wal_autocheckpoint = 0");
    migrate(db, path);
    mergesByUpkeep(db);
    if (file) secureSidecars(path);
    return { db, prepared: prepare(db) };
  } catch (error) {
    db.close();
    if (error instanceof AssistantError) throw error;
    throw new AssistantError(
      `Cannot use the history database ${path}; if it is not a SQLite file, move it aside.`,
      { cause: error },
    );
  }
}

/**
 * FTS5 merges are upkeep's, never a commit's (see store.ts): automerge off in
 * each index's config. `turns_fts` has it from its migration; `files_fts`,
 * made later, gets it here, once (the setting stays in the file).
 */
function mergesByUpkeep(db: DatabaseSync): void {
  const set = db.prepare(
    "SELECT v FROM files_fts_config WHERE k = 'automerge'",
  ).get()?.v;
  if (set === 0) return;
  db.exec("INSERT INTO files_fts(files_fts, rank) VALUES ('automerge', 0)");
}

/**
 * The history's SQL: the schema and its forward migrations, the statements
 * the store prepares, and the integrity checks `check` and tests run.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { AssistantError } from "../base/errors.ts";
import { log } from "../base/log.ts";

/**
 * Forward migrations: entry i takes `user_version` from i to i + 1. Append
 * only; a released entry never changes.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE conversations(id INTEGER PRIMARY KEY, title TEXT,
                              created INTEGER, updated INTEGER);
   CREATE TABLE turns(id INTEGER PRIMARY KEY,
                      conv INTEGER REFERENCES conversations ON DELETE CASCADE,
                      seq INTEGER, user TEXT, reply TEXT,
                      tools TEXT,
                      messages TEXT);
   CREATE INDEX turns_conv_seq ON turns(conv, seq);
   CREATE INDEX conversations_updated ON conversations(updated, id);
   CREATE VIRTUAL TABLE turns_fts USING fts5(user, reply, content='turns',
       content_rowid='id', tokenize='unicode61 remove_diacritics 2',
       prefix='1 2 3 4');
   CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
     INSERT INTO turns_fts(rowid, user, reply)
       VALUES (new.id, new.user, new.reply);
   END;
   CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
     INSERT INTO turns_fts(turns_fts, rowid, user, reply)
       VALUES ('delete', old.id, old.user, old.reply);
   END;
   CREATE TRIGGER turns_au AFTER UPDATE OF user, reply ON turns BEGIN
     INSERT INTO turns_fts(turns_fts, rowid, user, reply)
       VALUES ('delete', old.id, old.user, old.reply);
     INSERT INTO turns_fts(rowid, user, reply)
       VALUES (new.id, new.user, new.reply);
   END;`,
  // Files made before the index joined the first schema list by a full scan.
  `CREATE INDEX IF NOT EXISTS conversations_updated ON conversations(updated, id);`,
  // Deletes answer at once and leave the per-turn index work to upkeep; FTS5
  // merges move to upkeep too (automerge = 0 is kept in turns_fts_config).
  `CREATE TABLE deleted_conversations(
     id INTEGER PRIMARY KEY REFERENCES conversations ON DELETE CASCADE);
   INSERT INTO turns_fts(turns_fts, rank) VALUES ('automerge', 0);`,
  // Ids never come back after a delete (a client holding an old list must
  // not open or delete a stranger): AUTOINCREMENT, which needs the table
  // rebuilt. migrate() lifts the foreign keys around it, so the DROP leaves
  // turns and deleted_conversations alone; their REFERENCES name the table,
  // which the rename brings back. sqlite_sequence starts at the highest id
  // kept (an id deleted before this version was recorded nowhere).
  `CREATE TABLE conversations_v4(id INTEGER PRIMARY KEY AUTOINCREMENT,
                                 title TEXT, created INTEGER, updated INTEGER);
   INSERT INTO conversations_v4(id, title, created, updated)
     SELECT id, title, created, updated FROM conversations;
   DROP TABLE conversations;
   ALTER TABLE conversations_v4 RENAME TO conversations;
   CREATE INDEX conversations_updated ON conversations(updated, id);`,
  // Each turn records when it was saved (`at`, Unix seconds). Turns saved
  // before take their conversation's `updated` as it was then, kept once per
  // conversation in `legacy_at`, so no turn row is rewritten here.
  `ALTER TABLE turns ADD COLUMN at INTEGER;
   ALTER TABLE conversations ADD COLUMN legacy_at INTEGER;
   UPDATE conversations SET legacy_at = updated;`,
  // Each turn's size in the model's tokens, measured when it was saved; NULL
  // for turns saved before, which the reply loop estimates instead.
  `ALTER TABLE turns ADD COLUMN tokens INTEGER;`,
];

/** The schema version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** The store's prepared statements. */
export interface Statements {
  begin: StatementSync;
  createConversation: StatementSync;
  touchConversation: StatementSync;
  nextSeq: StatementSync;
  insertTurn: StatementSync;
  lastTurn: StatementSync;
  setTokens: StatementSync;
  replaceTurn: StatementSync;
  rename: StatementSync;
  record: StatementSync;
  recordTurns: StatementSync;
  list: StatementSync;
  turnsOf: StatementSync;
  exists: StatementSync;
  markDeleted: StatementSync;
  nextDeleted: StatementSync;
  dropLastTurns: StatementSync;
  anyTurn: StatementSync;
  dropConversation: StatementSync;
  structure: StatementSync;
  merge: StatementSync;
  checkpoint: StatementSync;
}

/** Prepares every statement of the store on its connection. */
export function prepareStatements(db: DatabaseSync): Statements {
  // A conversation in deleted_conversations is gone for every read.
  const live = "id NOT IN (SELECT id FROM deleted_conversations)";
  return {
    begin: db.prepare("BEGIN IMMEDIATE"),
    createConversation: db.prepare(
      "INSERT INTO conversations(title, created, updated) VALUES (?, ?, ?)",
    ),
    touchConversation: db.prepare(
      `UPDATE conversations SET updated = ? WHERE id = ? AND ${live}`,
    ),
    nextSeq: db.prepare(
      "SELECT coalesce(max(seq), 0) + 1 AS seq FROM turns WHERE conv = ?",
    ),
    insertTurn: db.prepare(
      `INSERT INTO turns(conv, seq, user, reply, tools, messages, at, tokens)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    lastTurn: db.prepare(
      `SELECT id, seq, user FROM turns WHERE conv = ?
       ORDER BY seq DESC, id DESC LIMIT 1`,
    ),
    setTokens: db.prepare("UPDATE turns SET tokens = ? WHERE id = ?"),
    // The row keeps its id and seq; the update trigger re-indexes its text.
    replaceTurn: db.prepare(
      `UPDATE turns SET user = ?, reply = ?, tools = ?, messages = ?, at = ?,
                        tokens = ?
       WHERE id = ?`,
    ),
    rename: db.prepare(
      `UPDATE conversations SET title = ? WHERE id = ? AND ${live}`,
    ),
    record: db.prepare(
      `SELECT title, created, updated, coalesce(legacy_at, updated) AS legacy
       FROM conversations WHERE id = ? AND ${live}`,
    ),
    recordTurns: db.prepare(
      `SELECT id, user, reply, tools, at FROM turns
       WHERE conv = ? ORDER BY seq, id`,
    ),
    list: db.prepare(
      `SELECT id, title, updated FROM conversations WHERE ${live}
       ORDER BY updated DESC, id DESC LIMIT ?`,
    ),
    turnsOf: db.prepare(
      `SELECT id, user, reply, tools, messages, tokens FROM turns
       WHERE conv = ? ORDER BY seq, id`,
    ),
    exists: db.prepare(
      `SELECT 1 FROM conversations WHERE id = ? AND ${live}`,
    ),
    markDeleted: db.prepare(
      `INSERT OR IGNORE INTO deleted_conversations(id)
       SELECT id FROM conversations WHERE id = ?`,
    ),
    nextDeleted: db.prepare("SELECT id FROM deleted_conversations LIMIT 1"),
    // The ?2 newest turns, in one statement: FTS5 writes its pending
    // entries out at every statement (savepoint), so a statement per turn
    // would cost a segment per turn. The ids come from the (conv, seq) index
    // and go by rowid; a turn whose seq is damaged (NULL) goes too, so the
    // drain always ends.
    dropLastTurns: db.prepare(
      `DELETE FROM turns WHERE id IN (
         SELECT id FROM turns WHERE conv = ?1
         ORDER BY seq DESC, id DESC LIMIT ?2)`,
    ),
    anyTurn: db.prepare("SELECT 1 FROM turns WHERE conv = ? LIMIT 1"),
    dropConversation: db.prepare("DELETE FROM conversations WHERE id = ?"),
    // FTS5's structure record: the index's levels and segments.
    structure: db.prepare("SELECT block FROM turns_fts_data WHERE id = 10"),
    merge: db.prepare(
      "INSERT INTO turns_fts(turns_fts, rank) VALUES ('merge', ?)",
    ),
    checkpoint: db.prepare("PRAGMA wal_checkpoint(PASSIVE)"),
  };
}

/**
 * Applies the migrations the file lacks, each in its own transaction, up to
 * `target` (this code's version unless a test makes an older file).
 */
export function migrate(
  db: DatabaseSync,
  path: string,
  target: number = MIGRATIONS.length,
): void {
  const version = Number(
    db.prepare("PRAGMA user_version").get()?.user_version ?? 0,
  );
  if (version > MIGRATIONS.length) {
    throw new AssistantError(
      `The history database ${path} has schema version ${version}, newer than this daemon's ${MIGRATIONS.length}; upgrade the daemon.`,
    );
  }
  if (version >= target) return;
  // A migration may rebuild a table others reference, which with foreign
  // keys on would cascade its DROP into theirs: SQLite's way is to lift them
  // for the change (they cannot change inside a transaction) and check every
  // key before the commit instead.
  const enforced =
    Number(db.prepare("PRAGMA foreign_keys").get()?.foreign_keys) === 1;
  if (enforced) db.exec("PRAGMA foreign_keys = OFF");
  try {
    for (let v = version; v < target; v++) {
      db.exec("BEGIN IMMEDIATE");
      try {
        db.exec(MIGRATIONS[v] ?? "");
        const broken = db.prepare("PRAGMA foreign_key_check").all();
        if (broken.length > 0) {
          throw new Error(
            `${broken.length} rows would break a foreign key, the first in ${
              String(broken[0]?.table)
            }`,
          );
        }
        db.exec(`PRAGMA user_version = ${v + 1}`);
        db.exec("COMMIT");
      } catch (error) {
        if (db.isTransaction) db.exec("ROLLBACK");
        throw new AssistantError(
          `Cannot migrate the history database ${path} to schema version ${
            v + 1
          }; restore it from a backup or move it aside.`,
          { cause: error },
        );
      }
      log.info("history schema migrated", { version: v + 1 });
    }
  } finally {
    if (enforced) db.exec("PRAGMA foreign_keys = ON");
  }
}

/**
 * SQLite's integrity and foreign key checks, and with `fullText` FTS5's
 * (which writes, so it needs a writable connection and the write lock).
 */
export function integrityProblems(
  db: DatabaseSync,
  options: { fullText: boolean },
): string[] {
  const problems: string[] = [];
  for (const row of db.prepare("PRAGMA integrity_check").all()) {
    const text = String(Object.values(row)[0]);
    if (text !== "ok") problems.push(text);
  }
  for (const row of db.prepare("PRAGMA foreign_key_check").all()) {
    problems.push(
      `foreign key: ${String(row.table)} row ${
        String(row.rowid)
      } names a missing ${String(row.parent)} row`,
    );
  }
  if (!options.fullText) return problems;
  try {
    // rank 1 also compares the index with the turns table it mirrors.
    db.exec(
      "INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)",
    );
  } catch (error) {
    problems.push(
      `full-text index: ${error instanceof Error ? error.message : error}`,
    );
  }
  return problems;
}

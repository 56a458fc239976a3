/**
 * The history's schema: its forward migrations, and the integrity checks
 * `check` and tests run. The statements the store prepares on it are in
 * `statements.ts`.
 */
import type { DatabaseSync } from "node:sqlite";
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
  // A conversation's running summary of the turns that left the history
  // window: its text, how many first turns it covers and its size in the
  // model's tokens (NULL when unknown); gone with its conversation. Titles
  // made before default titles were cut (one huge first word) are cut as
  // they are now: only a default title could be longer than 200 characters.
  // Also what was learnt of each model's prompt cache: whether llama-server
  // shifts it past a span removed from the prompt (n_cache_reuse), found
  // from the cache_n it reported once a conversation's window moved.
  `CREATE TABLE summaries(
     conv INTEGER PRIMARY KEY REFERENCES conversations ON DELETE CASCADE,
     text TEXT NOT NULL, turns INTEGER NOT NULL, tokens INTEGER);
   CREATE TABLE IF NOT EXISTS model_cache(model TEXT PRIMARY KEY,
     shifts INTEGER NOT NULL, learned INTEGER NOT NULL);
   UPDATE conversations SET title = rtrim(substr(title, 1, 200))
     WHERE length(title) > 200;`,
  // Files sent with a question, in order (`idx`): what each became (`kind`
  // text, image or converted), the text it gave the question (searched by
  // name and text in files_fts) and a picture's bytes; gone with their turn.
  `CREATE TABLE turn_files(id INTEGER PRIMARY KEY,
     turn INTEGER NOT NULL REFERENCES turns ON DELETE CASCADE,
     idx INTEGER NOT NULL, name TEXT NOT NULL, mime TEXT NOT NULL,
     bytes INTEGER NOT NULL, kind TEXT NOT NULL, text TEXT, data BLOB);
   CREATE INDEX turn_files_turn ON turn_files(turn, idx);
   CREATE VIRTUAL TABLE files_fts USING fts5(name, text, content='turn_files',
       content_rowid='id', tokenize='unicode61 remove_diacritics 2',
       prefix='1 2 3 4');
   CREATE TRIGGER turn_files_ai AFTER INSERT ON turn_files BEGIN
     INSERT INTO files_fts(rowid, name, text)
       VALUES (new.id, new.name, new.text);
   END;
   CREATE TRIGGER turn_files_ad AFTER DELETE ON turn_files BEGIN
     INSERT INTO files_fts(files_fts, rowid, name, text)
       VALUES ('delete', old.id, old.name, old.text);
   END;`,
  // What the user let the assistant remember: short facts, each with the
  // conversation and turn it came from (the conversation's gone: NULL), and
  // the facts the user refused, by their text folded (case and spacing), so
  // none is proposed again. Each conversation records how many of its turns
  // were read for facts to propose.
  `CREATE TABLE memories(id INTEGER PRIMARY KEY AUTOINCREMENT,
     text TEXT NOT NULL, created INTEGER NOT NULL, updated INTEGER NOT NULL,
     conv INTEGER REFERENCES conversations ON DELETE SET NULL, turn INTEGER);
   CREATE INDEX memories_updated ON memories(updated, id);
   CREATE TABLE refused(folded TEXT PRIMARY KEY, text TEXT NOT NULL,
     at INTEGER NOT NULL);
   ALTER TABLE conversations ADD COLUMN memory_read INTEGER NOT NULL DEFAULT 0;`,
  // Each turn's vector for search by meaning, with the embedding model that
  // made it and its dimension (a new model makes them again); gone with its
  // turn.
  `CREATE TABLE vectors(turn INTEGER PRIMARY KEY REFERENCES turns ON DELETE CASCADE,
     model TEXT NOT NULL, dim INTEGER NOT NULL, data BLOB NOT NULL);
   CREATE INDEX vectors_model ON vectors(model);`,
  // The memories a conversation's requests carry, kept with it from its
  // first save (text and how many memories it holds), so the system message
  // stays the one its first request sent after a restart too; NULL for a
  // conversation saved before, which carries none.
  `ALTER TABLE conversations ADD COLUMN memory_block TEXT;
   ALTER TABLE conversations ADD COLUMN memory_count INTEGER NOT NULL DEFAULT 0;`,
];

/** The schema version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

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
  for (const index of ["turns_fts", "files_fts"]) {
    try {
      // rank 1 also compares the index with the table it mirrors.
      db.exec(
        `INSERT INTO ${index}(${index}, rank) VALUES ('integrity-check', 1)`,
      );
    } catch (error) {
      problems.push(
        `full-text index ${index}: ${
          error instanceof Error ? error.message : error
        }`,
      );
    }
  }
  return problems;
}

/**
 * The statements the store and its upkeep run, prepared once per connection
 * on the schema of `schema.ts`.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

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
  countTurns: StatementSync;
  summaryOf: StatementSync;
  setSummary: StatementSync;
  dropSummary: StatementSync;
  cacheShift: StatementSync;
  setCacheShift: StatementSync;
  nextDeleted: StatementSync;
  dropLastTurns: StatementSync;
  anyTurn: StatementSync;
  dropConversation: StatementSync;
  structure: StatementSync;
  merge: StatementSync;
  filesStructure: StatementSync;
  mergeFiles: StatementSync;
  checkpoint: StatementSync;
}

/** Prepares every statement of the store on its connection. */
export function prepareStatements(db: DatabaseSync): Statements {
  // A conversation in deleted_conversations is gone for every read.
  const live = "id NOT IN (SELECT id FROM deleted_conversations)";
  return {
    begin: db.prepare("BEGIN IMMEDIATE"),
    createConversation: db.prepare(
      `INSERT INTO conversations(title, created, updated, memory_block,
         memory_count) VALUES (?, ?, ?, ?, ?)`,
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
    countTurns: db.prepare("SELECT count(*) AS n FROM turns WHERE conv = ?"),
    summaryOf: db.prepare(
      `SELECT text, turns, tokens FROM summaries
       WHERE conv = ? AND conv NOT IN (SELECT id FROM deleted_conversations)`,
    ),
    cacheShift: db.prepare(
      "SELECT shifts, learned FROM model_cache WHERE model = ?",
    ),
    setCacheShift: db.prepare(
      "INSERT INTO model_cache(model, shifts, learned) VALUES (?, ?, ?) " +
        "ON CONFLICT(model) DO UPDATE SET shifts = excluded.shifts, learned = excluded.learned",
    ),
    setSummary: db.prepare(
      `INSERT INTO summaries(conv, text, turns, tokens) VALUES (?, ?, ?, ?)
       ON CONFLICT(conv) DO UPDATE SET text = excluded.text,
         turns = excluded.turns, tokens = excluded.tokens`,
    ),
    dropSummary: db.prepare("DELETE FROM summaries WHERE conv = ?"),
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
    filesStructure: db.prepare(
      "SELECT block FROM files_fts_data WHERE id = 10",
    ),
    mergeFiles: db.prepare(
      "INSERT INTO files_fts(files_fts, rank) VALUES ('merge', ?)",
    ),
    checkpoint: db.prepare("PRAGMA wal_checkpoint(PASSIVE)"),
  };
}

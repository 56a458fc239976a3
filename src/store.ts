/**
 * The history: conversations and their turns in one SQLite file with an
 * FTS5 index, written through this one connection.
 *
 * The file is personal data: its directory is kept 0700 and the file (with
 * its -wal and -shm) 0600 on every open, and a symbolic link in their place
 * is refused rather than followed.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { dirname } from "node:path";
import type { ChatMessage } from "./chat_types.ts";
import { AssistantError } from "./errors.ts";
import { log } from "./log.ts";
import type { TurnView } from "./protocol.ts";
import {
  prepareSearch,
  type Search,
  type SearchHit,
  type SearchOptions,
} from "./search.ts";

export type { SearchHit } from "./search.ts";

/** One finished turn, as saved at its `done`. */
export interface StoredTurn {
  user: string;
  reply: string;
  tools: string[];
  messages: ChatMessage[];
}

/** One row of the conversation list; `updated` is in Unix seconds. */
export interface ConversationItem {
  id: number;
  title: string;
  updated: number;
}

/** A conversation loaded back: turns for clients, messages per turn for the model. */
export interface OpenedConversation {
  id: number;
  turns: TurnView[];
  messages: ChatMessage[][];
}

/** Injected dependencies and tuning of a store. */
export interface StoreOptions {
  /** Clock in milliseconds; defaults to `Date.now`. */
  now?: () => number;
  /** Matching turns search ranks exactly before only the newest count (see src/search.ts). */
  rankCap?: number;
  /** Milliseconds a search spends collecting matches (see src/search.ts). */
  budgetMs?: number;
}

/** Words of the first question that make a conversation's title. */
const TITLE_WORDS = 6;

/** Default number of results of `search`. */
const DEFAULT_SEARCH_LIMIT = 50;

/** Milliseconds a statement waits for a lock held by another connection. */
const BUSY_TIMEOUT_MS = 5000;

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
];

/** The schema version this code writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** A conversation's title: the first words of its first question. */
export function titleOf(user: string): string {
  return user.trim().split(/\s+/).slice(0, TITLE_WORDS).join(" ");
}

/** The history database. */
export class Store implements Disposable {
  /** The database file (or `:memory:`). */
  readonly path: string;
  #db: DatabaseSync;
  #now: () => number;
  #statements = new Map<string, StatementSync>();
  #search: Search;

  /** Opens (creating when absent) the history at `path`; `:memory:` for a private one. */
  constructor(path: string, options: StoreOptions = {}) {
    this.path = path;
    this.#now = options.now ?? Date.now;
    const onDisk = path !== ":memory:" && path !== "";
    if (onDisk) prepareFiles(path);
    try {
      this.#db = new DatabaseSync(path);
    } catch (error) {
      throw new AssistantError(
        `Cannot open the history database ${path}; check that it is a SQLite file the daemon may read and write.`,
        { cause: error },
      );
    }
    try {
      this.#db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      this.#db.exec("PRAGMA journal_mode = WAL");
      this.#db.exec("PRAGMA synchronous = FULL");
      this.#db.exec("PRAGMA foreign_keys = ON");
      migrate(this.#db, path);
      if (onDisk) secureSidecars(path);
      const tuning: SearchOptions = {};
      if (options.rankCap !== undefined) tuning.rankCap = options.rankCap;
      if (options.budgetMs !== undefined) tuning.budgetMs = options.budgetMs;
      this.#search = prepareSearch(this.#db, tuning);
    } catch (error) {
      this.#db.close();
      if (error instanceof AssistantError) throw error;
      throw new AssistantError(
        `Cannot use the history database ${path}; if it is not a SQLite file, move it aside.`,
        { cause: error },
      );
    }
  }

  /** Saves one turn in one transaction; returns its conversation id (new when `conversation` is null). */
  saveTurn(conversation: number | null, turn: StoredTurn): number {
    const now = Math.floor(this.#now() / 1000);
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      let id: number;
      if (conversation === null) {
        const created = this.#statement(
          "INSERT INTO conversations(title, created, updated) VALUES (?, ?, ?)",
        ).run(titleOf(turn.user), now, now);
        id = Number(created.lastInsertRowid);
      } else {
        const touched = this.#statement(
          "UPDATE conversations SET updated = ? WHERE id = ?",
        ).run(now, conversation);
        if (Number(touched.changes) === 0) {
          throw new AssistantError("no such conversation");
        }
        id = conversation;
      }
      const next = this.#statement(
        "SELECT coalesce(max(seq), 0) + 1 AS seq FROM turns WHERE conv = ?",
      ).get(id);
      this.#statement(
        `INSERT INTO turns(conv, seq, user, reply, tools, messages)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        Number(next?.seq ?? 1),
        turn.user,
        turn.reply,
        JSON.stringify(turn.tools),
        JSON.stringify(turn.messages),
      );
      this.#db.exec("COMMIT");
      return id;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Conversations, most recently updated first (ties: newest id first); all when `limit` is absent. */
  list(limit?: number): ConversationItem[] {
    const rows = this.#statement(
      `SELECT id, title, updated FROM conversations
       ORDER BY updated DESC, id DESC LIMIT ?`,
    ).all(limit === undefined ? -1 : Math.max(0, Math.floor(limit)));
    return rows.map((row) => ({
      id: Number(row.id),
      title: String(row.title ?? ""),
      updated: Number(row.updated ?? 0),
    }));
  }

  /** Loads every turn of a conversation, in order; null when there is no such conversation. */
  open(id: number): OpenedConversation | null {
    if (!this.exists(id)) return null;
    const rows = this.#statement(
      `SELECT id, user, reply, tools, messages FROM turns
       WHERE conv = ? ORDER BY seq, id`,
    ).all(id);
    const turns: TurnView[] = [];
    const messages: ChatMessage[][] = [];
    for (const row of rows) {
      const user = String(row.user ?? "");
      const reply = String(row.reply ?? "");
      turns.push({ user, reply, tools: parseTools(row.tools, Number(row.id)) });
      messages.push(
        parseMessages(row.messages, Number(row.id), user, reply),
      );
    }
    return { id, turns, messages };
  }

  /** Whether a conversation with this id exists. */
  exists(id: number): boolean {
    return this.#statement("SELECT 1 FROM conversations WHERE id = ?")
      .get(id) !== undefined;
  }

  /** Searches questions and replies (see src/search.ts for the rule); never raises for any text. */
  search(q: string, limit: number = DEFAULT_SEARCH_LIMIT): SearchHit[] {
    return this.#search(q, limit);
  }

  /** Deletes a conversation and its turns; false when there is no such conversation. */
  delete(id: number): boolean {
    const result = this.#statement("DELETE FROM conversations WHERE id = ?")
      .run(id);
    return Number(result.changes) > 0;
  }

  /** The problems found by SQLite's and FTS5's integrity checks; empty when the file is sound. */
  integrityCheck(): string[] {
    return integrityProblems(this.#db, { fullText: true });
  }

  /** Closes the database; later calls do nothing. */
  close(): void {
    if (!this.#db.isOpen) return;
    this.#statements.clear();
    try {
      this.#db.exec("PRAGMA optimize");
    } catch {
      // Only a planner hint: closing matters more.
    }
    this.#db.close();
  }

  /** Closes the database. */
  [Symbol.dispose](): void {
    this.close();
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}

/** Applies the migrations the file lacks, each in its own transaction. */
function migrate(db: DatabaseSync, path: string): void {
  const version = Number(
    db.prepare("PRAGMA user_version").get()?.user_version ?? 0,
  );
  if (version > MIGRATIONS.length) {
    throw new AssistantError(
      `The history database ${path} has schema version ${version}, newer than this daemon's ${MIGRATIONS.length}; upgrade the daemon.`,
    );
  }
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(MIGRATIONS[v] ?? "");
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
}

/** Creates the data directory 0700 and the file 0600 before SQLite touches them. */
function prepareFiles(path: string): void {
  const dir = dirname(path);
  try {
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
    Deno.chmodSync(dir, 0o700);
  } catch (error) {
    throw new AssistantError(
      `Cannot create the history directory ${dir} with mode 0700; check its owner and permissions.`,
      { cause: error },
    );
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) refuseLink(file);
  try {
    // createNew is O_EXCL: it neither follows a link nor replaces a file.
    Deno.openSync(path, { createNew: true, write: true, mode: 0o600 }).close();
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) {
      throw new AssistantError(
        `Cannot create the history database ${path}; check the permissions of ${dir}.`,
        { cause: error },
      );
    }
  }
  refuseLink(path);
  try {
    Deno.chmodSync(path, 0o600);
  } catch (error) {
    throw new AssistantError(
      `Cannot set mode 0600 on the history database ${path}; check its owner.`,
      { cause: error },
    );
  }
}

/** Tightens -wal and -shm, which SQLite creates at open. */
function secureSidecars(path: string): void {
  for (const file of [`${path}-wal`, `${path}-shm`]) {
    if (refuseLink(file)) Deno.chmodSync(file, 0o600);
  }
}

/** Throws when `file` is a symbolic link or not a regular file; returns whether it exists. */
function refuseLink(file: string): boolean {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw new AssistantError(
      `Cannot inspect ${file}; check the permissions of its directory.`,
      { cause: error },
    );
  }
  if (info.isSymlink) {
    throw new AssistantError(
      `History file ${file} is a symbolic link; it is not followed. Move the real file to that path or remove the link.`,
    );
  }
  if (!info.isFile) {
    throw new AssistantError(
      `History file ${file} is not a regular file; move it aside.`,
    );
  }
  return true;
}

function parseTools(value: unknown, turn: number): string[] {
  try {
    const parsed: unknown = JSON.parse(String(value));
    if (
      Array.isArray(parsed) && parsed.every((t) => typeof t === "string")
    ) {
      return parsed;
    }
  } catch {
    // Reported below; a damaged list must not hide the turn.
  }
  log.warn("history turn has unreadable tools", { turn });
  return [];
}

function parseMessages(
  value: unknown,
  turn: number,
  user: string,
  reply: string,
): ChatMessage[] {
  try {
    const parsed: unknown = JSON.parse(String(value));
    if (Array.isArray(parsed)) return parsed as ChatMessage[];
  } catch {
    // Reported below; the question and reply still make a usable history.
  }
  log.warn("history turn has unreadable messages", { turn });
  return [
    { role: "user", content: user },
    { role: "assistant", content: reply },
  ];
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

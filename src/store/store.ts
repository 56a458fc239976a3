/**
 * The history: conversations and their turns in one SQLite file with an
 * FTS5 index, written through this one connection.
 *
 * A save or a delete commits only what the client waits for; the rest is
 * upkeep that the store runs itself shortly after, in small steps between
 * other work (see `maintain`):
 * - Checkpoints. SQLite's automatic checkpoint would copy the WAL into the
 *   database (and, with synchronous=FULL, fsync it) inside whichever commit
 *   crosses its threshold; here it is off, and upkeep runs a PASSIVE
 *   checkpoint every few commits instead, so the WAL stays short.
 * - FTS5 merges. Each commit adds an index segment; FTS5's automerge would
 *   merge segments inside some commits (tens of ms). Here automerge is off
 *   and upkeep merges a bounded number of pages per step, so the segment
 *   count stays bounded all the same.
 * - Deleted conversations. `delete` only records the conversation in
 *   `deleted_conversations` (every read skips those); upkeep then deletes
 *   its turns a batch at a time, the triggers taking each out of the index,
 *   and finally its row. Turns and index agree at every commit, so a crash
 *   at any point leaves a consistent file whose next open resumes the work.
 *
 * The file is personal data: modes enforced, a symbolic link refused
 * (`files.ts`). Also here: `connection.ts`, `schema.ts` (migrations),
 * `statements.ts`, `rows.ts`, `summaries.ts`, `turn_files.ts`, `memories.ts`.
 */
import type { DatabaseSync } from "node:sqlite";
import { AssistantError } from "../base/errors.ts";
import { openHistory } from "./connection.ts";
import {
  type ConversationItem,
  type ConversationRecord,
  type OpenedConversation,
  openedTurns,
  recordedTurn,
  type StoredSummary,
  type StoredTurn,
} from "./rows.ts";
import {
  prepareSearch,
  type Search,
  type SearchHit,
  type SearchOptions,
} from "./search.ts";
import { integrityProblems } from "./schema.ts";
import { prepareStatements, type Statements } from "./statements.ts";
import { checkSummary, readSummary, writeSummary } from "./summaries.ts";
import { titleOf } from "./title.ts";
import {
  Memories,
  prepareMemoryStatements,
  type StoredMemoryBlock,
} from "./memories.ts";
import { prepareVectorStatements, Vectors } from "./vectors.ts";
import {
  fileAt,
  fileData,
  type FileStatements,
  prepareFileStatements,
  readFiles,
  writeFiles,
} from "./turn_files.ts";
import { Upkeep, type UpkeepOptions } from "./upkeep.ts";

export {
  type ConversationItem,
  type ConversationRecord,
  fileView,
  type OpenedConversation,
  type RecordedTurn,
  type StoredFile,
  type StoredSummary,
  type StoredTurn,
} from "./rows.ts";
export type { SearchHit } from "./search.ts";
export { titleOf } from "./title.ts";
export {
  folded,
  Memories,
  type StoredMemory,
  type StoredMemoryBlock,
} from "./memories.ts";

/** Injected dependencies and tuning of a store. */
export interface StoreOptions {
  /** Clock in milliseconds; defaults to `Date.now`. */
  now?: () => number;
  /** Matching turns search ranks exactly before only the newest count (see src/store/search.ts). */
  rankCap?: number;
  /** Milliseconds a search spends collecting matches (see src/store/search.ts). */
  budgetMs?: number;
  /** Whether a reply is streaming: upkeep then waits for a pause, up to `upkeepDeferMs`. */
  busy?: () => boolean;
  /** Longest wait of upkeep for a pause, in milliseconds; default 2000. */
  upkeepDeferMs?: number;
}

/** Default number of results of `search`. */
const DEFAULT_SEARCH_LIMIT = 50;

/** The history database. */
export class Store implements Disposable {
  /** The database file (or `:memory:`). */
  readonly path: string;
  #db: DatabaseSync;
  #now: () => number;
  #sql: Statements;
  #files: FileStatements;
  /** What the assistant remembers of the user. */
  readonly memories: Memories;
  /** The turns' vectors for search by meaning. */
  readonly vectors: Vectors;
  #search: Search;
  #upkeep: Upkeep;

  /** Opens (creating when absent) the history at `path`; `:memory:` for a private one. */
  constructor(path: string, options: StoreOptions = {}) {
    this.path = path;
    this.#now = options.now ?? Date.now;
    const tuning: SearchOptions = {};
    if (options.rankCap !== undefined) tuning.rankCap = options.rankCap;
    if (options.budgetMs !== undefined) tuning.budgetMs = options.budgetMs;
    const { db, prepared } = openHistory(path, (db) => ({
      // Prepared now, so the first save does not pay for them.
      sql: prepareStatements(db),
      files: prepareFileStatements(db),
      memory: prepareMemoryStatements(db),
      vectors: prepareVectorStatements(db),
      search: prepareSearch(db, tuning),
    }));
    this.#db = db;
    this.#sql = prepared.sql;
    this.#files = prepared.files;
    this.#search = prepared.search;
    // Work a previous run left (a delete not yet carried out, a WAL not yet
    // checkpointed, segments not yet merged) resumes soon after opening.
    const upkeep: UpkeepOptions = {};
    if (options.busy) upkeep.busy = options.busy;
    if (options.upkeepDeferMs !== undefined) {
      upkeep.deferMs = options.upkeepDeferMs;
    }
    this.#upkeep = new Upkeep(this.#db, this.#sql, upkeep);
    const write = <T>(work: () => T) => this.#write(work);
    this.memories = new Memories(prepared.memory, { now: this.#now, write });
    this.vectors = new Vectors(prepared.vectors, { write });
  }

  /** Saves one turn in one transaction; returns its conversation id (new when `conversation` is null, and keeping `options.memory`, the memories its requests carry). */
  saveTurn(
    conversation: number | null,
    turn: StoredTurn,
    options: { memory?: StoredMemoryBlock } = {},
  ): number {
    const now = Math.floor(this.#now() / 1000);
    return this.#write(() => {
      let id: number;
      if (conversation === null) {
        const created = this.#sql.createConversation.run(
          titleOf(turn.user),
          now,
          now,
          options.memory?.text ?? null,
          options.memory?.count ?? 0,
        );
        id = Number(created.lastInsertRowid);
      } else {
        const touched = this.#sql.touchConversation.run(now, conversation);
        if (Number(touched.changes) === 0) {
          throw new AssistantError("no such conversation", {
            code: "no_such_conversation",
          });
        }
        id = conversation;
      }
      const next = this.#sql.nextSeq.get(id);
      const inserted = this.#sql.insertTurn.run(
        id,
        Number(next?.seq ?? 1),
        turn.user,
        turn.reply,
        JSON.stringify(turn.tools),
        JSON.stringify(turn.messages),
        now,
        turn.tokens ?? null,
      );
      if (turn.files?.length) {
        writeFiles(this.#files, Number(inserted.lastInsertRowid), turn.files);
      }
      return id;
    });
  }

  /** The row id of a conversation's last turn, or null when it has none: what `setTurnTokens` names. */
  lastTurnId(conversation: number): number | null {
    const last = this.#sql.lastTurn.get(conversation);
    return last ? Number(last.id) : null;
  }

  /** Records a saved turn's size in tokens, measured after its save; false when the turn is gone (deleted, or replaced by another row). */
  setTurnTokens(turn: number, tokens: number): boolean {
    const result = this.#sql.setTokens.run(tokens, turn);
    if (Number(result.changes) === 0) return false;
    this.#upkeep.wrote();
    return true;
  }

  /**
   * Replaces a conversation's last turn in one transaction (`retry`, `edit`),
   * its vector for search by meaning dropped with it. When that turn is the
   * first and the title is still the one its question gave, the title
   * follows the new question; the new title is returned then, else null.
   * AssistantError when there is no such conversation or no turn.
   */
  replaceLastTurn(conversation: number, turn: StoredTurn): string | null {
    const now = Math.floor(this.#now() / 1000);
    return this.#write(() => {
      const touched = this.#sql.touchConversation.run(now, conversation);
      if (Number(touched.changes) === 0) {
        throw new AssistantError("no such conversation", {
          code: "no_such_conversation",
        });
      }
      const last = this.#sql.lastTurn.get(conversation);
      if (!last) {
        throw new AssistantError("nothing to retry", {
          code: "nothing_to_retry",
        });
      }
      this.#sql.replaceTurn.run(
        turn.user,
        turn.reply,
        JSON.stringify(turn.tools),
        JSON.stringify(turn.messages),
        now,
        turn.tokens ?? null,
        Number(last.id),
      );
      writeFiles(this.#files, Number(last.id), turn.files ?? []);
      // The vector was made of the text replaced: it goes with it, and the
      // indexer makes the new one.
      this.vectors.dropIn(Number(last.id));
      const old = String(this.#sql.record.get(conversation)?.title ?? "");
      if (Number(last.seq) !== 1 || old !== titleOf(String(last.user ?? ""))) {
        return null;
      }
      const next = titleOf(turn.user);
      if (next === old) return null;
      this.#sql.rename.run(next, conversation);
      return next;
    });
  }

  /** Sets a conversation's title as given; false when there is no such conversation. */
  rename(id: number, title: string): boolean {
    const result = this.#sql.rename.run(title, id);
    if (Number(result.changes) === 0) return false;
    this.#upkeep.wrote();
    return true;
  }

  /** A conversation with its dates and every turn's time, for `export`; null when there is no such conversation. */
  record(id: number): ConversationRecord | null {
    const row = this.#sql.record.get(id);
    if (!row) return null;
    // Turns saved before they had a time take their conversation's then `updated`.
    const legacy = Number(row.legacy ?? 0);
    const rows = this.#sql.recordTurns.all(id);
    const files = readFiles(
      this.#files.ofTurns.iterate(JSON.stringify(rows.map((r) => r.id))),
    );
    const turns = rows.map((turn) =>
      recordedTurn(turn, legacy, files.get(Number(turn.id)))
    );
    return {
      id,
      title: String(row.title ?? ""),
      created: Number(row.created ?? 0),
      updated: Number(row.updated ?? 0),
      summary: this.summary(id),
      turns,
    };
  }

  /** Conversations, most recently updated first (ties: newest id first); all when `limit` is absent. */
  list(limit?: number): ConversationItem[] {
    const rows = this.#sql.list.all(
      limit === undefined ? -1 : Math.max(0, Math.floor(limit)),
    );
    return rows.map((row) => ({
      id: Number(row.id),
      title: String(row.title ?? ""),
      updated: Number(row.updated ?? 0),
    }));
  }

  /** Loads every turn of a conversation, in order; null when there is no such conversation. */
  open(id: number): OpenedConversation | null {
    if (!this.exists(id)) return null;
    const files = readFiles(this.#files.ofConversation.iterate(id));
    const turns = openedTurns(this.#sql.turnsOf.all(id), files);
    return {
      id,
      ...turns,
      summary: this.summary(id),
      memory: this.memories.block(id),
    };
  }

  /** A stored picture's bytes (`turn` its row, `index` its place); null when there is none. */
  fileData(turn: number, index: number): Uint8Array | null {
    return fileData(this.#files, turn, index);
  }

  /** The `index`-th file of a conversation's `turn`-th turn (0-based), with its bytes (a converted document's are its text); null when there is none. */
  fileAt(
    conversation: number,
    turn: number,
    index: number,
  ): { name: string; mime: string; data: Uint8Array } | null {
    return fileAt(this.#files, conversation, turn, index);
  }

  /**
   * Sets (null removes) a conversation's summary of its first
   * `summary.turns` turns; nothing else of the conversation changes. False
   * when there is no such conversation; TypeError or RangeError for a
   * malformed summary or one covering more turns than are stored.
   */
  setSummary(conversation: number, summary: StoredSummary | null): boolean {
    if (summary !== null) checkSummary(summary);
    if (!this.exists(conversation)) return false;
    writeSummary(this.#sql, conversation, summary);
    this.#upkeep.wrote();
    return true;
  }

  /** A conversation's summary; null when it has none or there is no such conversation. */
  summary(conversation: number): StoredSummary | null {
    return readSummary(this.#sql, conversation);
  }

  /** What was learnt of a model's prompt cache: whether llama-server shifts it, and when that was learnt (Unix seconds); null while unknown. */
  cacheShift(model: string): { shifts: boolean; learned: number } | null {
    const row = this.#sql.cacheShift.get(model);
    if (row === undefined) return null;
    return { shifts: Number(row.shifts) === 1, learned: Number(row.learned) };
  }

  /** Records whether llama-server shifts a model's prompt cache. */
  setCacheShift(model: string, shifts: boolean): void {
    const now = Math.floor(this.#now() / 1000);
    this.#sql.setCacheShift.run(model, shifts ? 1 : 0, now);
  }

  /** Whether a conversation with this id exists. */
  exists(id: number): boolean {
    return this.#sql.exists.get(id) !== undefined;
  }

  /** Searches questions and replies (see src/store/search.ts for the rule); never raises for any text. */
  search(q: string, limit: number = DEFAULT_SEARCH_LIMIT): SearchHit[] {
    return this.#search(q, limit);
  }

  /**
   * Deletes a conversation and its turns; false when there is no such
   * conversation. It is gone for every read at once; its rows and index
   * entries are removed by upkeep within moments (see the module comment).
   */
  delete(id: number): boolean {
    const result = this.#sql.markDeleted.run(id);
    if (Number(result.changes) === 0) return false;
    this.#upkeep.wrote();
    return true;
  }

  /**
   * Runs one bounded step of upkeep: removes a batch of a deleted
   * conversation's turns, or merges a few FTS5 index pages, then checkpoints
   * the WAL when enough commits gathered in it. Returns whether more work
   * waits; false too when another connection holds the write lock, in which
   * case the store tries again later. The store schedules this itself after
   * every write; callers need it only to finish upkeep when they choose.
   */
  maintain(): boolean {
    return this.#upkeep.maintain();
  }

  /** The problems found by SQLite's and FTS5's integrity checks; empty when the file is sound. */
  integrityCheck(): string[] {
    return integrityProblems(this.#db, { fullText: true });
  }

  /** Runs `work` in one write transaction (rolled back when it throws) and books the commit for upkeep. */
  #write<T>(work: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    let result: T;
    try {
      result = work();
      this.#db.exec("COMMIT");
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
    this.#upkeep.wrote();
    return result;
  }

  /** Closes the database; later calls do nothing. */
  close(): void {
    this.#upkeep[Symbol.dispose]();
    if (!this.#db.isOpen) return;
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
}

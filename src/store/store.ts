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
 * The file is personal data: its modes are enforced on every open and a
 * symbolic link in its place is refused (`store_files.ts`); the schema, its
 * migrations and the statements are in `store_schema.ts`.
 */
import { DatabaseSync } from "node:sqlite";
import type { ChatMessage } from "../llm/chat_types.ts";
import { AssistantError } from "../errors.ts";
import { describeError, log } from "../log.ts";
import type { TurnView } from "../protocol.ts";
import {
  prepareSearch,
  type Search,
  type SearchHit,
  type SearchOptions,
} from "./search.ts";
import { prepareFiles, secureSidecars } from "./files.ts";
import {
  integrityProblems,
  migrate,
  prepareStatements,
  type Statements,
} from "./schema.ts";

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
  /** Matching turns search ranks exactly before only the newest count (see src/store/search.ts). */
  rankCap?: number;
  /** Milliseconds a search spends collecting matches (see src/store/search.ts). */
  budgetMs?: number;
  /** Whether a reply is streaming: upkeep then waits for a pause, up to `upkeepDeferMs`. */
  busy?: () => boolean;
  /** Longest wait of upkeep for a pause, in milliseconds; default 2000. */
  upkeepDeferMs?: number;
}

/** Words of the first question that make a conversation's title. */
const TITLE_WORDS = 6;

/** Default number of results of `search`. */
const DEFAULT_SEARCH_LIMIT = 50;

/** Milliseconds a statement waits for a lock held by another connection. */
const BUSY_TIMEOUT_MS = 5000;

/** Milliseconds from a write to the upkeep after it: the reply's last events go out first. */
const UPKEEP_DELAY_MS = 50;

/** Default longest wait of upkeep for a pause in the replies. */
const UPKEEP_DEFER_MS = 2000;

/** Milliseconds before upkeep that a lock or a reader held back is tried again. */
const UPKEEP_RETRY_MS = 1000;

/** Turns of a deleted conversation removed per upkeep step (each re-tokenized: ≈ 4 ms in all). */
const DRAIN_TURNS = 64;

/** Index pages an upkeep step's FTS5 merge writes at most (≈ 1–2 ms). */
const MERGE_STEP_PAGES = 16;

/**
 * Index pages of merging each write earns. FTS5's automerge does about one
 * page per level for each page a commit adds (≈ 10 levels, a few pages a
 * turn); this is more, so merges keep up, and a long merge of big segments
 * is spread over later writes as automerge would spread it.
 */
const MERGE_PAGES_PER_WRITE = 128;

/** Most merge pages saved up, so a burst of writes is not followed by a long one. */
const MERGE_PAGES_MAX = 8 * MERGE_PAGES_PER_WRITE;

/**
 * Commits between two checkpoints. The first commit after a checkpoint
 * starts the WAL afresh and fsyncs its header too (≈ +0.25 ms), so not
 * after every save; few enough that a checkpoint stays a short step.
 */
const CHECKPOINT_COMMITS = 16;

/**
 * Commits without any checkpoint after which a save checkpoints itself: only
 * when upkeep never got a turn of the event loop, so the WAL stays bounded.
 */
const FORCED_CHECKPOINT_COMMITS = 500;

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
  #sql: Statements;
  #search: Search;
  #upkeep: ReturnType<typeof setTimeout> | null = null;
  /** Commits since the last complete checkpoint. */
  #uncheckpointed = 0;
  /** Merge pages earned by writes and not yet spent; 0 once a merge step found nothing to do. */
  #mergeBudget = MERGE_PAGES_PER_WRITE;
  #busy: () => boolean;
  #deferMs: number;
  /** When upkeep first found a reply streaming and waited, or null. */
  #deferredSince: number | null = null;

  /** Opens (creating when absent) the history at `path`; `:memory:` for a private one. */
  constructor(path: string, options: StoreOptions = {}) {
    this.path = path;
    this.#now = options.now ?? Date.now;
    this.#busy = options.busy ?? (() => false);
    this.#deferMs = options.upkeepDeferMs ?? UPKEEP_DEFER_MS;
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
      // Checkpoints are upkeep's (see the module comment), never a commit's.
      this.#db.exec("PRAGMA wal_autocheckpoint = 0");
      migrate(this.#db, path);
      if (onDisk) secureSidecars(path);
      // Prepared now, so the first save does not pay for them.
      this.#sql = prepareStatements(this.#db);
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
    // Work a previous run left (a delete not yet carried out, a WAL not yet
    // checkpointed, segments not yet merged) resumes soon after opening.
    this.#uncheckpointed = CHECKPOINT_COMMITS;
    this.#schedule(UPKEEP_DELAY_MS);
  }

  /** Saves one turn in one transaction; returns its conversation id (new when `conversation` is null). */
  saveTurn(conversation: number | null, turn: StoredTurn): number {
    const now = Math.floor(this.#now() / 1000);
    this.#db.exec("BEGIN IMMEDIATE");
    let id: number;
    try {
      if (conversation === null) {
        const created = this.#sql.createConversation.run(
          titleOf(turn.user),
          now,
          now,
        );
        id = Number(created.lastInsertRowid);
      } else {
        const touched = this.#sql.touchConversation.run(now, conversation);
        if (Number(touched.changes) === 0) {
          throw new AssistantError("no such conversation");
        }
        id = conversation;
      }
      const next = this.#sql.nextSeq.get(id);
      this.#sql.insertTurn.run(
        id,
        Number(next?.seq ?? 1),
        turn.user,
        turn.reply,
        JSON.stringify(turn.tools),
        JSON.stringify(turn.messages),
      );
      this.#db.exec("COMMIT");
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
    this.#wrote();
    return id;
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
    const rows = this.#sql.turnsOf.all(id);
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
    this.#wrote();
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
    if (!this.#db.isOpen) return false;
    // Upkeep can wait, the thread cannot: no sleeping on another's lock.
    this.#db.exec("PRAGMA busy_timeout = 0");
    try {
      return this.#step();
    } catch (error) {
      if (!isBusy(error)) throw error;
      this.#schedule(UPKEEP_RETRY_MS);
      return false;
    } finally {
      this.#db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  /** The problems found by SQLite's and FTS5's integrity checks; empty when the file is sound. */
  integrityCheck(): string[] {
    return integrityProblems(this.#db, { fullText: true });
  }

  /** Closes the database; later calls do nothing. */
  close(): void {
    if (this.#upkeep !== null) {
      clearTimeout(this.#upkeep);
      this.#upkeep = null;
    }
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

  /** One step of `maintain`. */
  #step(): boolean {
    let more = false;
    const deleted = this.#sql.nextDeleted.get();
    if (deleted !== undefined) {
      this.#transaction(() => {
        const id = Number(deleted.id);
        this.#sql.dropLastTurns.run(id, DRAIN_TURNS);
        // With its last turn, in the same commit: no conversation is ever
        // left without turns. The cascade takes its deleted_conversations row.
        if (this.#sql.anyTurn.get(id) === undefined) {
          this.#sql.dropConversation.run(id);
        }
      });
      this.#earnMerging();
      more = true;
    } else if (this.#mergeBudget > 0) {
      const before = this.#sql.structure.get()?.block;
      this.#transaction(() => this.#sql.merge.run(MERGE_STEP_PAGES));
      const after = this.#sql.structure.get()?.block;
      // The structure record changes exactly when a merge wrote something.
      this.#mergeBudget = sameBytes(before, after)
        ? 0
        : this.#mergeBudget - MERGE_STEP_PAGES;
      more = this.#mergeBudget > 0;
    }
    if (this.#uncheckpointed >= CHECKPOINT_COMMITS) {
      if (!this.#checkpoint() && !more) this.#schedule(UPKEEP_RETRY_MS);
    }
    return more;
  }

  /** Books a commit and makes sure upkeep follows it. */
  #wrote(): void {
    this.#earnMerging();
    if (++this.#uncheckpointed >= FORCED_CHECKPOINT_COMMITS) {
      try {
        this.#checkpoint();
      } catch (error) {
        // The write is committed: a failed checkpoint must not report it
        // lost. Upkeep tries again.
        log.warn("history checkpoint failed", { error: describeError(error) });
      }
    }
    this.#schedule(UPKEEP_DELAY_MS);
  }

  /**
   * Runs upkeep after `ms` unless it is already due: a later write does not
   * push it back, so it keeps up under constant load.
   */
  #schedule(ms: number): void {
    if (this.#upkeep !== null || !this.#db.isOpen) return;
    const timer = setTimeout(() => {
      this.#upkeep = null;
      // A step (a checkpoint may take 10 ms) would land between a reply's
      // tokens: wait for a pause, but not forever under constant replies.
      if (this.#busy()) {
        const now = performance.now();
        this.#deferredSince ??= now;
        if (now - this.#deferredSince < this.#deferMs) {
          this.#schedule(UPKEEP_DELAY_MS);
          return;
        }
      }
      this.#deferredSince = null;
      let more: boolean;
      try {
        more = this.maintain();
      } catch (error) {
        // Nothing is lost: the next write schedules upkeep again.
        log.warn("history upkeep failed", { error: describeError(error) });
        return;
      }
      // A step at a time, so sockets and the token stream run in between.
      if (more) this.#schedule(0);
    }, ms);
    // Upkeep alone never keeps the process alive; the next open resumes it.
    Deno.unrefTimer(timer);
    this.#upkeep = timer;
  }

  /** Grants the merge pages a write earns. */
  #earnMerging(): void {
    this.#mergeBudget = Math.min(
      MERGE_PAGES_MAX,
      this.#mergeBudget + MERGE_PAGES_PER_WRITE,
    );
  }

  /** A PASSIVE checkpoint; returns whether it copied the whole WAL. */
  #checkpoint(): boolean {
    const row = this.#sql.checkpoint.get();
    const frames = Number(row?.log ?? -1);
    const copied = Number(row?.checkpointed ?? -1);
    // -1: not a WAL database (`:memory:`), nothing to copy.
    if (frames === -1 || copied === frames) {
      this.#uncheckpointed = 0;
      return true;
    }
    return false;
  }

  /** Runs `work` in one write transaction and books its commit. */
  #transaction(work: () => void): void {
    // A statement, unlike exec, reports SQLite's code (SQLITE_BUSY).
    this.#sql.begin.run();
    try {
      work();
      this.#db.exec("COMMIT");
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
    this.#uncheckpointed++;
  }
}

/** Whether `error` is SQLite's SQLITE_BUSY: another connection holds the lock. */
function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === "number" && (code & 0xff) === 5;
}

/** Whether two SQLite values are the same bytes. */
function sameBytes(a: unknown, b: unknown): boolean {
  if (!(a instanceof Uint8Array) || !(b instanceof Uint8Array)) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
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

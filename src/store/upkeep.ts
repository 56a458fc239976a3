/**
 * The history's upkeep: the work a commit leaves for later, run in small
 * steps between other work (see the store's module comment): checkpoints,
 * FTS5 merges, and the removal of deleted conversations' turns.
 */
import type { DatabaseSync } from "node:sqlite";
import { describeError, log } from "../base/log.ts";
import { BUSY_TIMEOUT_MS } from "./connection.ts";
import type { Statements } from "./statements.ts";

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

/** Options of {@link Upkeep}. */
export interface UpkeepOptions {
  /** Whether a reply is streaming: upkeep then waits for a pause, up to `deferMs`. */
  busy?: () => boolean;
  /** Longest wait for a pause, in milliseconds; default 2000. */
  deferMs?: number;
}

/** Schedules and runs the store's upkeep on its one connection. */
export class Upkeep implements Disposable {
  #db: DatabaseSync;
  #sql: Statements;
  #timer: ReturnType<typeof setTimeout> | null = null;
  /** Commits since the last complete checkpoint; a new store checkpoints first, for work a previous run left. */
  #uncheckpointed = CHECKPOINT_COMMITS;
  /** Merge pages earned by writes and not yet spent; 0 once a merge step found nothing to do. */
  #mergeBudget = MERGE_PAGES_PER_WRITE;
  #busy: () => boolean;
  #deferMs: number;
  /** When upkeep first found a reply streaming and waited, or null. */
  #deferredSince: number | null = null;

  /** Takes over the upkeep of an open, migrated database; resumes what a previous run left soon after. */
  constructor(db: DatabaseSync, sql: Statements, options: UpkeepOptions = {}) {
    this.#db = db;
    this.#sql = sql;
    this.#busy = options.busy ?? (() => false);
    this.#deferMs = options.deferMs ?? UPKEEP_DEFER_MS;
    this.#schedule(UPKEEP_DELAY_MS);
  }

  /** Runs one bounded step; returns whether more work waits (false too when another connection holds the lock: tried again later). */
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

  /** Books a commit and makes sure upkeep follows it. */
  wrote(): void {
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

  /** Cancels the upkeep due; the next open resumes the work. */
  [Symbol.dispose](): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
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
      // Both indexes, the turns' and the files' text: a commit adds a
      // segment to each it writes.
      const before = this.#structures();
      this.#transaction(() => {
        this.#sql.merge.run(MERGE_STEP_PAGES);
        this.#sql.mergeFiles.run(MERGE_STEP_PAGES);
      });
      const after = this.#structures();
      // The structure record changes exactly when a merge wrote something.
      const merged = before.some((block, i) => !sameBytes(block, after[i]));
      this.#mergeBudget = merged ? this.#mergeBudget - MERGE_STEP_PAGES : 0;
      more = this.#mergeBudget > 0;
    }
    if (this.#uncheckpointed >= CHECKPOINT_COMMITS) {
      if (!this.#checkpoint() && !more) this.#schedule(UPKEEP_RETRY_MS);
    }
    return more;
  }

  /**
   * Runs upkeep after `ms` unless it is already due: a later write does not
   * push it back, so it keeps up under constant load.
   */
  #schedule(ms: number): void {
    if (this.#timer !== null || !this.#db.isOpen) return;
    const timer = setTimeout(() => {
      this.#timer = null;
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
    this.#timer = timer;
  }

  /** The FTS5 indexes' structure records: their levels and segments. */
  #structures(): unknown[] {
    return [
      this.#sql.structure.get()?.block,
      this.#sql.filesStructure.get()?.block,
    ];
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

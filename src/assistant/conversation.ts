/**
 * One conversation, held as one object for as long as anything uses it
 * (the registry, conversations.ts, hands out the same object for an id).
 * It owns its turns, where its last request started its history window,
 * that request, its running summary and each turn's size, and it plans:
 * the request for a question (a retry or an edit asked as if the turn it
 * replaces had not been), the commit of a finished turn, and the next
 * summary due. Turns, summaries, files and memories reach the model
 * through here alone. What it plans with holds no state of its own
 * (request_plan.ts, conversation_summary.ts, turn_save.ts, held_turn.ts):
 * no second object ever has to be kept in step with this one.
 */
import type { ModelChoice } from "../llm/client.ts";
import type { SummaryView, TurnView } from "../protocol/protocol.ts";
import type { OpenedConversation, Store } from "../store/store.ts";
import { ContextPlan } from "./budget.ts";
import type { CacheBook } from "./cache_book.ts";
import type { QuestionFile } from "./attachments.ts";
import {
  type FinishedTurn,
  type HeldTurn,
  heldTurn,
  openedTurns,
  pictureOf,
  sendable,
} from "./held_turn.ts";

/** A turn as a conversation holds it. */
export type { HeldTurn } from "./held_turn.ts";
import { planRequest, type Question } from "./request_plan.ts";
import {
  ConversationMemory,
  type MemorySource,
} from "./conversation_memory.ts";
import {
  dueSummary,
  type LastRequest,
  lastRequestOf,
  type SummaryJob,
  summaryJob,
  type SummarySource,
} from "./conversation_summary.ts";
import { NO_MEMORIES } from "./memory.ts";
import type { RunningSummary } from "./summary_request.ts";
import type { TokenLedger } from "./token_ledger.ts";
import type { TurnConfig } from "./turn_config.ts";
import { lastRow, saveTurn } from "./turn_save.ts";

/** What every conversation shares: the history file, what is known of each model, the config. */
export interface ConversationDeps {
  store: Store;
  ledger: TokenLedger;
  book: CacheBook;
  config: TurnConfig;
  /** A new conversation was saved for the first time: it has its id now. */
  saved(conversation: Conversation): void;
  /** The memories a conversation's requests carry, taken at its first request; absent: none. */
  memories?: MemorySource | undefined;
}

/** Where a conversation takes the memories its requests carry. */
export type { MemorySource } from "./conversation_memory.ts";

/** One conversation and its plans. */
export class Conversation {
  readonly private: boolean;
  readonly #deps: ConversationDeps;
  #id: number | null;
  #turns: HeldTurn[];
  #summary: RunningSummary | null;
  /** The window start a summary was last asked for in this run and could not be made; null when none failed. */
  #summaryFailedAt: number | null = null;
  #last: LastRequest | null = null;
  #deleted = false;
  readonly #memory: ConversationMemory;

  /** A conversation as the history holds it; `opened` null: a new one, not saved yet. */
  constructor(
    deps: ConversationDeps,
    opened: OpenedConversation | null,
    isPrivate = false,
  ) {
    this.#deps = deps;
    this.private = isPrivate;
    this.#id = opened?.id ?? null;
    this.#turns = opened ? openedTurns(opened) : [];
    this.#summary = opened?.summary
      ? { ...opened.summary, carrier: null }
      : null;
    // Saved before blocks were kept: it carries none, as it may have sent.
    this.#memory = new ConversationMemory(
      deps.memories,
      opened ? opened.memory ?? NO_MEMORIES : null,
    );
  }

  /** Its id in the history file; null until its first turn is saved (always, for a private one). */
  get id(): number | null {
    return this.#id;
  }

  /** Its turns as clients are shown them. */
  get turns(): TurnView[] {
    return this.#turns.map((turn) => turn.view);
  }

  /** Its running summary as clients are shown it; null while there is none. */
  get summary(): SummaryView | null {
    const summary = this.#summary;
    return summary && { text: summary.text, turns: summary.turns };
  }

  /** Earlier turns its summary covers; 0 without one. */
  get summarized(): number {
    return this.#summary?.turns ?? 0;
  }

  /** How many memories its requests carry (before its first request: how many there are). */
  get memories(): number {
    return this.#memory.count;
  }

  /** A memory the model's `remember` kept during the turn in flight: its source is named once that turn is saved. */
  remembered(memory: number): void {
    this.#memory.remembered(memory);
  }

  /** The model its last request used, in this run; null before one. */
  get model(): ModelChoice | null {
    return this.#last?.model ?? null;
  }

  /** Deleted, or private and no longer current: nothing more is asked or kept for it. */
  get deleted(): boolean {
    return this.#deleted;
  }

  /** Nothing more is asked or kept for it. */
  discard(): void {
    this.#deleted = true;
  }

  /**
   * How many of the first turns a summary may cover: never the newest, which
   * a retry or an edit may replace (the one place this rule is held).
   */
  #coverable(): number {
    return Math.max(0, this.#turns.length - 1);
  }

  /** The files of the last turn, pictures with their bytes: what a retry sends again. */
  lastFiles(): QuestionFile[] {
    const last = this.#turns.at(-1);
    if (!last) return [];
    return last.files.map((file, i) => ({
      ...file,
      data: file.kind === "image" ? pictureOf(last, i, this.#deps.store) : null,
    }));
  }

  /** The request for a question, planned within the model's context. */
  async plan(question: Question): Promise<ContextPlan> {
    // A turn stopped before it was saved leaves its memories without a source.
    this.#memory.turnStarts();
    const memory = await this.#memory.take(async (text) =>
      (await this.#deps.ledger.count(
        question.model.id,
        text,
        question.tokenize,
        question.signal,
      )).tokens
    );
    const held = question.replaces ? this.#turns.slice(0, -1) : this.#turns;
    // A summary made before the rule held may cover the turn a retry
    // replaces: such a request goes without it.
    const summary = this.#summary && this.#summary.turns <= held.length
      ? this.#summary
      : null;
    return planRequest(this.#deps, {
      question,
      history: held.map((turn) =>
        sendable(turn, this.#deps.store, question.model.vision === false)
      ),
      counts: held.map((turn) => turn.tokens),
      summary,
      previous: this.#last?.start ?? null,
      failedAt: this.#summaryFailedAt,
      memories: memory.text,
    });
  }

  /**
   * Keeps a finished turn: saved (a private conversation's stays in
   * memory), then held, with where its last request left the window.
   * Returns the turn and the conversation's new title when replacing its
   * first turn changed it. AssistantError when it could not be saved.
   */
  commit(
    plan: ContextPlan,
    turn: FinishedTurn,
  ): { held: HeldTurn; title: string | null } {
    let title: string | null = null;
    let row: number | null = null;
    if (!this.private) {
      const { store } = this.#deps;
      const wasNew = this.#id === null;
      const saved = saveTurn(store, this.#id, turn, this.#memory.taken);
      this.#id = saved.id;
      title = saved.title;
      if (wasNew) this.#deps.saved(this);
      row = lastRow(store, saved.id);
    }
    const held = heldTurn(turn, row, this.#deps.store);
    if (turn.replaces && this.#turns.length > 0) this.#turns.pop();
    this.#turns.push(held);
    // A summary saved before the rule held may cover the turn just
    // replaced: it tells of an answer that is gone, so it goes.
    if (this.#summary && this.#summary.turns > this.#coverable()) {
      this.#summary = null;
      if (this.#id !== null && !this.private) {
        this.#deps.store.setSummary(this.#id, null);
      }
    }
    if (this.#id !== null && !this.private) {
      this.#memory.saved(this.#id, this.#turns.length - 1);
    }
    this.#last = lastRequestOf(plan, turn.messages.at(-1), turn.model);
    if (this.#summary && plan.carrier !== null) {
      this.#summary.carrier = plan.carrier;
    }
    return { held, title };
  }

  /** A held turn's size, measured after its save; nothing when a retry replaced it meanwhile. */
  count(turn: HeldTurn, tokens: number): boolean {
    if (!this.#turns.includes(turn)) return false;
    turn.tokens = tokens;
    return turn.row === null ||
      this.#deps.store.setTurnTokens(turn.row, tokens);
  }

  /**
   * The first turns the summary must cover before the next request: where
   * that request's window will start once it moves (a question of the last
   * one's size assumed), never the newest turn; null when no move is due,
   * or when the last summary asked for that move could not be made.
   */
  summaryDue(): number | null {
    const last = this.#last;
    if (last === null || this.#deleted) return null;
    return dueSummary(
      this.#deps,
      this.#summarySource(last),
      this.#coverable(),
      this.#summaryFailedAt,
    );
  }

  /** The request for the summary of the first `upTo` turns (at most `atMost` more of them, after a refusal); null when not one turn fits. */
  summaryRequest(upTo: number, atMost?: number): SummaryJob | null {
    const last = this.#last;
    if (last === null) return null;
    return summaryJob(this.#deps, this.#summarySource(last), upTo, atMost);
  }

  #summarySource(last: LastRequest): SummarySource {
    return { turns: this.#turns, summary: this.#summary, last };
  }

  /**
   * Keeps a new summary: stored with the conversation (a private one's in
   * memory only). False when the conversation is gone, deleted or left.
   */
  keepSummary(summary: Omit<RunningSummary, "carrier">): boolean {
    if (this.#deleted) return false;
    if (this.#id !== null && !this.private) {
      if (!this.#deps.store.setSummary(this.#id, summary)) return false;
    }
    this.#summary = { ...summary, carrier: null };
    this.#summaryFailedAt = null;
    return true;
  }

  /** The summary of the first `upTo` turns could not be made: that move goes ahead without it, and is not asked for again. */
  summaryFailed(upTo: number): void {
    this.#summaryFailedAt = upTo;
  }
}

/**
 * One conversation, held as one object for as long as anything uses it
 * (the registry, conversations.ts, hands out the same object for an id).
 * It owns its turns, where its last request started its history window,
 * that request, its running summary and each turn's size, and it plans:
 * the request for a question (a retry or an edit asked as if the turn it
 * replaces had not been), the commit of a finished turn, and the next
 * summary due. Turns, summaries, files and memories reach the model
 * through here alone.
 */
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import type { ModelChoice } from "../llm/client.ts";
import type { SummaryView, TurnView } from "../protocol/protocol.ts";
import {
  fileView,
  type OpenedConversation,
  type Store,
} from "../store/store.ts";
import { ContextPlan } from "./budget.ts";
import type { CacheBook } from "./cache_book.ts";
import { coveredStart } from "./history_window.ts";
import type { QuestionFile } from "./attachments.ts";
import { type HeldTurn, pictureOf, sendable } from "./held_turn.ts";

/** A turn as a conversation holds it. */
export type { HeldTurn } from "./held_turn.ts";
import { planRequest, type Question } from "./request_plan.ts";
import {
  ConversationMemory,
  type MemorySource,
} from "./conversation_memory.ts";
import { NO_MEMORIES } from "./memory.ts";

import {
  planSummary,
  type RunningSummary,
  type SummaryPlan,
} from "./summary_request.ts";
import { type TokenLedger, utf8Bytes } from "./token_ledger.ts";
import type { TurnConfig } from "./turn_config.ts";

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

/** What the last finished turn's last request leaves the next one and the summary. */
interface LastRequest {
  /** Where its window started. */
  start: number;
  /** Its messages and the reply that ended it: what the server's cache holds. */
  messages: ChatMessage[];
  model: ModelChoice;
  schemas: unknown[];
  /** Tokens the earlier turns could take in it. */
  room: number;
  nCtx: number | null;
  /** Tokens it and its reply took in the context; null when not reported. */
  used: number | null;
  /** Tokens of its fixed start (system prompt and tool schemas), as estimated. */
  fixed: number;
}

/** What a finished turn leaves to keep. */
export interface FinishedTurn {
  user: string;
  reply: string;
  tools: string[];
  /** Its messages under the history rule. */
  messages: ChatMessage[];
  files: readonly QuestionFile[];
  replaces: boolean;
  model: ModelChoice;
}

/** A summary request to make: its messages, the turns it covers once made, and the model and schemas its request names. */
export interface SummaryJob extends SummaryPlan {
  model: ModelChoice;
  schemas: unknown[];
}

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
    this.#turns = (opened?.turns ?? []).map((view, i) => ({
      view,
      messages: opened!.messages[i] ?? [],
      files: opened!.files[i] ?? [],
      tokens: opened!.tokens[i] ?? null,
      row: opened!.rows[i] ?? null,
    }));
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
    const stored = { ...turn, tokens: null };
    let title: string | null = null;
    let row: number | null = null;
    if (!this.private) {
      const { store } = this.#deps;
      const wasNew = this.#id === null;
      try {
        if (turn.replaces && this.#id !== null) {
          title = store.replaceLastTurn(this.#id, stored);
        } else {
          this.#id = store.saveTurn(this.#id, stored, {
            memory: this.#memory.taken ?? NO_MEMORIES,
          });
        }
      } catch (error) {
        if (error instanceof AssistantError) throw error;
        throw new AssistantError("could not save the reply", {
          cause: error,
          code: "save_failed",
        });
      }
      if (wasNew) this.#deps.saved(this);
      // Saved: a fault from here costs only the count's row.
      try {
        row = store.lastTurnId(this.#id!);
      } catch (error) {
        log.warn("saved turn not found for its count", {
          conv: this.#id,
          error: describeError(error),
        });
      }
    }
    const held: HeldTurn = {
      view: {
        user: turn.user,
        reply: turn.reply,
        tools: turn.tools,
        ...(turn.files.length > 0 ? { files: turn.files.map(fileView) } : {}),
      },
      messages: turn.messages,
      files: turn.files,
      tokens: null,
      row,
    };
    // Its pictures' URLs are the ones just sent: held as those from now.
    sendable(held, this.#deps.store);
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
    const final = turn.messages.at(-1);
    this.#last = {
      start: plan.start,
      messages: final ? [...plan.lastRequest, final] : [...plan.lastRequest],
      model: turn.model,
      schemas: plan.schemas,
      room: plan.room,
      nCtx: plan.nCtx,
      used: plan.used,
      fixed: plan.carried().fixed,
    };
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
    const { config, ledger } = this.#deps;
    const due = Math.min(
      this.#coverable(),
      coveredStart(
        this.#turns.length,
        (i) =>
          ledger.turnCost(
            last.model.id,
            this.#turns[i]!.messages,
            this.#turns[i]!.tokens,
          ),
        last.room,
        config.history_turns,
        last.start,
        { summarized: this.summarized, hold: false, failedAt: null },
      ),
    );
    const failed = this.#summaryFailedAt;
    if (due <= this.summarized || (failed !== null && due <= failed)) {
      return null;
    }
    return due;
  }

  /** The request for the summary of the first `upTo` turns (at most `atMost` more of them, after a refusal); null when not one turn fits. */
  summaryRequest(upTo: number, atMost?: number): SummaryJob | null {
    const last = this.#last;
    if (last === null) return null;
    const { config, ledger } = this.#deps;
    const model = last.model.id;
    const plan = planSummary({
      turns: this.#turns.map((turn) =>
        sendable(turn, this.#deps.store, last.model.vision === false)
      ),
      summary: this.#summary,
      lastRequest: last.messages,
      windowStart: last.start,
      upTo,
      maxTokens: config.summary_tokens,
      nCtx: last.nCtx,
      used: last.used,
      fixed: last.fixed,
      cost: (i) =>
        ledger.turnCost(
          model,
          this.#turns[i]?.messages ?? [],
          this.#turns[i]?.tokens ?? null,
        ),
      estimate: (text) => ledger.estimate(model, utf8Bytes(text)),
      ...(atMost === undefined ? {} : { atMost }),
    });
    return plan && { ...plan, model: last.model, schemas: last.schemas };
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

/**
 * `compact`: what leaves the history window is summarised, not forgotten.
 * After a turn, when the next request's window will move past turns the
 * running summary does not cover, one side request to the same model folds
 * them into it (summary_request.ts), before the move: the request begins as
 * the turn's own did, so it costs the server little, and the next question
 * carries the new summary. It is a side request (idle_runner.ts): it runs
 * only while no reply does, a question aborts it, and it is asked again once
 * the reply has ended (meanwhile the window keeps the turns it would drop,
 * as far as the context allows). One that fails, stalls or is cut by its
 * token limit stores nothing; the move then goes ahead without it and the
 * next move asks again, never in a loop.
 */
import { AssistantError } from "../base/errors.ts";
import type { Config } from "../base/config.ts";
import { describeSafely, log } from "../base/log.ts";
import type { ModelChoice } from "../llm/client.ts";
import { contextOverflow } from "../llm/http_error.ts";
import type { Event } from "../protocol/protocol.ts";
import type { Store } from "../store/store.ts";
import type { Conversation, Summary } from "./conversation.ts";
import { coveredStart } from "./history_window.ts";
import type { IdleRunner } from "./idle_runner.ts";
import {
  planSummary,
  summaryBody,
  summaryFrom,
  type SummaryPlan,
} from "./summary_request.ts";
import { type TokenLedger, utf8Bytes } from "./token_ledger.ts";
import type { ModelSource } from "./turn.ts";

/** What the summarizer needs. */
export interface SummarizerOptions {
  llm: ModelSource;
  store: Pick<Store, "setSummary">;
  ledger: TokenLedger;
  config: Pick<
    Config,
    "summary_tokens" | "request" | "cache_reuse" | "history_turns"
  >;
  publish(event: Event): void;
  /** Where side requests wait for a pause in the replies. */
  runner: IdleRunner;
  /** The conversation shown now. */
  current(): Conversation;
}

/** What the last turn of a conversation leaves for its summary. */
export interface SummarySource {
  model: ModelChoice;
  schemas: unknown[];
  /** Tokens the earlier turns could take in that turn's requests. */
  room: number;
  /** The context size; null while unknown. */
  nCtx: number | null;
  /** Tokens that turn's last request and its reply took; null when not reported. */
  used: number | null;
  /** Tokens of a request's fixed start (the system prompt and tool schemas). */
  fixed: number;
}

/** Why a summary request stored nothing. */
class SummaryRefused extends Error {
  override name = "SummaryRefused";
}

/** A summary request's key among the side requests: a saved conversation's id, else the conversation itself. */
function summaryKey(conversation: Conversation): unknown {
  return conversation.id === null || conversation.private
    ? conversation
    : `summary ${conversation.id}`;
}

/** The summary requests of the conversations whose window is about to move. */
export class Summarizer {
  readonly #o: SummarizerOptions;

  /** An idle summarizer. */
  constructor(options: SummarizerOptions) {
    this.#o = options;
  }

  /**
   * The first turns the summary must cover for the next request of
   * `conversation`: where its window will start once it moves (a question
   * of the last one's size assumed). No more than it covers: no move is due.
   */
  due(conversation: Conversation, source: SummarySource): number {
    const { config } = this.#o;
    return coveredStart(
      conversation.turns.length,
      (i) => this.#cost(conversation, source.model, i),
      source.room,
      config.history_turns,
      conversation.windowStart,
      {
        summarized: conversation.summary?.turns ?? 0,
        hold: false,
        failedAt: null,
      },
    );
  }

  /** After a finished turn: asks for a summary when its next request's window will move past what the summary covers. */
  consider(conversation: Conversation, source: SummarySource): void {
    const upTo = this.due(conversation, source);
    const covered = conversation.summary?.turns ?? 0;
    const failed = conversation.summaryFailedAt;
    if (upTo <= covered || (failed !== null && upTo <= failed)) return;
    this.#o.runner.request(
      summaryKey(conversation),
      (signal) => this.#run(conversation, source, signal),
    );
  }

  /** A conversation deleted: no summary is made for it. */
  cancel(id: number): void {
    const key = `summary ${id}`;
    this.#o.runner.cancel((other) => other === key);
  }

  /** A private or unsaved conversation no longer current: gone, and so is its summary request. */
  forget(conversation: Conversation): void {
    const key = summaryKey(conversation);
    if (key === conversation) this.#o.runner.cancel((other) => other === key);
  }

  async #run(
    conversation: Conversation,
    source: SummarySource,
    signal: AbortSignal,
  ): Promise<void> {
    if (this.#gone(conversation)) return;
    const upTo = this.due(conversation, source);
    let plan = this.#plan(conversation, source, upTo);
    let summary: Summary | null = null;
    let failure: unknown = null;
    for (let attempt = 0; plan !== null && summary === null; attempt++) {
      try {
        summary = await this.#ask(source, plan, signal);
      } catch (error) {
        // Given way to a reply (asked again at the next pause), or cancelled.
        if (signal.aborted) return;
        failure = error;
        // Refused for its length despite the estimate: once more, with half
        // as many turns.
        const covered = conversation.summary?.turns ?? 0;
        const turns = plan.upTo - covered;
        plan = attempt === 0 && contextOverflow(error)
          ? this.#plan(conversation, source, upTo, Math.ceil(turns / 2))
          : null;
      }
    }
    if (signal.aborted) return;
    if (summary === null) {
      conversation.summaryFailedAt = upTo;
      log.warn("summary request failed", {
        conv: conversation.id,
        turns: upTo,
        error: failure === null
          ? "no turn fits the context beside the summary"
          : failure instanceof SummaryRefused
          ? failure.message
          : failure instanceof AssistantError
          ? describeSafely(failure)
          : failure instanceof Error
          ? failure.name
          : typeof failure,
      });
      return;
    }
    this.#keep(conversation, summary);
  }

  #plan(
    conversation: Conversation,
    source: SummarySource,
    upTo: number,
    atMost?: number,
  ): SummaryPlan | null {
    const { ledger, config } = this.#o;
    return planSummary({
      conversation,
      upTo,
      maxTokens: config.summary_tokens,
      nCtx: source.nCtx,
      used: source.used,
      fixed: source.fixed,
      cost: (i) => this.#cost(conversation, source.model, i),
      estimate: (text) => ledger.estimate(source.model.id, utf8Bytes(text)),
      ...(atMost === undefined ? {} : { atMost }),
    });
  }

  #cost(conversation: Conversation, model: ModelChoice, index: number): number {
    return this.#o.ledger.turnCost(
      model.id,
      conversation.messages[index] ?? [],
      conversation.tokens[index] ?? null,
    );
  }

  /** A private conversation is gone once another one is current. */
  #gone(conversation: Conversation): boolean {
    return conversation.private && conversation !== this.#o.current();
  }

  async #ask(
    source: SummarySource,
    plan: SummaryPlan,
    signal: AbortSignal,
  ): Promise<Summary> {
    const { config, llm, ledger } = this.#o;
    const body = summaryBody({
      model: source.model.id,
      messages: plan.messages,
      schemas: source.schemas,
      request: config.request,
      cacheReuse: config.cache_reuse,
      maxTokens: config.summary_tokens,
    });
    const stream = await llm.chat(source.model, body, signal);
    let text = "";
    let finish: string | null = null;
    let tokens: number | null = null;
    for await (const delta of stream) {
      if (delta.kind === "content") text += delta.text;
      else if (delta.kind === "finish") finish = delta.reason;
      else if (delta.kind === "usage" && delta.prompt !== undefined) {
        tokens = delta.used - delta.prompt;
      }
    }
    if (finish === "length") {
      throw new SummaryRefused("cut by its token limit");
    }
    if (finish === null) throw new SummaryRefused("no finish");
    const summary = summaryFrom(text);
    if (summary === null) throw new SummaryRefused("empty");
    return {
      text: summary,
      turns: plan.upTo,
      tokens: tokens ?? ledger.estimate(source.model.id, utf8Bytes(summary)),
      carrier: null,
    };
  }

  /** Stores the summary with its conversation (a private one's stays in memory) and tells every client. */
  #keep(conversation: Conversation, summary: Summary): void {
    // Made after a private conversation was left: nobody may see it.
    if (this.#gone(conversation)) return;
    const { id } = conversation;
    if (id !== null && !conversation.private) {
      const kept = this.#o.store.setSummary(id, {
        text: summary.text,
        turns: summary.turns,
        tokens: summary.tokens,
      });
      // Deleted meanwhile.
      if (!kept) return;
    }
    const current = this.#o.current();
    for (const target of new Set([conversation, current])) {
      if (target === conversation || (id !== null && target.id === id)) {
        target.summary = { ...summary };
        target.summaryFailedAt = null;
      }
    }
    log.info("summary made", {
      conv: id,
      turns: summary.turns,
      chars: summary.text.length,
      tokens: summary.tokens,
    });
    this.#o.publish({
      type: "summary",
      id: conversation.private ? null : id,
      text: summary.text,
      turns: summary.turns,
    });
  }
}

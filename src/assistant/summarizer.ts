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
import { withSafeMessage } from "../base/errors.ts";
import type { Config } from "../base/config.ts";
import { describeError, log } from "../base/log.ts";
import { contextOverflow } from "../llm/http_error.ts";
import type { Event } from "../protocol/protocol.ts";
import type { Conversation } from "./conversation.ts";
import type { SummaryJob } from "./conversation_summary.ts";
import type { IdleRunner } from "./idle_runner.ts";
import { summaryBody, summaryFrom } from "./summary_request.ts";
import { type TokenLedger, utf8Bytes } from "./token_ledger.ts";
import type { ModelSource } from "./turn.ts";

/** What the summarizer needs. */
export interface SummarizerOptions {
  llm: ModelSource;
  ledger: TokenLedger;
  config: Pick<Config, "summary_tokens" | "request" | "cache_reuse">;
  publish(event: Event): void;
  /** Where side requests wait for a pause in the replies. */
  runner: IdleRunner;
}

/** A summary as the model made it. */
interface Made {
  text: string;
  turns: number;
  tokens: number;
}

/** Why a summary request stored nothing; its message, of this module's own words, is safe to log. */
class SummaryRefused extends Error {
  override name = "SummaryRefused";
  /** A refusal in words of its own. */
  constructor(message: string) {
    super(message);
    withSafeMessage(this);
  }
}

/** The summary requests of the conversations whose window is about to move. */
export class Summarizer {
  readonly #o: SummarizerOptions;

  /** An idle summarizer. */
  constructor(options: SummarizerOptions) {
    this.#o = options;
  }

  /** After a finished turn: asks for a summary when the conversation says one is due. */
  consider(conversation: Conversation): void {
    if (conversation.summaryDue() === null) return;
    this.#o.runner.request(
      conversation,
      (signal) => this.#run(conversation, signal),
    );
  }

  /** A conversation deleted or left for good: no summary is made for it. */
  cancel(conversation: Conversation): void {
    this.#o.runner.cancel((key) => key === conversation);
  }

  async #run(conversation: Conversation, signal: AbortSignal): Promise<void> {
    // Asked again now: turns may have come, or the conversation gone.
    const upTo = conversation.summaryDue();
    if (upTo === null) return;
    let job = conversation.summaryRequest(upTo);
    let made: Made | null = null;
    let failure: unknown = null;
    for (let attempt = 0; job !== null && made === null; attempt++) {
      try {
        made = await this.#ask(job, signal);
      } catch (error) {
        // Given way to a reply (asked again at the next pause), or cancelled.
        if (signal.aborted) return;
        failure = error;
        // Refused for its length despite the estimate: once more, with half
        // as many turns.
        const turns = job.upTo - conversation.summarized;
        job = attempt === 0 && contextOverflow(error)
          ? conversation.summaryRequest(upTo, Math.ceil(turns / 2))
          : null;
      }
    }
    if (signal.aborted) return;
    const { id } = conversation;
    if (made === null) {
      conversation.summaryFailed(upTo);
      log.warn("summary request failed", {
        conv: id,
        turns: upTo,
        error: failure === null
          ? "no turn fits the context beside the summary"
          : describeError(failure),
      });
      return;
    }
    // Deleted meanwhile, or a private conversation left: nobody may see it.
    if (!conversation.keepSummary(made)) return;
    log.info("summary made", {
      conv: id,
      turns: made.turns,
      chars: made.text.length,
      tokens: made.tokens,
    });
    this.#o.publish({
      type: "summary",
      id: conversation.private ? null : id,
      text: made.text,
      turns: made.turns,
    });
  }

  async #ask(job: SummaryJob, signal: AbortSignal): Promise<Made> {
    const { config, llm, ledger } = this.#o;
    const body = summaryBody({
      model: job.model.id,
      messages: job.messages,
      schemas: job.schemas,
      request: config.request,
      cacheReuse: config.cache_reuse,
      maxTokens: config.summary_tokens,
    });
    const stream = await llm.chat(job.model, body, signal);
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
      turns: job.upTo,
      tokens: tokens ?? ledger.estimate(job.model.id, utf8Bytes(summary)),
    };
  }
}

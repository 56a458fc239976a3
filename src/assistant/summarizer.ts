/**
 * `compact`: what leaves the history window is summarised, not forgotten.
 * After a turn, when the next request's window will move past turns the
 * running summary does not cover, one side request to the same model folds
 * them into it (summary_request.ts), before the move: the request begins as
 * the turn's own did, so it costs the server little, and the next question
 * carries the new summary. Like a title request it runs only while no reply
 * does: a question aborts it, and it is asked again once the reply has ended
 * (meanwhile the window keeps the turns it would drop). One that fails,
 * stalls or is cut by its token limit stores nothing; the move then goes
 * ahead without it and the next move asks again, never in a loop.
 */
import { AssistantError } from "../base/errors.ts";
import type { Config } from "../base/config.ts";
import { describeSafely, log } from "../base/log.ts";
import type { ModelChoice } from "../llm/client.ts";
import type { Event } from "../protocol/protocol.ts";
import type { Store } from "../store/store.ts";
import type { Conversation, Summary } from "./conversation.ts";
import { coveredStart } from "./history_window.ts";
import {
  summaryBody,
  summaryFrom,
  summaryMessages,
} from "./summary_request.ts";
import type { TokenLedger } from "./token_ledger.ts";
import { IdleRunner } from "./idle_runner.ts";
import type { ModelSource } from "./turn.ts";
import { utf8Bytes } from "./token_ledger.ts";

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
  /** Whether a reply is in flight: no summary request starts then. */
  busy(): boolean;
  /** The conversation shown now. */
  current(): Conversation;
}

/** What the last turn of a conversation leaves for its summary. */
export interface SummarySource {
  model: ModelChoice;
  schemas: unknown[];
  /** Tokens the earlier turns could take in that turn's requests. */
  room: number;
}

interface Job extends SummarySource {
  conversation: Conversation;
}

/** Why a summary request stored nothing. */
class SummaryRefused extends Error {
  override name = "SummaryRefused";
}

/** The summary requests of the conversations whose window is about to move, one at a time. */
export class Summarizer implements Disposable {
  readonly #o: SummarizerOptions;
  readonly #runner: IdleRunner<Conversation, Job>;

  /** An idle summarizer. */
  constructor(options: SummarizerOptions) {
    this.#o = options;
    this.#runner = new IdleRunner({
      busy: options.busy,
      run: (_conversation, job, signal) => this.#run(job, signal),
    });
  }

  /**
   * The first turns the summary must cover for the next request of
   * `conversation`: where its window will start once it moves (a question
   * of the last one's size assumed). No more than it covers: no move is due.
   */
  due(conversation: Conversation, source: SummarySource): number {
    const { ledger, config } = this.#o;
    const count = conversation.turns.length;
    return coveredStart(
      count,
      (i) =>
        ledger.turnCost(
          source.model.id,
          conversation.messages[i] ?? [],
          conversation.tokens[i] ?? null,
        ),
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
    this.#runner.request(conversation, { conversation, ...source });
  }

  /** A conversation deleted: no summary is made for it. */
  cancel(id: number): void {
    this.#runner.cancel((conversation) => conversation.id === id);
  }

  /** A reply starts: the request in flight gives way and is asked again later. */
  pause(): void {
    this.#runner.pause();
  }

  /** Starts the next waiting request when nothing else runs. */
  resume(): void {
    this.#runner.resume();
  }

  /** Resolves once no summary request is in flight. */
  settled(): Promise<void> {
    return this.#runner.settled();
  }

  /** Aborts the request in flight and forgets the waiting ones. */
  [Symbol.dispose](): void {
    this.#runner[Symbol.dispose]();
  }

  async #run(job: Job, signal: AbortSignal): Promise<void> {
    const { conversation } = job;
    // A private conversation is gone once another one is current.
    if (conversation.private && conversation !== this.#o.current()) return;
    const upTo = this.due(conversation, job);
    const maxTokens = this.#o.config.summary_tokens;
    const messages = summaryMessages(conversation, upTo, maxTokens);
    if (messages === null) return;
    let summary: Summary;
    try {
      summary = await this.#ask(job, messages, upTo, signal);
    } catch (error) {
      // Given way to a reply (asked again at the next pause), or cancelled.
      if (signal.aborted) return;
      conversation.summaryFailedAt = upTo;
      log.warn("summary request failed", {
        conv: conversation.id,
        turns: upTo,
        error: error instanceof SummaryRefused
          ? error.message
          : error instanceof AssistantError
          ? describeSafely(error)
          : error instanceof Error
          ? error.name
          : typeof error,
      });
      return;
    }
    if (signal.aborted) return;
    this.#keep(conversation, summary);
  }

  async #ask(
    job: Job,
    messages: ReturnType<typeof summaryMessages> & object,
    upTo: number,
    signal: AbortSignal,
  ): Promise<Summary> {
    const { config, llm, ledger } = this.#o;
    const body = summaryBody({
      model: job.model.id,
      messages,
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
      turns: upTo,
      tokens: tokens ?? ledger.estimate(job.model.id, utf8Bytes(summary)),
      carrier: null,
    };
  }

  /** Stores the summary with its conversation (a private one's stays in memory) and tells every client. */
  #keep(conversation: Conversation, summary: Summary): void {
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

/**
 * `auto_title`: after a conversation's first reply, one short request asks
 * the model for a title of a few words. It is a side request (idle_runner.ts):
 * it runs only while no reply does, a reply that starts aborts it
 * (llama-server frees the slot of an aborted streaming request at once, and
 * would finish an aborted non-streaming one), and it is tried again once the
 * reply has ended. A user's rename, or a delete, cancels it for good.
 */
import { describeError, log } from "../base/log.ts";
import { chatBody, type ModelChoice } from "../llm/client.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import { cleanTitle, type Event } from "../protocol/protocol.ts";
import type { IdleRunner } from "./idle_runner.ts";
import type { ModelSource } from "./turn.ts";
import { withoutThinking } from "../llm/think_tags.ts";

/** Most tokens a title request may generate. */
export const TITLE_MAX_TOKENS = 24;

/** Characters of the question and of the reply the title request quotes. */
const QUOTE_CHARS = 2000;

const INSTRUCTION =
  "Write a title of two to six words for the conversation below, in the language it is written in. Answer with the title only: no quotes, no punctuation at the end.";

/** What a title is made from. */
export interface TitleSource {
  question: string;
  reply: string;
  /** The model the reply used: the title asks the same one. */
  model: ModelChoice;
}

/** Everything a {@link Titler} needs, injected. */
export interface TitlerOptions {
  llm: ModelSource;
  /** The config's [request] table, for the model's sampling settings. */
  request: Record<string, unknown>;
  /** `n_cache_reuse` as every request sends it (`cache_reuse`). */
  cacheReuse: number;
  /** Stores a title; false when the conversation is gone. */
  save(id: number, title: string): boolean;
  emit(event: Event): void;
  /** Where side requests wait for a pause in the replies. */
  runner: IdleRunner;
}

/** The messages of a title request. */
export function titleMessages(source: TitleSource): ChatMessage[] {
  const cut = (text: string) =>
    text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS)}…` : text;
  return [
    { role: "system", content: INSTRUCTION },
    {
      role: "user",
      content: `Question:\n${cut(source.question)}\n\nAnswer:\n${
        cut(source.reply)
      }`,
    },
  ];
}

/** The title in what the model wrote: its first line, without quotes, a `Title:` label or a final full stop; null when nothing usable is left. */
export function titleFrom(text: string): string | null {
  const line = withoutThinking(text)
    .split("\n").map((part) => part.trim()).find((part) => part !== "") ?? "";
  let bare = line.replace(/^#+\s*/, "").replace(/^title\s*:\s*/i, "");
  // `"A title".` and `**A title.**`: quotes and full stops, in any order.
  for (let before = ""; before !== bare;) {
    before = bare;
    bare = bare.replace(/^["'“”‘’*_`]+|["'“”‘’*_`]+$/g, "")
      .replace(/[.。]+$/, "").trim();
  }
  return cleanTitle(bare);
}

interface Job extends TitleSource {
  id: number;
}

/** A title request's key among the side requests. */
function titleKey(id: number): string {
  return `title ${id}`;
}

/** The title requests of the conversations that await one. */
export class Titler {
  readonly #options: TitlerOptions;

  /** Creates an idle titler. */
  constructor(options: TitlerOptions) {
    this.#options = options;
  }

  /** Asks for a title for conversation `id`, as soon as no reply is in flight. */
  request(id: number, source: TitleSource): void {
    const job: Job = { id, ...source };
    this.#options.runner.request(
      titleKey(id),
      (signal) => this.#run(job, signal),
    );
  }

  /** A user's rename or a delete: conversation `id` gets no title from the model. */
  cancel(id: number): void {
    const key = titleKey(id);
    this.#options.runner.cancel((other) => other === key);
  }

  async #run(job: Job, signal: AbortSignal): Promise<void> {
    let title: string | null;
    try {
      title = await this.#ask(job, signal);
    } catch (error) {
      // Given way to a reply: the job waits for the next quiet moment.
      if (signal.aborted) return;
      log.warn("title request failed", {
        conv: job.id,
        error: describeError(error),
      });
      return;
    }
    if (signal.aborted) return;
    if (title === null) {
      log.info("title request gave no title", { conv: job.id });
      return;
    }
    if (!this.#options.save(job.id, title)) return;
    log.info("title set", { conv: job.id, chars: title.length });
    this.#options.emit({ type: "renamed", id: job.id, title });
  }

  async #ask(job: Job, signal: AbortSignal): Promise<string | null> {
    const body = chatBody({
      model: job.model.id,
      messages: titleMessages(job),
      tools: [],
      thinking: false,
      extra: this.#options.request,
      cacheReuse: this.#options.cacheReuse,
    });
    // Whatever [request] says, a title is short.
    delete body.n_predict;
    body.max_tokens = TITLE_MAX_TOKENS;
    const stream = await this.#options.llm.chat(job.model, body, signal);
    let text = "";
    for await (const delta of stream) {
      if (delta.kind === "content") text += delta.text;
    }
    return titleFrom(text);
  }
}

/**
 * A question's request as its conversation plans it: the system prompt
 * stamped with the date and the model, the question stamped with the time
 * and carrying its files, the history and the running summary, and how the
 * window may move for this model (a turn at a time, or in blocks where the
 * server cannot shift its cache or a summary is made).
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import {
  dataUrl,
  questionContent,
  type QuestionFile,
  withPictures,
} from "./attachments.ts";
import { ContextPlan } from "./budget.ts";
import type { CacheBook } from "./cache_book.ts";
import { stampQuestion, systemPrompt } from "./prompt.ts";
import type { RunningSummary } from "./summary_request.ts";
import {
  IMAGE_TOKENS,
  type Tokenize,
  type TokenLedger,
  utf8Bytes,
} from "./token_ledger.ts";
import type { TurnConfig } from "./turn_config.ts";
import type { ModelChoice } from "../llm/client.ts";

/** What a question is planned with. */
export interface Question {
  text: string;
  /** The files sent with it, read; pictures with their bytes. */
  files: readonly QuestionFile[];
  /** A retry or an edit: asked as if the conversation's last turn had not been. */
  replaces: boolean;
  model: ModelChoice;
  schemas: unknown[];
  now: Date;
  /** The server's cache still holds this conversation's last request. */
  warm: boolean;
  tokenize: Tokenize | undefined;
  signal: AbortSignal;
}

/** The conversation's side of a request. */
export interface RequestInput {
  question: Question;
  /** The earlier turns the request may carry, as sent, with their sizes (null: unknown). */
  history: ChatMessage[][];
  counts: (number | null)[];
  /** The summary the request carries, if any. */
  summary: RunningSummary | null;
  /** Where the conversation's last request started its window; null before one. */
  previous: number | null;
  /** The window start a summary was last asked for and could not be made. */
  failedAt: number | null;
  /** The memories the system message ends with; "" for none. */
  memories: string;
}

/** Plans a question's request within the model's context. */
export function planRequest(
  deps: { config: TurnConfig; ledger: TokenLedger; book: CacheBook },
  input: RequestInput,
): Promise<ContextPlan> {
  const { config, ledger, book } = deps;
  const { question, summary, previous } = input;
  const { model, now, files } = question;
  const asked = config.request.n_cache_reuse;
  const reuse = typeof asked === "number" ? asked : config.cache_reuse;
  // A window that slides a turn at a time costs nothing more only where
  // the server shifts the cache of the turns it keeps; a summary is made
  // for a block of turns at once.
  const blocks = config.compact || reuse <= 0 ||
    book.shifts(model.id) === false;
  const stamped = stampQuestion(question.text, now);
  const kept = {
    role: "user" as const,
    content: questionContent(
      files.length > 0 ? stamped.trimEnd() : stamped,
      files,
    ),
  };
  const [sent] = withPictures([kept], (index) => dataUrl(files[index]!));
  return ContextPlan.create({
    ledger,
    model: model.id,
    nCtx: model.nCtx,
    config,
    system: {
      role: "system",
      content: systemPrompt(config.system_prompt, model.id, now) +
        input.memories,
    },
    schemas: question.schemas,
    question: sent as ChatMessage & { role: "user" },
    kept,
    files: files.map((file) => ({
      name: file.name,
      tokens: file.text === null
        ? IMAGE_TOKENS
        : ledger.estimate(model.id, utf8Bytes(file.text)),
    })),
    history: input.history,
    counts: input.counts,
    tokenize: question.tokenize,
    signal: question.signal,
    blockFrom: blocks ? previous : null,
    summary,
    cover: config.compact || summary
      ? {
        summarized: summary?.turns ?? 0,
        hold: config.compact,
        failedAt: input.failedAt,
      }
      : null,
    cache: { book, warm: question.warm, reuse, previous },
  });
}

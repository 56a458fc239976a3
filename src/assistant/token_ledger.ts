/**
 * What the daemon knows of each model's token counts, learned from
 * llama-server itself: how many bytes of text make a token (every count
 * `/tokenize` answers calibrates it), how large the fixed part of a request
 * is (system prompt, tool schemas and the template around them, from the
 * prompt size `usage` reports), and the context size when `/props` did not
 * say (from a refusal). Where a count cannot be measured (turns saved before
 * counts were kept, a server without `/tokenize`) it estimates, erring high.
 */
import {
  type ChatMessage,
  contentImages,
  contentText,
} from "../llm/chat_types.ts";
import { describeError, log } from "../base/log.ts";

/** Template tokens around one message, taken high (ChatML uses 5). */
export const MESSAGE_OVERHEAD = 8;
/**
 * Tokens a picture is taken for until the server reports a request's size:
 * its image encoder decides (256 for Gemma 3, about 2,000 for Qwen2.5-VL at
 * the 1,536 px the clients scale to), and a request refused for its length
 * is sent again with less.
 */
export const IMAGE_TOKENS = 1024;
/** Template tokens around one tool call beyond its name and arguments, taken high. */
export const CALL_OVERHEAD = 24;
/** Template tokens of a request around the system prompt and the question, taken high. */
const TEMPLATE_ALLOWANCE = 32;
/** Template tokens around the tool schemas (the instructions a template adds with them), taken high. */
const TOOLS_ALLOWANCE = 192;
/** Bytes per token assumed before the model's own counts are known: few, so estimates err high. */
const DEFAULT_BYTES_PER_TOKEN = 2.5;
/** Estimates are this far above the calibrated average. */
const HIGH = 1.25;
/** After a failed count, how long a model's counts are estimated before `/tokenize` is tried again. */
const RETRY_MS = 60_000;
/** Texts shorter than this say little about a tokenizer and are not used to calibrate. */
const CALIBRATION_MIN_BYTES = 32;

/** Counts the tokens of a text through llama-server. */
export type Tokenize = (text: string, signal: AbortSignal) => Promise<number>;

/** What counting a message list covers: its text, and the messages and calls the template wraps around it. */
export interface Shape {
  /** UTF-8 bytes of the text. */
  bytes: number;
  messages: number;
  calls: number;
  /** Pictures in questions. */
  images: number;
}

/** A count and whether llama-server measured it (else it is an estimate). */
export interface Count {
  tokens: number;
  measured: boolean;
}

interface ModelBook {
  /** Bytes and tokens of every text `/tokenize` counted. */
  bytes: number;
  tokens: number;
  /**
   * The fixed part of a request and the bytes of text it was taken for:
   * counted through `/tokenize` (`learned` false), then learned from what
   * llama-server reported.
   */
  fixed: { tokens: number; bytes: number; learned: boolean } | null;
  /** The context size a refusal reported. */
  nCtx: number | null;
}

/** UTF-8 length of a string without encoding it. */
export function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) {
      bytes += 1;
    } else if (code >= 0xd800 && code <= 0xdbff) {
      // A surrogate pair: two UTF-16 units, four bytes.
      bytes += 2;
      i++;
    } else {
      bytes += 2;
    }
  }
  return bytes;
}

/** The text of a message list that counting covers: contents, tool names and arguments. */
export function messagesText(messages: readonly ChatMessage[]): string {
  const parts: string[] = [];
  for (const message of messages) {
    const text = contentText(message.content);
    if (text !== "") parts.push(text);
    if (message.role === "assistant") {
      for (const call of message.tool_calls ?? []) {
        parts.push(call.function.name, call.function.arguments);
      }
    }
  }
  return parts.join("\n");
}

const shapes = new WeakMap<readonly ChatMessage[], Shape>();

/** The shape of a message list; cached, as a stored turn never changes. */
export function shapeOf(messages: readonly ChatMessage[]): Shape {
  const known = shapes.get(messages);
  if (known) return known;
  let calls = 0;
  let images = 0;
  for (const message of messages) {
    if (message.role === "assistant") calls += message.tool_calls?.length ?? 0;
    if (message.role === "user") images += contentImages(message.content);
  }
  const shape = {
    bytes: utf8Bytes(messagesText(messages)),
    messages: messages.length,
    calls,
    images,
  };
  shapes.set(messages, shape);
  return shape;
}

/** Tokens a shape adds to its text: the template's, and its pictures'. */
export function overheadOf(shape: Shape): number {
  return shape.messages * MESSAGE_OVERHEAD + shape.calls * CALL_OVERHEAD +
    shape.images * IMAGE_TOKENS;
}

/** Template tokens around the system prompt, `tools` schemas and the question. */
function allowance(tools: number): number {
  return TEMPLATE_ALLOWANCE + (tools > 0 ? TOOLS_ALLOWANCE : 0);
}

/** Per-model token knowledge; one per daemon, shared by its replies. */
export class TokenLedger {
  #models = new Map<string, ModelBook>();
  /** When counting last failed, per model: it is not tried again for a while. */
  #failed = new Map<string, number>();
  readonly #now: () => number;

  /** An empty ledger; `now` (milliseconds) is injected for tests. */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  #book(model: string): ModelBook {
    let book = this.#models.get(model);
    if (!book) {
      book = { bytes: 0, tokens: 0, fixed: null, nCtx: null };
      this.#models.set(model, book);
    }
    return book;
  }

  /** Tokens of `bytes` bytes of text: at the model's calibrated rate and a quarter above it. */
  estimate(model: string, bytes: number): number {
    const book = this.#models.get(model);
    const rate = book && book.tokens > 0
      ? book.bytes / book.tokens
      : DEFAULT_BYTES_PER_TOKEN;
    return Math.ceil((bytes * HIGH) / rate);
  }

  /** The size of a stored turn as history: its measured count, else an estimate. */
  turnCost(
    model: string,
    messages: readonly ChatMessage[],
    stored: number | null,
  ): number {
    if (stored !== null) return stored;
    const shape = shapeOf(messages);
    return this.estimate(model, shape.bytes) + overheadOf(shape);
  }

  /**
   * Tokens of a text through `/tokenize`; an estimate when that fails. Never
   * rejects. Conversation text calibrates the estimates; a tool's output
   * (`calibrate` false) may be anything and does not.
   */
  async count(
    model: string,
    text: string,
    tokenize: Tokenize | undefined,
    signal: AbortSignal,
    calibrate = true,
  ): Promise<Count> {
    const bytes = utf8Bytes(text);
    const failed = this.#failed.get(model);
    const resting = failed !== undefined && this.#now() - failed < RETRY_MS;
    if (tokenize && text !== "" && !resting) {
      try {
        const tokens = await tokenize(text, signal);
        if (calibrate && bytes >= CALIBRATION_MIN_BYTES && tokens > 0) {
          const book = this.#book(model);
          book.bytes += bytes;
          book.tokens += tokens;
        }
        return { tokens, measured: true };
      } catch (error) {
        if (!signal.aborted) {
          // A server without /tokenize fails every time: one request and
          // one log line a minute, not several a turn.
          this.#failed.set(model, this.#now());
          log.warn("token count failed, estimating for a minute", {
            model,
            error: describeError(error),
          });
        }
      }
    }
    return {
      tokens: text === "" ? 0 : this.estimate(model, bytes),
      measured: false,
    };
  }

  /** Tokens of a message list, template included; measured when its text was. */
  async countMessages(
    model: string,
    messages: readonly ChatMessage[],
    tokenize: Tokenize | undefined,
    signal: AbortSignal,
  ): Promise<Count> {
    const count = await this.count(
      model,
      messagesText(messages),
      tokenize,
      signal,
    );
    return {
      tokens: count.tokens + overheadOf(shapeOf(messages)),
      measured: count.measured,
    };
  }

  /** The fixed part of a request whose system prompt and tool schemas are `bytes` long (`tools` of them): as known, else estimated. */
  fixed(model: string, bytes: number, tools: number): number {
    const known = this.#models.get(model)?.fixed;
    if (!known) {
      return this.estimate(model, bytes) + allowance(tools);
    }
    // Tools that came since, or a longer date, add to what was known.
    return known.tokens +
      Math.max(0, this.estimate(model, bytes - known.bytes));
  }

  /**
   * Counts the fixed part through `/tokenize` the first time a model is
   * used, so the first request after a start neither leaves out history
   * for nothing nor estimates old turns at a rate not yet calibrated. One
   * request per model per daemon; nothing once the size is known.
   */
  async prime(
    model: string,
    text: string,
    tools: number,
    tokenize: Tokenize | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    if (this.#models.get(model)?.fixed || !tokenize) return;
    const count = await this.count(model, text, tokenize, signal);
    const book = this.#book(model);
    if (!count.measured || book.fixed) return;
    book.fixed = {
      tokens: count.tokens + allowance(tools),
      bytes: utf8Bytes(text),
      learned: false,
    };
  }

  /**
   * Learns the fixed part from a request's prompt size less what was measured
   * in it. The largest seen is kept: an estimated history taken high makes
   * the remainder look smaller than it is.
   */
  learnFixed(model: string, bytes: number, tokens: number): void {
    const book = this.#book(model);
    const known = book.fixed;
    if (known?.learned && known.bytes === bytes && known.tokens >= tokens) {
      return;
    }
    book.fixed = { tokens: Math.max(0, tokens), bytes, learned: true };
  }

  /** The context size a refusal reported for a model whose `/props` did not say. */
  contextSize(model: string): number | null {
    return this.#models.get(model)?.nCtx ?? null;
  }

  /** Records the context size a refusal reported. */
  learnContextSize(model: string, nCtx: number): void {
    this.#book(model).nCtx = nCtx;
  }
}

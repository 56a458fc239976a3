/**
 * The embeddings endpoint (`embed_url`): an OpenAI-compatible
 * `POST /v1/embeddings`, such as a llama-server started with `--embeddings`
 * and an embedding model. Every request is bounded (by `stall_timeout`, or
 * a whole call by a bound of its own); an answer out of shape (no vectors,
 * vectors of different or wrong dimensions, numbers that are not finite)
 * is an error, never a vector kept.
 *
 * Each input is kept within what the server takes at once. A mean-pooled
 * embedding model cannot split an input across batches, so llama-server
 * refuses any input longer than its physical batch (`n_ubatch`, 512 tokens
 * unless set) with a 500 "input (N tokens) is too large to process", which
 * fails the whole request. So each input is cut to that many tokens by an
 * estimate that errs high (`cutToTokens`); a batch the server still refuses
 * is split, and a text it refuses on its own is cut to the batch size its
 * message names, or else halved, and sent again: one text never fails the
 * others, and none stops the work.
 */
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import { httpError } from "./http_error.ts";

/** How to reach the embeddings endpoint. */
export interface EmbedderOptions {
  /** Base URL, as `llm_url` is. */
  url: string;
  /** The `model` of each request; "" sends none. */
  model: string;
  /** Bound of one request, in ms. */
  stallMs: number;
  fetch?: typeof fetch;
}

/**
 * A batch's vectors, in order (null for a text left without one: blank, or
 * refused by the server whatever its length), the name of the model that
 * made them (the config's `embed_model`, else `/props` `model_path`, else
 * what the answer names) and their dimension (null when none came back).
 */
export interface Embedded {
  name: string;
  dim: number | null;
  vectors: (Float32Array | null)[];
}

/** How one call is bounded. */
export interface EmbedBound {
  /** The whole call, every request in it, within this many ms (a query's); default each request within `stallMs`. */
  withinMs?: number;
}

/** Tokens of one input when the server does not say: llama-server's default physical batch. */
const DEFAULT_TOKENS = 512;
/** Tokens kept free beside the text: the model's own BOS, EOS or separator. */
const SPECIAL_TOKENS = 8;

/** What `/props` told of the server, once it answered. */
interface Props {
  /** Tokens one input may have. */
  tokens: number;
  /** The model's file, as the server names it; null when it does not. */
  path: string | null;
}

/** A text of a batch, and its place in it. */
interface Item {
  at: number;
  text: string;
}

/** One call of `embed`: where its vectors go, how a text is cut, how each request is bounded. */
interface Call {
  vectors: (Float32Array | null)[];
  /** The model the first answer named. */
  answered: { name: string | null };
  cut: (text: string) => string;
  signal: AbortSignal;
  bounded: () => AbortSignal;
}

/** A refusal of the inputs rather than a failure of the server: the batch is split, a text halved. */
class Refusal extends Error {
  /** Whether the server said an input is too long; else it refused one outright (an empty one). */
  readonly tooLarge: boolean;

  constructor(tooLarge: boolean) {
    super(tooLarge ? "an input is too large" : "an input is refused");
    this.tooLarge = tooLarge;
  }
}

/** llama-server's messages for an input longer than its batch or its context. */
const TOO_LARGE =
  /too large to process|larger than the max context size|exceeds the available context size/i;
/** Its message for an input that came to no tokens. */
const EMPTY = /input content cannot be empty/i;

function failed(message: string, cause?: unknown): AssistantError {
  return new AssistantError(`embedding server: ${message}`, {
    code: "embed_failed",
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * `text` cut to about `tokens` tokens by an estimate that errs high for
 * most text: a code point counts as many tokens as its UTF-8 bytes (a
 * byte-level tokenizer makes no more), except a Latin letter or a space,
 * which counts half (words take two or more of them a token). Denser text
 * (a letter between stops, a token each) may come out longer: the server
 * refuses it, and it is halved.
 */
export function cutToTokens(text: string, tokens: number): string {
  let cost = 0;
  let at = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    cost += code === 32 || (code | 32) >= 97 && (code | 32) <= 122
      ? 0.5
      : code < 0x80
      ? 1
      : code < 0x800
      ? 2
      : code < 0x10000
      ? 3
      : 4;
    if (cost > tokens) return text.slice(0, at);
    at += char.length;
  }
  return text;
}

/** The first half of a text, never splitting a surrogate pair. */
function halve(text: string): string {
  let half = text.length >> 1;
  const last = text.charCodeAt(half - 1);
  if (last >= 0xd800 && last <= 0xdbff) half--;
  return text.slice(0, half);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A positive integer of `props` or its `default_generation_settings`, or null. */
function sizeOf(props: Record<string, unknown>, key: string): number | null {
  const settings = props.default_generation_settings;
  for (const value of [props[key], isRecord(settings) && settings[key]]) {
    if (Number.isSafeInteger(value) && (value as number) > 0) {
      return value as number;
    }
  }
  return null;
}

/** The client of one embeddings endpoint. */
export class Embedder {
  readonly #o: EmbedderOptions;
  readonly #base: string;
  readonly #fetch: typeof fetch;
  /** Read once the server answered `/props`; forgotten when it fails, for it may come back with another model. */
  #props: Props | null = null;
  /** A batch size the server named in a refusal, lower than `/props` said. */
  #named: number | null = null;

  /** A client; nothing is asked until a batch is. */
  constructor(options: EmbedderOptions) {
    this.#o = options;
    this.#base = options.url.replace(/\/+$/, "");
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** The vectors of `texts`, in order; AssistantError `embed_failed` when the server fails or answers out of shape. */
  async embed(
    texts: readonly string[],
    signal: AbortSignal,
    bound: EmbedBound = {},
  ): Promise<Embedded> {
    const deadline = bound.withinMs === undefined
      ? null
      : AbortSignal.timeout(bound.withinMs);
    const bounded = () =>
      AbortSignal.any([
        signal,
        deadline ?? AbortSignal.timeout(this.#o.stallMs),
      ]);
    try {
      const props = await this.#readProps(signal, bounded());
      const vectors = new Array<Float32Array | null>(texts.length).fill(null);
      const answered: { name: string | null } = { name: null };
      const cut = (text: string) => this.#cut(text, props);
      const items = texts.flatMap((text, at) =>
        text.trim() === "" ? [] : [{ at, text: cut(text) }]
      );
      await this.#send(items, { vectors, answered, cut, signal, bounded });
      const dim = vectors.find((vector) => vector !== null)?.length ?? null;
      if (vectors.some((vector) => vector !== null && vector.length !== dim)) {
        throw failed("its vectors differ in dimension");
      }
      const name = this.#o.model !== ""
        ? this.#o.model
        : props.path ?? answered.name ?? "default";
      return { name, dim, vectors };
    } catch (error) {
      // Another model may answer once the server is back.
      if (!signal.aborted) this.#props = null;
      throw error;
    }
  }

  /** Cuts a text to the tokens one input may have. */
  #cut(text: string, props: Props): string {
    const tokens = Math.min(props.tokens, this.#named ?? Infinity);
    return cutToTokens(text, Math.max(1, tokens - SPECIAL_TOKENS));
  }

  /**
   * Sends a batch; one the server refuses is split, each part cut again
   * to a batch size the refusal named, and a text found too long on its
   * own is halved, until each goes or is left without a vector.
   */
  async #send(items: Item[], call: Call): Promise<void> {
    if (items.length === 0) return;
    let answer: { name: string | null; vectors: Float32Array[] };
    try {
      answer = await this.#post(
        items.map((item) => item.text),
        call.signal,
        call.bounded,
      );
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      const again = items.map(({ at, text }) => ({ at, text: call.cut(text) }));
      if (again.length > 1) {
        const half = again.length >> 1;
        await this.#send(again.slice(0, half), call);
        await this.#send(again.slice(half), call);
        return;
      }
      const { at, text } = items[0]!;
      const shorter = !error.tooLarge
        ? ""
        : again[0]!.text.length < text.length
        ? again[0]!.text
        : halve(text);
      if (shorter.trim() === "") {
        log.info("embedding server refused a text: left without a vector", {
          chars: text.length,
        });
        return;
      }
      await this.#send([{ at, text: shorter }], call);
      return;
    }
    call.answered.name ??= answer.name;
    items.forEach((item, i) => call.vectors[item.at] = answer.vectors[i]!);
  }

  /** One request: its vectors in order, or a Refusal, or AssistantError `embed_failed`. */
  async #post(
    texts: string[],
    signal: AbortSignal,
    bounded: () => AbortSignal,
  ): Promise<{ name: string | null; vectors: Float32Array[] }> {
    const body = JSON.stringify({
      input: texts,
      ...(this.#o.model === "" ? {} : { model: this.#o.model }),
      encoding_format: "float",
    });
    const path = "/v1/embeddings";
    const { response, text } = await this.#request(path, signal, bounded(), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    if (response.status >= 400) {
      this.#refusal(response.status, text);
      throw failed(
        `it answered ${response.status}`,
        httpError(response, text, path),
      );
    }
    let answer: { model?: unknown; data?: unknown };
    try {
      answer = JSON.parse(text);
    } catch (error) {
      throw failed("its answer is not JSON", error);
    }
    const data = Array.isArray(answer?.data) ? answer.data : null;
    if (data === null || data.length !== texts.length) {
      throw failed(
        `it answered ${data?.length ?? "no"} vectors for ${texts.length} texts`,
      );
    }
    const vectors = new Array<Float32Array>(texts.length);
    for (const [position, item] of data.entries()) {
      const { embedding, index } = (item ?? {}) as {
        embedding?: unknown;
        index?: unknown;
      };
      const at = typeof index === "number" ? index : position;
      if (
        !Array.isArray(embedding) || embedding.length === 0 ||
        !embedding.every((x) => typeof x === "number" && Number.isFinite(x)) ||
        at < 0 || at >= texts.length || vectors[at] !== undefined
      ) {
        throw failed("a vector is not a list of finite numbers");
      }
      vectors[at] = Float32Array.from(embedding as number[]);
    }
    if (vectors.some((vector) => vector.length !== vectors[0]!.length)) {
      throw failed("its vectors differ in dimension");
    }
    const name = typeof answer.model === "string" && answer.model !== ""
      ? answer.model
      : null;
    return { name, vectors };
  }

  /** What `/props` says, asked once the server answers it; the defaults when it says nothing. */
  async #readProps(
    signal: AbortSignal,
    bounded: AbortSignal,
  ): Promise<Props> {
    if (this.#props !== null) return this.#props;
    let props: Record<string, unknown> = {};
    let answer: { response: Response; text: string };
    try {
      answer = await this.#request("/props", signal, bounded);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      // Not answering at all: asked again next time, and the batch says why.
      log.info("embedding server props unknown", {
        error: describeError(error),
      });
      return { tokens: DEFAULT_TOKENS, path: null };
    }
    try {
      const parsed: unknown = answer.response.status < 400
        ? JSON.parse(answer.text)
        : null;
      if (isRecord(parsed)) props = parsed;
    } catch {
      // A server without /props, or an answer out of shape: the defaults.
    }
    // The physical batch bounds one input; the slot's context too.
    let tokens = sizeOf(props, "n_ubatch") ?? sizeOf(props, "n_batch") ??
      DEFAULT_TOKENS;
    tokens = Math.min(tokens, sizeOf(props, "n_ctx") ?? Infinity);
    const path = typeof props.model_path === "string" && props.model_path !== ""
      ? props.model_path
      : null;
    this.#props = { tokens, path };
    return this.#props;
  }

  /** One request's answer, whatever its status; AssistantError `embed_failed` when none comes. */
  async #request(
    path: string,
    signal: AbortSignal,
    bounded: AbortSignal,
    init: RequestInit = {},
  ): Promise<{ response: Response; text: string }> {
    let response: Response;
    try {
      response = await this.#fetch(this.#base + path, {
        ...init,
        signal: bounded,
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw bounded.aborted
        ? failed("it did not answer in time", error)
        : failed(`unreachable at ${this.#o.url}`, error);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw bounded.aborted
        ? failed("it did not answer in time", error)
        : failed("its answer broke off", error);
    }
    return { response, text };
  }

  /** Throws a Refusal when an error answer refuses an input rather than failing; learns a batch size it names. */
  #refusal(status: number, text: string): void {
    if (status !== 400 && status !== 500) return;
    let message = "";
    try {
      const body: unknown = JSON.parse(text);
      const error = isRecord(body) ? body.error : undefined;
      if (isRecord(error) && typeof error.message === "string") {
        message = error.message;
      }
    } catch {
      return;
    }
    if (TOO_LARGE.test(message)) {
      const named = Number(/batch size: (\d+)/.exec(message)?.[1]);
      if (named > 0) this.#named = Math.min(this.#named ?? named, named);
      throw new Refusal(true);
    }
    if (status === 400 && EMPTY.test(message)) throw new Refusal(false);
  }
}

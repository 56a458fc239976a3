/**
 * The embeddings endpoint (`embed_url`): an OpenAI-compatible
 * `POST /v1/embeddings`, such as a llama-server started with `--embeddings`
 * and an embedding model. Every request is bounded by `stall_timeout`; an
 * answer out of shape (no vectors, vectors of different or wrong
 * dimensions, numbers that are not finite) is an error, never a vector
 * kept. Its context size, from `/props`, bounds the text of one input.
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

/** A batch's vectors and the model that made them (as the server names it, else the config's). */
export interface Embedded {
  model: string;
  vectors: Float32Array[];
}

/** Characters of one input when the server says no context size: about 512 tokens of any language. */
const DEFAULT_CHARS = 1536;

function failed(message: string, cause?: unknown): AssistantError {
  return new AssistantError(`embedding server: ${message}`, {
    code: "embed_failed",
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The client of one embeddings endpoint. */
export class Embedder {
  readonly #o: EmbedderOptions;
  readonly #base: string;
  readonly #fetch: typeof fetch;
  #chars: number | null = null;

  /** A client; nothing is asked until a batch is. */
  constructor(options: EmbedderOptions) {
    this.#o = options;
    this.#base = options.url.replace(/\/+$/, "");
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** The endpoint's base URL. */
  get url(): string {
    return this.#o.url;
  }

  /**
   * Characters of one input, cut to about the model's context (`/props`
   * `n_ctx`, two characters a token so that even dense text fits), asked
   * once; a default when the server does not say.
   */
  async inputChars(signal: AbortSignal): Promise<number> {
    if (this.#chars !== null) return this.#chars;
    let chars = DEFAULT_CHARS;
    try {
      const props = JSON.parse(await this.#get("/props", signal)) as {
        default_generation_settings?: { n_ctx?: unknown };
      };
      const nCtx = props?.default_generation_settings?.n_ctx;
      if (typeof nCtx === "number" && nCtx > 0) chars = nCtx * 2;
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      log.info("embedding server props unknown", {
        error: describeError(error),
      });
    }
    this.#chars = chars;
    return chars;
  }

  /** The vectors of `texts`, in order; AssistantError `embed_failed` when the server fails or answers out of shape. */
  async embed(
    texts: readonly string[],
    signal: AbortSignal,
  ): Promise<Embedded> {
    const body = JSON.stringify({
      input: texts,
      ...(this.#o.model === "" ? {} : { model: this.#o.model }),
      encoding_format: "float",
    });
    const text = await this.#request("/v1/embeddings", signal, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
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
    const dim = vectors[0]!.length;
    if (vectors.some((vector) => vector.length !== dim)) {
      throw failed("its vectors differ in dimension");
    }
    const model = this.#o.model !== ""
      ? this.#o.model
      : typeof answer.model === "string" && answer.model !== ""
      ? answer.model
      : "default";
    return { model, vectors };
  }

  async #get(path: string, signal: AbortSignal): Promise<string> {
    return await this.#request(path, signal);
  }

  async #request(
    path: string,
    signal: AbortSignal,
    init: RequestInit = {},
  ): Promise<string> {
    const bounded = AbortSignal.any([
      signal,
      AbortSignal.timeout(this.#o.stallMs),
    ]);
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
      throw failed("its answer broke off", error);
    }
    if (response.status >= 400) {
      throw failed(
        `it answered ${response.status}`,
        httpError(response, text, path),
      );
    }
    return text;
  }
}

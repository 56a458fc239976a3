/**
 * The embeddings endpoint (`embed_url`): an OpenAI-compatible
 * `POST /v1/embeddings`, such as a llama-server started with `--embeddings`
 * and an embedding model. Every request is bounded (by `stall_timeout`, or
 * a whole call by a bound of its own); an answer out of shape (no vectors,
 * vectors of different or wrong dimensions, numbers that are not finite)
 * is an error, never a vector kept (`embed_answers.ts`).
 *
 * Each input is kept within what the server takes at once, cut to the
 * tokens of its batch (`embed_inputs.ts`); a batch the server still refuses
 * is split, and a text it refuses on its own is cut to the batch size its
 * message names, or else halved, and sent again: one text never fails the
 * others, and none stops the work.
 */
import { describeError, log } from "../base/log.ts";
import { embedFailed, Refusal, refusalIn, vectorsIn } from "./embed_answers.ts";
import {
  fitInput,
  halve,
  type Props,
  readProps,
  unknownProps,
} from "./embed_inputs.ts";
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
      const cut = (text: string) => fitInput(text, props, this.#named);
      const items = texts.flatMap((text, at) =>
        text.trim() === "" ? [] : [{ at, text: cut(text) }]
      );
      await this.#send(items, { vectors, answered, cut, signal, bounded });
      const dim = vectors.find((vector) => vector !== null)?.length ?? null;
      if (vectors.some((vector) => vector !== null && vector.length !== dim)) {
        throw embedFailed("its vectors differ in dimension");
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
      const refusal = refusalIn(response.status, text);
      if (refusal !== null) {
        // A smaller batch than `/props` said bounds every input from now on.
        if (refusal.named !== null) {
          this.#named = Math.min(this.#named ?? refusal.named, refusal.named);
        }
        throw refusal;
      }
      throw embedFailed(
        `it answered ${response.status}`,
        httpError(response, text, path),
      );
    }
    return vectorsIn(text, texts.length);
  }

  /** What `/props` says, asked once the server answers it; the defaults when it says nothing. */
  async #readProps(
    signal: AbortSignal,
    bounded: AbortSignal,
  ): Promise<Props> {
    if (this.#props !== null) return this.#props;
    let answer: { response: Response; text: string };
    try {
      answer = await this.#request("/props", signal, bounded);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      // Not answering at all: asked again next time, and the batch says why.
      log.info("embedding server props unknown", {
        error: describeError(error),
      });
      return unknownProps();
    }
    this.#props = readProps(answer.response.status, answer.text);
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
        ? embedFailed("it did not answer in time", error)
        : embedFailed(`unreachable at ${this.#o.url}`, error);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw bounded.aborted
        ? embedFailed("it did not answer in time", error)
        : embedFailed("its answer broke off", error);
    }
    return { response, text };
  }
}

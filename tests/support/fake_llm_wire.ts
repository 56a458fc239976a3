/**
 * The fake llama-server's answers beyond chat, shaped like a real server of
 * the September 2026 release (captures in `tests/fixtures/llama-server/`):
 * `/slots`, `/v1/embeddings` (with `--embeddings` and without), a picture
 * or a sound refused by a model served without `--mmproj`, and the router's
 * `/models/load` and `/models/unload`.
 */
import { countTokens } from "./fake_llm_context.ts";
import { type Answer, type FakeModel, SINGLE_ID } from "./fake_llm_models.ts";
import { errorBody } from "./fake_llm_scripts.ts";

/** What the wire answers read of the fake. */
export interface WireState {
  mode: "single" | "router";
  /** The models served (the router's load and unload change their status). */
  models: FakeModel[];
  /** Slots per model, unless a model says otherwise. */
  slots: number;
  /** Chat streams in flight, by model id. */
  busy: ReadonlyMap<string, number>;
}

/** `/slots`, embeddings and the router's load and unload; null for every other endpoint. */
export function wireAnswer(
  state: WireState,
  method: string,
  url: URL,
  body: unknown,
): Answer | null {
  const path = url.pathname;
  const name = url.searchParams.get("model") ??
    (isRecord(body) ? body.model : undefined);
  const named = state.mode === "single"
    ? state.models[0] ?? { id: SINGLE_ID }
    : state.models.find((model) => model.id === name);
  if (method === "GET" && path === "/slots") {
    if (!named) {
      return {
        status: 400,
        body: JSON.parse(
          errorBody(400, "model name is missing from the request"),
        ),
      };
    }
    const slots = named.slots ?? state.slots;
    return slotsAnswer(named, slots, state.busy.get(named.id) ?? 0);
  }
  if (method !== "POST") return null;
  if (/^(\/v1)?\/embeddings$/.test(path) && state.mode === "single") {
    return embeddingsAnswer(named!, body);
  }
  if (state.mode === "router" && /^\/models\/(un)?load$/.test(path)) {
    return loadAnswer(
      state.models,
      body,
      path.endsWith("unload") ? "unload" : "load",
    );
  }
  return null;
}

/** The width of the fake's embeddings: the tiny models' `n_embd`. */
export const EMBEDDING_SIZE = 64;

/** `/props` `modalities` of a model: what it reads besides text. */
export function modalities(model: FakeModel): Record<string, boolean> {
  return { vision: model.vision === true, video: false, audio: false };
}

/** `GET /slots`: one entry per slot, the first `busy` of them processing. */
export function slotsAnswer(
  model: FakeModel,
  slots: number,
  busy: number,
): Answer {
  return {
    status: 200,
    body: Array.from({ length: slots }, (_, id) => ({
      id,
      n_ctx: model.nCtx ?? 4096,
      speculative: false,
      is_processing: id < busy,
    })),
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A unit vector made from the text: the same text, the same vector. */
function embed(text: string): number[] {
  let state = 2166136261;
  for (const char of text) {
    state = Math.imul(state ^ char.codePointAt(0)!, 16777619) >>> 0;
  }
  const vector: number[] = [];
  for (let i = 0; i < EMBEDDING_SIZE; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    vector.push(state / 2 ** 32 - 0.5);
  }
  const norm = Math.hypot(...vector);
  return vector.map((value) => value / norm);
}

/**
 * `POST /v1/embeddings`: 501 from a server started without `--embeddings`;
 * otherwise one L2-normalised vector per input, as `--pooling mean` gives.
 * As there, an input of no tokens fails the request with a 400, and one of
 * more tokens than the physical batch (`ubatch`, 512 by default) with a
 * 500: a mean-pooled input cannot be split across batches.
 */
export function embeddingsAnswer(model: FakeModel, body: unknown): Answer {
  if (!model.embeddings) {
    return {
      status: 501,
      body: {
        error: {
          code: 501,
          message:
            "This server does not support embeddings. Start it with `--embeddings`",
          type: "not_supported_error",
        },
      },
    };
  }
  const input = isRecord(body) ? body.input : undefined;
  const texts = typeof input === "string"
    ? [input]
    : Array.isArray(input) && input.every((item) => typeof item === "string")
    ? input as string[]
    : null;
  if (texts === null || texts.length === 0) {
    return {
      status: 400,
      body: JSON.parse(
        errorBody(400, '"input" must be a string or an array of strings'),
      ),
    };
  }
  const counts = texts.map(countTokens);
  if (counts.includes(0)) {
    return {
      status: 400,
      body: JSON.parse(errorBody(400, "Input content cannot be empty")),
    };
  }
  const ubatch = model.ubatch ?? 512;
  const long = counts.find((count) => count > ubatch);
  if (long !== undefined) {
    return {
      status: 500,
      body: JSON.parse(errorBody(
        500,
        `input (${long} tokens) is too large to process. increase the physical batch size (current batch size: ${ubatch})`,
      )),
    };
  }
  const tokens = counts.reduce((sum, count) => sum + count, 0);
  const named = isRecord(body) && typeof body.model === "string";
  return {
    status: 200,
    body: {
      model: named ? body.model : model.id,
      object: "list",
      usage: { prompt_tokens: tokens, total_tokens: tokens },
      data: texts.map((text, index) => ({
        embedding: embed(text),
        index,
        object: "embedding",
      })),
    },
  };
}

const MEDIA: Record<string, string> = {
  image_url: "image",
  input_audio: "audio",
  video_url: "video",
};

/**
 * The 500 a chat request with a picture (or sound, or video) gets from a
 * model served without `--mmproj`, before any chunk; null when it has none
 * or the model reads it.
 */
export function mediaRefusal(model: FakeModel, body: unknown): Answer | null {
  const messages = isRecord(body) && Array.isArray(body.messages)
    ? body.messages
    : [];
  for (const message of messages) {
    const content = isRecord(message) ? message.content : undefined;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      const kind = isRecord(part) ? MEDIA[String(part.type)] : undefined;
      if (kind === undefined || (kind === "image" && model.vision)) continue;
      return {
        status: 500,
        body: JSON.parse(errorBody(
          500,
          `${kind} input is not supported - hint: if this is unexpected, you may need to provide the mmproj`,
        )),
      };
    }
  }
  return null;
}

/** The router's `POST /models/load` and `/models/unload`: the status changes at once. */
export function loadAnswer(
  models: FakeModel[],
  body: unknown,
  action: "load" | "unload",
): Answer {
  const name = isRecord(body) ? body.model : undefined;
  const model = models.find((m) => m.id === name);
  if (!model) {
    return {
      status: 404,
      body: {
        error: {
          message: "File Not Found",
          type: "not_found_error",
          code: 404,
        },
      },
    };
  }
  const running = (model.status ?? "loaded") !== "unloaded";
  if (running === (action === "load")) {
    return {
      status: 400,
      body: JSON.parse(
        errorBody(
          400,
          action === "load"
            ? "model is already running"
            : "model is not running",
        ),
      ),
    };
  }
  model.status = action === "load" ? "loaded" : "unloaded";
  return { status: 200, body: { success: true } };
}

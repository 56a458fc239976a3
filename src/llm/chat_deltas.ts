/**
 * llama-server's chat-completion chunks read as typed deltas: reasoning,
 * content, tool call pieces, the finish reason, and from the final chunk how
 * full the context is (`usage`) and what the request cost (`timings`).
 */
import { type EventSourceMessage, ParseError } from "eventsource-parser/stream";
import { AssistantError } from "../base/errors.ts";
import type { Timings } from "../protocol/events.ts";
import { isRecord } from "../base/is_record.ts";

/**
 * One typed piece of a streamed reply. `usage` and `timings` come from the
 * final chunk (the finish chunk without `include_usage`, the `choices: []`
 * chunk with it); `timings` comes at most once, last, just before the stream
 * ends, and only when the server reported all five numbers, none negative
 * or infinite.
 */
export type Delta =
  | { kind: "think"; text: string }
  | { kind: "content"; text: string }
  | {
    kind: "tool_call";
    index: number;
    id?: string;
    name?: string;
    arguments: string;
  }
  | {
    kind: "usage";
    /** Tokens now in the context: the prompt and the reply. */
    used: number;
    /** Tokens of the prompt alone, when reported. */
    prompt?: number;
  }
  | ({ kind: "timings" } & Timings)
  | { kind: "finish"; reason: string };

/** Options of `ChatDeltaStream`. */
export interface ChatDeltaStreamOptions {
  /** The request's signal: once it is aborted, upstream failures pass through unchanged. */
  signal?: AbortSignal;
}

function malformed(cause?: unknown): AssistantError {
  return new AssistantError(
    "malformed stream",
    cause === undefined
      ? { code: "malformed_stream" }
      : { cause, code: "malformed_stream" },
  );
}

function isAbort(error: unknown): boolean {
  return error instanceof DOMException &&
    (error.name === "AbortError" || error.name === "TimeoutError");
}

/** Tokens now in the context (`usage.total_tokens`, else the timings' sum) and of the prompt alone. */
function usageDelta(chunk: Record<string, unknown>): Delta | null {
  const usage = chunk.usage;
  if (isRecord(usage) && typeof usage.total_tokens === "number") {
    const prompt = usage.prompt_tokens;
    return typeof prompt === "number"
      ? { kind: "usage", used: usage.total_tokens, prompt }
      : { kind: "usage", used: usage.total_tokens };
  }
  const timings = trustedTimings(chunk);
  if (timings === null) return null;
  const { cache_n: cached, prompt_n: prompt, predicted_n: predicted } = timings;
  if (
    typeof cached !== "number" || typeof prompt !== "number" ||
    typeof predicted !== "number"
  ) {
    return null;
  }
  return {
    kind: "usage",
    used: cached + prompt + predicted,
    prompt: cached + prompt,
  };
}

const TIMING_FIGURES = [
  "prompt_n",
  "cache_n",
  "predicted_n",
  "prompt_ms",
  "predicted_ms",
] as const;

/**
 * A chunk's `timings`; null when it has none, or when any of the five
 * figures is a negative or infinite number: a server that gets one wrong is
 * trusted for none of them, as if it had reported nothing.
 */
function trustedTimings(
  chunk: Record<string, unknown>,
): Record<string, unknown> | null {
  const timings = chunk.timings;
  if (!isRecord(timings)) return null;
  const wrong = TIMING_FIGURES.some((field) => {
    const figure = timings[field];
    return typeof figure === "number" &&
      !(Number.isFinite(figure) && figure >= 0);
  });
  return wrong ? null : timings;
}

/** The five figures of a chunk's `timings`; null when any is missing or not a number (see {@link trustedTimings}). */
function readTimings(chunk: Record<string, unknown>): Timings | null {
  const timings = trustedTimings(chunk);
  if (timings === null) return null;
  const { prompt_n, cache_n, predicted_n, prompt_ms, predicted_ms } = timings;
  const numbers = [prompt_n, cache_n, predicted_n, prompt_ms, predicted_ms];
  if (!numbers.every((n) => typeof n === "number")) return null;
  return {
    prompt_n: prompt_n as number,
    cache_n: cache_n as number,
    predicted_n: predicted_n as number,
    prompt_ms: prompt_ms as number,
    predicted_ms: predicted_ms as number,
  };
}

function toolCallDeltas(calls: unknown[]): Delta[] {
  const deltas: Delta[] = [];
  for (const call of calls) {
    if (!isRecord(call) || !Number.isSafeInteger(call.index)) {
      throw malformed(new TypeError("Tool call piece without an index"));
    }
    const fn = isRecord(call.function) ? call.function : {};
    const delta: Delta = {
      kind: "tool_call",
      index: call.index as number,
      arguments: typeof fn.arguments === "string" ? fn.arguments : "",
    };
    if (typeof call.id === "string" && call.id !== "") delta.id = call.id;
    if (typeof fn.name === "string" && fn.name !== "") delta.name = fn.name;
    deltas.push(delta);
  }
  return deltas;
}

/** What one chunk holds: its deltas, and its timings when it is a final chunk. */
interface ReadChunk {
  deltas: Delta[];
  timings: Timings | null;
}

/** Reads one parsed chunk; throws AssistantError on an error chunk or a bad shape. */
function readChunk(chunk: unknown): ReadChunk {
  if (!isRecord(chunk)) {
    throw malformed(new TypeError("Chunk is not an object"));
  }
  if (chunk.error !== undefined) {
    const error = isRecord(chunk.error) ? chunk.error : {};
    const message = typeof error.message === "string"
      ? error.message
      : String(chunk.error);
    throw new AssistantError(`llama-server error: ${message}`, {
      quoted: message,
      code: "llama_error",
      cause: new Error(
        `Error chunk type=${String(error.type)} code=${String(error.code)}`,
      ),
    });
  }
  if (!Array.isArray(chunk.choices)) {
    throw malformed(new TypeError("Chunk without a choices array"));
  }
  const deltas: Delta[] = [];
  let finish: string | null = null;
  for (const choice of chunk.choices) {
    if (!isRecord(choice)) {
      throw malformed(new TypeError("Choice is not an object"));
    }
    // Only the first choice is the reply; the daemon never asks for n > 1.
    if (choice.index !== undefined && choice.index !== 0) continue;
    const delta = choice.delta ?? {};
    if (!isRecord(delta)) {
      throw malformed(new TypeError("Delta is not an object"));
    }
    const { reasoning_content: think, content, tool_calls: calls } = delta;
    if (typeof think === "string" && think !== "") {
      deltas.push({ kind: "think", text: think });
    }
    if (typeof content === "string" && content !== "") {
      deltas.push({ kind: "content", text: content });
    }
    if (Array.isArray(calls)) deltas.push(...toolCallDeltas(calls));
    if (typeof choice.finish_reason === "string") finish = choice.finish_reason;
  }
  if (finish !== null) deltas.push({ kind: "finish", reason: finish });
  // Usage rides on the `choices: []` chunk; without include_usage, timings ride
  // on the finish chunk. Per-token timings elsewhere are progress, not totals.
  if (chunk.choices.length === 0 || finish !== null) {
    const usage = usageDelta(chunk);
    if (usage !== null) deltas.push(usage);
    return { deltas, timings: readTimings(chunk) };
  }
  return { deltas, timings: null };
}

/** SSE messages -> typed deltas; errors the stream with AssistantError on an error chunk or malformed chunk; stops at [DONE]. */
export class ChatDeltaStream
  extends TransformStream<EventSourceMessage, Delta> {
  /** Creates the stage; `options.signal` marks upstream aborts as the caller's own. */
  constructor(options: ChatDeltaStreamOptions = {}) {
    let controller!: TransformStreamDefaultController<Delta>;
    // Held to the end, so a server that repeats them on two final chunks counts once.
    let timings: Timings | null = null;
    super({
      start(c) {
        controller = c;
      },
      transform(message, c) {
        if (message.data === "[DONE]") {
          if (timings !== null) c.enqueue({ kind: "timings", ...timings });
          c.terminate();
          return;
        }
        let chunk: unknown;
        try {
          chunk = JSON.parse(message.data);
        } catch (error) {
          throw malformed(error);
        }
        const read = readChunk(chunk);
        for (const delta of read.deltas) c.enqueue(delta);
        timings = read.timings ?? timings;
      },
      flush() {
        throw new AssistantError("llama-server closed the stream early", {
          code: "stream_closed_early",
        });
      },
      cancel(reason) {
        // Upstream failed (the body broke off) or the reader cancelled; name a
        // broken connection, leave the caller's own abort and our errors as they are.
        if (
          reason instanceof AssistantError || isAbort(reason) ||
          options.signal?.aborted
        ) {
          controller.error(reason);
          return;
        }
        if (reason instanceof ParseError) {
          controller.error(malformed(reason));
          return;
        }
        controller.error(
          new AssistantError("llama-server closed the stream early", {
            cause: reason,
            code: "stream_closed_early",
          }),
        );
      },
    });
  }
}

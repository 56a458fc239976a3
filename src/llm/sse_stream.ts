/**
 * Stream stages from llama-server's SSE body to typed deltas: bytes are
 * decoded, split into SSE messages, read as chat-completion chunks, and a
 * leading `<think>` block inside content is routed to reasoning.
 */
import {
  type EventSourceMessage,
  EventSourceParserStream,
  ParseError,
} from "eventsource-parser/stream";
import { AssistantError } from "../base/errors.ts";
import { StallGuardStream } from "../streams/stall_guard.ts";

/**
 * Characters of an unfinished SSE line the parser may hold: a server that
 * streams without a line break would otherwise grow the daemon's memory
 * while its bytes keep the stall guard quiet. Real chunks are kilobytes.
 */
export const MAX_PENDING_CHARS = 16 * 1024 * 1024;

/** One typed piece of a streamed reply. */
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
  | { kind: "finish"; reason: string };

/** Options of `ChatDeltaStream`. */
export interface ChatDeltaStreamOptions {
  /** The request's signal: once it is aborted, upstream failures pass through unchanged. */
  signal?: AbortSignal;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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
  const timings = chunk.timings;
  if (!isRecord(timings)) return null;
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

/** Reads one parsed chunk into deltas; throws AssistantError on an error chunk or a bad shape. */
function chunkDeltas(chunk: unknown): Delta[] {
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
  }
  return deltas;
}

/** SSE messages -> typed deltas; errors the stream with AssistantError on an error chunk or malformed chunk; stops at [DONE]. */
export class ChatDeltaStream
  extends TransformStream<EventSourceMessage, Delta> {
  /** Creates the stage; `options.signal` marks upstream aborts as the caller's own. */
  constructor(options: ChatDeltaStreamOptions = {}) {
    let controller!: TransformStreamDefaultController<Delta>;
    super({
      start(c) {
        controller = c;
      },
      transform(message, c) {
        if (message.data === "[DONE]") {
          c.terminate();
          return;
        }
        let chunk: unknown;
        try {
          chunk = JSON.parse(message.data);
        } catch (error) {
          throw malformed(error);
        }
        for (const delta of chunkDeltas(chunk)) c.enqueue(delta);
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

const OPEN = "<think>";
const CLOSE = "</think>";

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTag(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/**
 * Routes a reply's leading `<think>…</think>` to think deltas, for a server
 * that does not split reasoning (llama-server with `reasoning_format: none`
 * sends the tags inside content). Only a response whose content begins with
 * `<think>` (after whitespace) and that carried no `reasoning_content`
 * before it is routed, and only that one block: a server that splits
 * reasoning sends no tags, so a `<think>` anywhere else is the answer's own
 * text (a question about the tags) and passes through as content.
 */
export class ThinkTagStream extends TransformStream<Delta, Delta> {
  /** Creates the stage; content passes through, less the whitespace right after a routed tag. */
  constructor() {
    // "start": no content yet, so the reply may still open with the tag;
    // "thinking": inside the leading block; "plain": everything is content.
    let mode: "start" | "thinking" | "plain" = "start";
    // Text that may still be (the start of) a tag, held until the next piece decides.
    let held = "";
    // Templates put newlines after both tags; they are layout, not text.
    let afterTag = false;
    const emit = (
      c: TransformStreamDefaultController<Delta>,
      text: string,
    ) => {
      if (afterTag) {
        text = text.trimStart();
        if (text !== "") afterTag = false;
      }
      if (text !== "") {
        c.enqueue({ kind: mode === "thinking" ? "think" : "content", text });
      }
    };
    const release = (c: TransformStreamDefaultController<Delta>) => {
      const text = held;
      held = "";
      if (mode === "start") mode = "plain";
      emit(c, text);
    };
    const think = (
      c: TransformStreamDefaultController<Delta>,
      text: string,
    ) => {
      const at = text.indexOf(CLOSE);
      if (at === -1) {
        const keep = partialTag(text, CLOSE);
        emit(c, text.slice(0, text.length - keep));
        held = text.slice(text.length - keep);
        return;
      }
      emit(c, text.slice(0, at));
      mode = "plain";
      afterTag = true;
      emit(c, text.slice(at + CLOSE.length));
    };
    super({
      transform(delta, c) {
        if (delta.kind !== "content") {
          // Reasoning of its own, a tool call or the end: no leading tag now.
          release(c);
          c.enqueue(delta);
          return;
        }
        if (mode === "plain") {
          emit(c, delta.text);
          return;
        }
        const text = held + delta.text;
        held = "";
        if (mode === "thinking") {
          think(c, text);
          return;
        }
        const lead = text.trimStart();
        if (lead.startsWith(OPEN)) {
          mode = "thinking";
          afterTag = true;
          think(c, lead.slice(OPEN.length));
        } else if (OPEN.startsWith(lead)) {
          held = text;
        } else {
          mode = "plain";
          emit(c, text);
        }
      },
      flush(c) {
        release(c);
      },
    });
  }
}

/** Options of `deltaStream`. */
export interface DeltaStreamOptions {
  /** Stall limit in milliseconds; no guard when absent. */
  stallMs?: number;
  /** Called when the stall limit runs out (abort the fetch there). */
  onStall?: () => void;
  /** The request's signal, so its abort surfaces unchanged. */
  signal?: AbortSignal;
}

/** Glue: body bytes -> StallGuardStream (stall and abort) -> TextDecoderStream -> EventSourceParserStream -> ChatDeltaStream -> ThinkTagStream. */
export function deltaStream(
  body: ReadableStream<Uint8Array>,
  options: DeltaStreamOptions = {},
): ReadableStream<Delta> {
  let bytes = body;
  if (options.stallMs !== undefined || options.signal !== undefined) {
    bytes = bytes.pipeThrough(
      new StallGuardStream<Uint8Array>({
        ms: options.stallMs,
        onStall: options.onStall,
        signal: options.signal,
        stalled: (ms) =>
          new AssistantError("llama-server stalled", {
            code: "llama_stalled",
            cause: new DOMException(`No data for ${ms} ms`, "TimeoutError"),
          }),
      }),
    );
  }
  return bytes
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(
      new EventSourceParserStream({ maxBufferSize: MAX_PENDING_CHARS }),
    )
    .pipeThrough(
      new ChatDeltaStream(
        options.signal === undefined ? {} : { signal: options.signal },
      ),
    )
    .pipeThrough(new ThinkTagStream());
}

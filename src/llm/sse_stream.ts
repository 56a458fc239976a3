/**
 * Stream stages from llama-server's SSE body to typed deltas: bytes are
 * guarded against stalls, decoded, split into SSE messages, read as
 * chat-completion chunks (`chat_deltas.ts`), and a leading `<think>` block
 * inside content is routed to reasoning (`think_tags.ts`).
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import { AssistantError } from "../base/errors.ts";
import { StallGuardStream } from "../streams/stall_guard.ts";
import { ChatDeltaStream, type Delta } from "./chat_deltas.ts";
import { ThinkTagStream } from "./think_tags.ts";

export type { Delta } from "./chat_deltas.ts";

/**
 * Characters of an unfinished SSE line the parser may hold: a server that
 * streams without a line break would otherwise grow the daemon's memory
 * while its bytes keep the stall guard quiet. Real chunks are kilobytes.
 */
export const MAX_PENDING_CHARS = 16 * 1024 * 1024;

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
            cause: new DOMException(`No data for ${ms} ms`, "TimeoutError"),
            code: "llama_stalled",
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

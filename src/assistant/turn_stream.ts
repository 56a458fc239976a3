/**
 * One response of llama-server read as a turn's events: reasoning and answer
 * tokens as they come, the tool calls gathered from their pieces, and how the
 * response ended and what it cost.
 */
import type { ToolCall } from "../llm/chat_types.ts";
import type { Timings } from "../protocol/protocol.ts";
import type { Delta } from "../llm/sse_stream.ts";

/** The events one response yields. */
export type ReplyEvent =
  | { type: "think"; delta: string }
  | { type: "token"; delta: string }
  | { type: "usage"; used: number };

/** What one response left: its content, tool calls, finish reason and sizes. */
export interface ReplyEnd {
  content: string;
  calls: ToolCall[];
  finish: string | null;
  usage: (Delta & { kind: "usage" }) | null;
  /** What the request cost, when the server said. */
  timings: Timings | null;
  /** Whether any reasoning came. */
  thought: boolean;
}

/** Streams one response as events; returns its content and tool calls. */
export async function* readReply(
  stream: ReadableStream<Delta>,
): AsyncGenerator<ReplyEvent, ReplyEnd> {
  let content = "";
  let finish: string | null = null;
  let usage: (Delta & { kind: "usage" }) | null = null;
  let timings: Timings | null = null;
  let thought = false;
  const pieces = new Map<number, ToolCall>();
  for await (const delta of stream) {
    switch (delta.kind) {
      case "think":
        thought = true;
        yield { type: "think", delta: delta.text };
        break;
      case "content":
        content += delta.text;
        yield { type: "token", delta: delta.text };
        break;
      case "tool_call": {
        const call = pieces.get(delta.index) ??
          {
            id: "",
            type: "function" as const,
            function: { name: "", arguments: "" },
          };
        // The first piece names the call; later pieces only add arguments,
        // whatever else a server repeats in them.
        if (call.id === "" && delta.id) call.id = delta.id;
        if (call.function.name === "" && delta.name) {
          call.function.name = delta.name;
        }
        call.function.arguments += delta.arguments;
        pieces.set(delta.index, call);
        break;
      }
      case "usage":
        usage = delta;
        yield { type: "usage", used: delta.used };
        break;
      case "timings": {
        const { kind: _kind, ...numbers } = delta;
        timings = numbers;
        break;
      }
      case "finish":
        finish = delta.reason;
        break;
    }
  }
  const calls = [...pieces.entries()].sort(([a], [b]) => a - b).map((
    [index, call],
  ) => ({
    ...call,
    id: call.id === "" ? `call_${index}` : call.id,
  }));
  return { content, calls, finish, usage, timings, thought };
}

/** One turn alone: an injected model source streams typed deltas, the tool runner is recorded. */
import assert from "node:assert/strict";
import type { ChatMessage, ToolCall } from "../../src/llm/chat_types.ts";
import type { Delta } from "../../src/llm/sse_stream.ts";
import {
  type ModelSource,
  Turn,
  type TurnEvent,
} from "../../src/assistant/turn.ts";
import { Conversations } from "../../src/assistant/conversations.ts";
import { CacheBook } from "../../src/assistant/cache_book.ts";
import { TokenLedger } from "../../src/assistant/token_ledger.ts";
import { Store } from "../../src/store/store.ts";
import { TURN_CONFIG } from "../support/turn_config.ts";

/** A model source that answers each request with the next list of deltas and records the bodies. */
function scripted(
  ...responses: Delta[][]
): ModelSource & { bodies: unknown[] } {
  const bodies: unknown[] = [];
  return {
    bodies,
    chooseModel: () =>
      Promise.resolve({ id: "/srv/models/m.gguf", router: false, nCtx: 4096 }),
    chat: (_model, body) => {
      bodies.push(body);
      const next = responses.shift();
      if (!next) return Promise.reject(new Error("no more responses"));
      return Promise.resolve(ReadableStream.from(next));
    },
  };
}

Deno.test("tool-call pieces: id and name from the first piece, arguments joined", async () => {
  // A server that repeats the name and sends another id on later pieces.
  const llm = scripted(
    [
      {
        kind: "tool_call",
        index: 0,
        id: "call-a",
        name: "weather",
        arguments: '{"pla',
      },
      {
        kind: "tool_call",
        index: 0,
        id: "other",
        name: "weather",
        arguments: 'ce":',
      },
      { kind: "tool_call", index: 0, name: "weather", arguments: '"Paris"}' },
      { kind: "finish", reason: "tool_calls" },
    ],
    [{ kind: "content", text: "Sunny." }, { kind: "finish", reason: "stop" }],
  );
  const calls: ToolCall[] = [];
  using store = new Store(":memory:");
  const config = { ...TURN_CONFIG, thinking: false };
  const conversations = new Conversations({
    store,
    ledger: new TokenLedger(),
    book: new CacheBook(),
    config,
  });
  const turn = new Turn({
    text: "Weather?",
    files: [],
    replaces: false,
    ref: undefined,
    llm,
    config,
    tools: {
      schemas: () => [{ type: "function", function: { name: "weather" } }],
      approval: () => null,
      run: (call) => {
        calls.push(call);
        return Promise.resolve({
          content: "sunny",
          bytes: 5,
          lines: 1,
          durationMs: 1,
          status: "exit 0",
        });
      },
    },
    warm: false,
    conversation: conversations.create(),
    now: new Date(0),
  });
  const events: TurnEvent[] = [];
  const run = turn.run(new AbortController().signal);
  let step = await run.next();
  // As the loop that runs a turn does: each event goes out, and the pending
  // reply follows what went out.
  for (; !step.done; step = await run.next()) {
    turn.seen(step.value);
    events.push(step.value);
  }
  const result = step.value;
  const expected: ToolCall = {
    id: "call-a",
    type: "function",
    function: { name: "weather", arguments: '{"place":"Paris"}' },
  };
  assert.deepEqual(calls, [expected]);
  assert.deepEqual(
    events.filter((e) => e.type === "tool"),
    [
      { type: "tool", name: "weather", done: false },
      { type: "tool", name: "weather", done: true },
    ],
  );
  assert.deepEqual(turn.pending.tools, ["weather"]);
  // The follow-up request carries the call as the model made it, and the
  // tool message answers that id.
  const followUp = (llm.bodies[1] as { messages: ChatMessage[] }).messages;
  assert.deepEqual(followUp.slice(-2), [
    { role: "assistant", content: null, tool_calls: [expected] },
    { role: "tool", tool_call_id: "call-a", content: "sunny" },
  ]);
  assert.deepEqual(result.tools, ["weather"]);
});

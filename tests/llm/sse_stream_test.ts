import assert from "node:assert/strict";
import type { EventSourceMessage } from "eventsource-parser/stream";
import { AssistantError } from "../../src/base/errors.ts";
import {
  ChatDeltaStream,
  type Delta,
  deltaStream,
  MAX_PENDING_CHARS,
  ThinkTagStream,
} from "../../src/llm/sse_stream.ts";
import { log } from "../../src/base/log.ts";
import { fixturesDir } from "../support/fake_llm.ts";

const FIXTURES = fixturesDir();
const noFixtures = FIXTURES === null;
if (noFixtures) {
  log.warn("llama-server captures not found: fixture tests are skipped");
}

function content(text: string): Delta {
  return { kind: "content", text };
}

/** Adjacent deltas of the same text kind joined, so splits do not matter. */
function merged(deltas: Delta[]): Delta[] {
  const out: Delta[] = [];
  for (const delta of deltas) {
    const last = out.at(-1);
    if (
      last && (delta.kind === "think" || delta.kind === "content") &&
      last.kind === delta.kind
    ) {
      last.text += delta.text;
    } else {
      out.push({ ...delta });
    }
  }
  return out;
}

function throughThink(pieces: Delta[]): Promise<Delta[]> {
  return Array.fromAsync(
    ReadableStream.from(pieces).pipeThrough(new ThinkTagStream()),
  );
}

function messages(...data: string[]): ReadableStream<EventSourceMessage> {
  return ReadableStream.from(
    data.map((d) => ({ data: d, event: undefined, id: undefined })),
  );
}

function chunk(delta: Record<string, unknown>, finish: string | null = null) {
  return JSON.stringify({
    choices: [{ finish_reason: finish, index: 0, delta }],
    object: "chat.completion.chunk",
  });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("Expected a rejection");
}

Deno.test("a leading think block split at every position routes to think deltas", async () => {
  const text = "<think>\nweighing é options</think>\n\nThe answer.";
  const expected = [
    { kind: "think", text: "weighing é options" },
    content("The answer."),
  ];
  for (let i = 0; i <= text.length; i++) {
    for (let j = i; j <= text.length; j++) {
      const pieces = [text.slice(0, i), text.slice(i, j), text.slice(j)]
        .map(content);
      const out = await throughThink(pieces);
      assert.ok(out.every((d) => d.kind !== "content" || d.text !== ""));
      assert.deepEqual(merged(out), expected, `split at ${i},${j}`);
    }
  }
});

Deno.test("think tags: a literal tag inside an answer is the answer's text", async () => {
  // Asked about think tags, a model writes them; only a reply that opens
  // with the tag is reasoning.
  const text = "The <think> tag marks reasoning; </think> closes it.";
  for (let i = 0; i <= text.length; i++) {
    const out = await throughThink(
      [text.slice(0, i), text.slice(i)].map(content),
    );
    assert.deepEqual(merged(out), [content(text)], `split at ${i}`);
  }
  // After the leading block, a second one is text too.
  assert.deepEqual(
    merged(
      await throughThink([content("<think>hm</think>Use <think>x</think>.")]),
    ),
    [{ kind: "think", text: "hm" }, content("Use <think>x</think>.")],
  );
});

Deno.test("think tags: a server that splits reasoning never has its content routed", async () => {
  const out = await throughThink([
    { kind: "think", text: "hm" },
    content("<think>also"),
    content("</think>done"),
  ]);
  assert.deepEqual(merged(out), [
    { kind: "think", text: "hm" },
    content("<think>also</think>done"),
  ]);
});

Deno.test("think tags: a tag prefix is held only until it cannot be a tag", async () => {
  assert.deepEqual(
    merged(
      await throughThink([
        content("  <thi"),
        { kind: "finish", reason: "stop" },
        content("x </think"),
      ]),
    ),
    [
      content("  <thi"),
      { kind: "finish", reason: "stop" },
      content("x </think"),
    ],
  );
  assert.deepEqual(
    merged(await throughThink([content("<thin"), content("g")])),
    [
      content("<thing"),
    ],
  );
});

Deno.test("think tags: tool calls inside an open block pass through in order", async () => {
  const call: Delta = { kind: "tool_call", index: 0, arguments: "{}" };
  const out = await throughThink([
    content("<think>also"),
    call,
    content("</think>done"),
  ]);
  assert.deepEqual(out, [
    { kind: "think", text: "also" },
    call,
    content("done"),
  ]);
});

Deno.test("chat deltas: each kind from chunks, stopping at [DONE]", async () => {
  const out = await Array.fromAsync(
    messages(
      chunk({ role: "assistant", content: null }),
      chunk({ reasoning_content: "Let me see" }),
      chunk({ content: "Hi" }),
      chunk({
        tool_calls: [{
          index: 0,
          id: "abc",
          type: "function",
          function: { name: "date", arguments: "{" },
        }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "}" } }] }),
      chunk({}, "tool_calls"),
      JSON.stringify({ choices: [], usage: { total_tokens: 42 } }),
      "[DONE]",
      chunk({ content: "after the end" }),
    ).pipeThrough(new ChatDeltaStream()),
  );
  assert.deepEqual(out, [
    { kind: "think", text: "Let me see" },
    content("Hi"),
    { kind: "tool_call", index: 0, id: "abc", name: "date", arguments: "{" },
    { kind: "tool_call", index: 0, arguments: "}" },
    { kind: "finish", reason: "tool_calls" },
    { kind: "usage", used: 42 },
  ]);
});

Deno.test("chat deltas: timings give usage on the finish chunk only", async () => {
  const timings = { cache_n: 10, prompt_n: 5, predicted_n: 2 };
  const out = await Array.fromAsync(
    messages(
      JSON.stringify({
        choices: [{ index: 0, delta: { content: "a" } }],
        timings: { ...timings, predicted_n: 1 },
      }),
      JSON.stringify({
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
        timings,
      }),
      "[DONE]",
    ).pipeThrough(new ChatDeltaStream()),
  );
  assert.deepEqual(out, [
    content("a"),
    { kind: "finish", reason: "stop" },
    { kind: "usage", used: 17, prompt: 15 },
  ]);
});

async function streamFailure(...data: string[]): Promise<unknown> {
  const stream = messages(...data).pipeThrough(new ChatDeltaStream());
  return await rejection(Array.fromAsync(stream));
}

Deno.test("chat deltas: an error chunk fails with its message", async () => {
  const error = await streamFailure(
    chunk({ content: "x" }),
    JSON.stringify({
      error: { code: 500, message: "Context size has been exceeded." },
    }),
  );
  assert.ok(error instanceof AssistantError);
  assert.equal(
    error.message,
    "llama-server error: Context size has been exceeded.",
  );
  assert.ok(error.cause instanceof Error);
});

Deno.test("chat deltas: unparsable or shapeless chunks are a malformed stream", async () => {
  const cases = [
    '{"choices":[{"delta":',
    "[1,2]",
    '{"object":"chat.completion.chunk"}',
    '{"choices":[{"index":0,"delta":"text"}]}',
    '{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{}}]}}]}',
  ];
  for (const data of cases) {
    const error = await streamFailure(data, "[DONE]");
    assert.ok(error instanceof AssistantError, data);
    assert.equal(error.message, "malformed stream", data);
  }
  const error = await streamFailure("not json");
  assert.ok(error instanceof AssistantError);
  assert.ok(error.cause instanceof SyntaxError);
});

Deno.test("chat deltas: an end without [DONE] is an early close", async () => {
  const error = await streamFailure(chunk({ content: "x" }));
  assert.ok(error instanceof AssistantError);
  assert.equal(error.message, "llama-server closed the stream early");
});

Deno.test("chat deltas: a broken body is an early close, an abort stays an abort", async () => {
  const broken = new TypeError("error reading a body from connection");
  const failing = (reason: unknown) =>
    new ReadableStream<EventSourceMessage>({
      start(controller) {
        controller.enqueue({
          data: chunk({ content: "x" }),
          event: undefined,
          id: undefined,
        });
        controller.error(reason);
      },
    });
  const error = await rejection(
    Array.fromAsync(failing(broken).pipeThrough(new ChatDeltaStream())),
  );
  assert.ok(error instanceof AssistantError);
  assert.equal(error.message, "llama-server closed the stream early");
  assert.equal(error.cause, broken);

  const abort = new DOMException("The signal has been aborted", "AbortError");
  assert.equal(
    await rejection(
      Array.fromAsync(failing(abort).pipeThrough(new ChatDeltaStream())),
    ),
    abort,
  );

  const controller = new AbortController();
  const reason = new Error("stopped by the caller");
  controller.abort(reason);
  assert.equal(
    await rejection(
      Array.fromAsync(
        failing(reason).pipeThrough(
          new ChatDeltaStream({ signal: controller.signal }),
        ),
      ),
    ),
    reason,
  );
});

Deno.test("an endless line without a break is a malformed stream, not unbounded memory", async () => {
  const piece = new TextEncoder().encode("a".repeat(1024 * 1024));
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode("data: "));
    },
    pull(controller) {
      // Bounded: past the limit the parser must have failed already.
      if (sent * piece.length > 2 * MAX_PENDING_CHARS) controller.close();
      else controller.enqueue(piece);
      sent++;
    },
  });
  const error = await rejection(Array.fromAsync(deltaStream(body)));
  assert.ok(error instanceof AssistantError, String(error));
  assert.equal(error.message, "malformed stream");
  assert.ok(sent * piece.length <= MAX_PENDING_CHARS + 4 * piece.length);
});

Deno.test({
  name: "delta stream reads a capture the same however its bytes are split",
  ignore: noFixtures,
  async fn() {
    const bytes = await Deno.readFile(
      `${FIXTURES}/single/stream_reasoning_enable_thinking_budget4.sse`,
    );
    const whole = await Array.fromAsync(
      deltaStream(ReadableStream.from([bytes])),
    );
    for (const size of [1, 2, 3, 7, 64]) {
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += size) {
        pieces.push(bytes.slice(at, at + size));
      }
      const split = await Array.fromAsync(
        deltaStream(ReadableStream.from(pieces), { stallMs: 60_000 }),
      );
      assert.deepEqual(split, whole, `pieces of ${size} bytes`);
    }
    assert.deepEqual(merged(whole), [
      { kind: "think", text: "Olympics Pearl660" },
      content(
        "Brigham app Cursedicator ethicIll horrible devised discreetmess",
      ),
      { kind: "finish", reason: "length" },
      { kind: "usage", used: 27, prompt: 13 },
    ]);
  },
});

Deno.test({
  name: "delta stream keeps multi-byte characters split across reads",
  ignore: noFixtures,
  async fn() {
    const bytes = await Deno.readFile(
      `${FIXTURES}/single/stream_error_midstream_context_exceeded_concurrent_A.sse`,
    );
    // Small pieces over the head (where the multi-byte tokens are), then the rest.
    const head = 16_384;
    const read = async (size: number) => {
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < head; at += size) {
        pieces.push(bytes.slice(at, Math.min(at + size, head)));
      }
      pieces.push(bytes.slice(head));
      const seen: Delta[] = [];
      const error = await rejection((async () => {
        for await (const delta of deltaStream(ReadableStream.from(pieces))) {
          seen.push(delta);
        }
      })());
      assert.ok(error instanceof AssistantError);
      assert.equal(
        error.message,
        "llama-server error: Context size has been exceeded.",
      );
      return merged(seen);
    };
    const whole = await read(bytes.length);
    assert.equal(whole.length, 1);
    assert.ok(whole[0]?.kind === "content");
    assert.ok(whole[0].text.includes("018ル wins"));
    assert.deepEqual(await read(5), whole);
  },
});

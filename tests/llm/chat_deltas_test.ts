import assert from "node:assert/strict";
import type { EventSourceMessage } from "eventsource-parser/stream";
import { AssistantError } from "../../src/base/errors.ts";
import { ChatDeltaStream, type Delta } from "../../src/llm/chat_deltas.ts";

function content(text: string): Delta {
  return { kind: "content", text };
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

const TIMINGS = {
  cache_n: 290,
  prompt_n: 49,
  prompt_ms: 3.503,
  prompt_per_token_ms: 0.0714,
  prompt_per_second: 13988.01,
  predicted_n: 24,
  predicted_ms: 19.052,
  predicted_per_token_ms: 0.828,
  predicted_per_second: 1207.22,
};
const COST = {
  kind: "timings",
  prompt_n: 49,
  cache_n: 290,
  predicted_n: 24,
  prompt_ms: 3.503,
  predicted_ms: 19.052,
};

function final(extra: Record<string, unknown>): string {
  return JSON.stringify({ choices: [], ...extra });
}

Deno.test("chat deltas: with include_usage, the timings of the usage chunk come last, once", async () => {
  const out = await Array.fromAsync(
    messages(
      chunk({ reasoning_content: "hm" }),
      chunk({}, "length"),
      final({
        usage: { completion_tokens: 24, prompt_tokens: 339, total_tokens: 363 },
        timings: TIMINGS,
      }),
      "[DONE]",
    ).pipeThrough(new ChatDeltaStream()),
  );
  assert.deepEqual(out, [
    { kind: "think", text: "hm" },
    { kind: "finish", reason: "length" },
    { kind: "usage", used: 363, prompt: 339 },
    COST,
  ]);
});

Deno.test("chat deltas: without include_usage, the finish chunk's timings give usage and the cost", async () => {
  const out = await Array.fromAsync(
    messages(
      chunk({ content: "a" }),
      JSON.stringify({
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
        timings: TIMINGS,
      }),
      "[DONE]",
    ).pipeThrough(new ChatDeltaStream()),
  );
  assert.deepEqual(out, [
    content("a"),
    { kind: "finish", reason: "stop" },
    { kind: "usage", used: 363, prompt: 339 },
    COST,
  ]);
});

Deno.test("chat deltas: per-token timings are progress; timings on two final chunks count once, the last", async () => {
  const early = { ...TIMINGS, predicted_n: 1, predicted_ms: 1 };
  const out = await Array.fromAsync(
    messages(
      JSON.stringify({
        choices: [{ index: 0, delta: { content: "a" } }],
        timings: early,
      }),
      JSON.stringify({
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
        timings: { ...TIMINGS, predicted_n: 23 },
      }),
      final({ timings: TIMINGS }),
      "[DONE]",
    ).pipeThrough(new ChatDeltaStream()),
  );
  assert.deepEqual(out.filter((d) => d.kind === "timings"), [COST]);
});

Deno.test("chat deltas: timings missing a number, or none at all, give no cost and no error", async () => {
  const usage = { total_tokens: 363, prompt_tokens: 339 };
  const cases: Record<string, unknown>[] = [
    {},
    { prompt_ms: undefined },
    { predicted_ms: "19" },
    { cache_n: null },
    { prompt_n: Number.NaN },
  ];
  for (const change of cases) {
    const timings = { ...TIMINGS, ...change };
    const out = await Array.fromAsync(
      messages(
        chunk({}, "stop"),
        final(
          Object.keys(change).length === 0 ? { usage } : { usage, timings },
        ),
        "[DONE]",
      ).pipeThrough(new ChatDeltaStream()),
    );
    assert.deepEqual(out, [
      { kind: "finish", reason: "stop" },
      { kind: "usage", used: 363, prompt: 339 },
    ], JSON.stringify(change));
  }
});

Deno.test("chat deltas: timings with a negative or infinite figure are dropped whole, as if the server sent none", async () => {
  const usage = { total_tokens: 363, prompt_tokens: 339 };
  const bad: [string, string][] = [
    ["prompt_n", "-1"],
    ["cache_n", "-290"],
    ["predicted_n", "-24"],
    ["prompt_ms", "-3.503"],
    ["predicted_ms", "-0.001"],
    // JSON has no Infinity, but a number too large for a double reads as one.
    ["prompt_ms", "1e999"],
    ["predicted_ms", "-1e999"],
  ];
  for (const [field, figure] of bad) {
    const timings = JSON.stringify(TIMINGS).replace(
      new RegExp(`"${field}":[^,}]+`),
      `"${field}":${figure}`,
    );
    assert.notEqual(timings, JSON.stringify(TIMINGS));
    // With include_usage: the usage stands, the cost is gone.
    const withUsage = await Array.fromAsync(
      messages(
        chunk({}, "stop"),
        `{"choices":[],"usage":${JSON.stringify(usage)},"timings":${timings}}`,
        "[DONE]",
      ).pipeThrough(new ChatDeltaStream()),
    );
    assert.deepEqual(withUsage, [
      { kind: "finish", reason: "stop" },
      { kind: "usage", used: 363, prompt: 339 },
    ], `${field}: ${figure}`);
    // Without it the timings were all the server said: no usage either.
    const alone = await Array.fromAsync(
      messages(
        `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"timings":${timings}}`,
        "[DONE]",
      ).pipeThrough(new ChatDeltaStream()),
    );
    assert.deepEqual(alone, [{ kind: "finish", reason: "stop" }], field);
  }
});

Deno.test("chat deltas: a stream that breaks off after its final chunk reports no cost", async () => {
  const seen: Delta[] = [];
  const error = await rejection((async () => {
    const stream = messages(chunk({}, "stop"), final({ timings: TIMINGS }))
      .pipeThrough(new ChatDeltaStream());
    for await (const delta of stream) seen.push(delta);
  })());
  assert.ok(error instanceof AssistantError);
  assert.equal(error.message, "llama-server closed the stream early");
  assert.equal(seen.some((d) => d.kind === "timings"), false);
});

import assert from "node:assert/strict";
import { log } from "../../src/base/log.ts";
import {
  FakeLlm,
  fixture,
  fixturesDir,
  hold,
  LOADING_BODY,
  reply,
  stall,
} from "./fake_llm.ts";
import { events, post, shapes } from "./fake_llm_sse.ts";

const FIXTURES = fixturesDir();
const noFixtures = FIXTURES === null;
if (noFixtures) {
  log.warn("llama-server captures not found: fixture tests are skipped");
}

Deno.test({
  name: "reply chunks have the shapes of the captured tool-call stream",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({
      toolCalls: [{
        name: "get_forecast",
        arguments: '{"metric":false,"days":3}',
      }],
    }));
    const response = await post(llm, {
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    assert.equal(response.headers.get("server"), "llama.cpp");
    assert.equal(response.headers.get("x-accel-buffering"), "no");
    const text = await response.text();
    const captured = Deno.readTextFileSync(
      `${FIXTURES}/single/stream_tools_required_single_xmlfmt.sse`,
    );
    assert.deepEqual(shapes(text), shapes(captured));
    const chunks = events(text).slice(0, -1).map((d) => JSON.parse(d));
    assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
    assert.match(chunks[0].id, /^chatcmpl-[A-Za-z0-9]{32}$/);
    assert.equal(chunks[0].model, "/srv/models/tiny.gguf");
    assert.deepEqual(chunks[0].choices[0].delta, {
      role: "assistant",
      content: null,
    });
    assert.match(
      chunks[1].choices[0].delta.tool_calls[0].id,
      /^[A-Za-z0-9]{32}$/,
    );
    assert.equal(
      chunks.flatMap((c) => c.choices)
        .map((c) => c.delta.tool_calls?.[0].function.arguments ?? "").join(""),
      '{"metric":false,"days":3}',
    );
    // The prompt is what the fake counted of the request; one token per chunk.
    const prompt = llm.chats[0]!.promptTokens!;
    assert.ok(prompt > 0);
    assert.equal(chunks.at(-1).usage.prompt_tokens, prompt);
    assert.equal(
      chunks.at(-1).usage.total_tokens,
      prompt + chunks.length - 3,
    );
  },
});

Deno.test({
  name: "without include_usage, timings ride on the finish chunk as captured",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: ["ick", " scored"], finishReason: "length" }));
    const text = await (await post(llm, { messages: [], stream: true })).text();
    const captured = Deno.readTextFileSync(
      `${FIXTURES}/single/stream_content_no_include_usage.sse`,
    );
    assert.deepEqual(shapes(text), shapes(captured));
  },
});

Deno.test({
  name: "fixture playback sends the capture byte for byte, with its status",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    const stream = `${FIXTURES}/single/stream_reasoning_default_template.sse`;
    const error = `${FIXTURES}/single/err_prompt_too_long_stream.sse`;
    llm.enqueue(fixture(stream), fixture(error));
    const first = await post(llm, {});
    assert.equal(await first.text(), Deno.readTextFileSync(stream));
    const second = await post(llm, {});
    assert.equal(second.status, 400);
    assert.equal(await second.text(), Deno.readTextFileSync(error));
  },
});

Deno.test("scripts are used in order, then the default one", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["one"] }), reply({ content: ["two"] }));
  const contents = [];
  for (let i = 0; i < 3; i++) {
    const text = await (await post(llm, { messages: [] })).text();
    contents.push(
      events(text).filter((d) => d !== "[DONE]").map((d) =>
        JSON.parse(d).choices[0]?.delta.content ?? ""
      ).join(""),
    );
  }
  assert.deepEqual(contents, ["one", "two", "Hello there."]);
  assert.equal(llm.chats.length, 3);
  assert.deepEqual((await llm.nextChat()).body, { messages: [] });
});

Deno.test("router endpoints: statuses, props, and what naming a model does", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [
      { id: "a", status: "loaded", nCtx: 1024 },
      { id: "b", status: "unloaded" },
      { id: "c", status: "unloaded", failed: true },
    ],
  });
  const get = async (path: string) => {
    const response = await fetch(llm.url + path);
    return { status: response.status, json: await response.json() };
  };
  const list = await get("/v1/models");
  assert.deepEqual(
    list.json.data.map((
      m: { id: string; status: { value: string; failed?: boolean } },
    ) => [m.id, m.status.value, m.status.failed ?? false]),
    [["a", "loaded", false], ["b", "unloaded", false], [
      "c",
      "unloaded",
      true,
    ]],
  );
  assert.equal(list.json.data[0].meta.n_ctx, 1024);
  assert.equal(list.json.data[1].meta, undefined);
  assert.equal((await get("/props")).json.role, "router");
  assert.equal(
    (await get("/props?model=a")).json.default_generation_settings.n_ctx,
    1024,
  );
  assert.deepEqual(await get("/props?model=b&autoload=false"), {
    status: 400,
    json: {
      error: {
        code: 400,
        message: "model is not loaded",
        type: "invalid_request_error",
      },
    },
  });
  assert.deepEqual(llm.autoloads, []);
  assert.equal((await get("/props?model=b")).status, 200);
  assert.deepEqual(llm.autoloads, ["b"]);
  assert.equal(llm.models[1]?.status, "loaded");
  const missing = await post(llm, { messages: [] });
  assert.equal(missing.status, 400);
  assert.equal(
    (await missing.json()).error.message,
    "model name is missing from the request",
  );
  const failed = await post(llm, { model: "c" });
  assert.equal(failed.status, 500);
  await failed.body?.cancel();
  assert.deepEqual(llm.autoloads, ["b", "c"]);
});

Deno.test("paced tokens arrive in order, never ahead of their pace", async () => {
  await using llm = await FakeLlm.start();
  const tokens = Array.from({ length: 200 }, (_, i) => ` t${i}`);
  llm.enqueue(reply({ content: tokens, tokenDelayMs: 2 }));
  const started = performance.now();
  const text = await (await post(llm, {})).text();
  const elapsed = performance.now() - started;
  const got = events(text).slice(1, 201).map((d) =>
    JSON.parse(d).choices[0].delta.content
  );
  assert.deepEqual(got, tokens);
  // A lower bound only: pacing may run late on a busy machine, never early.
  assert.ok(elapsed >= 200 * 2 - 5, `${elapsed} ms`);
});

Deno.test("a held stream records the client's abort", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["a"]));
  const controller = new AbortController();
  const response = await post(llm, {}, "", controller.signal);
  const reader = response.body!.getReader();
  await reader.read();
  controller.abort();
  await reader.read().catch(() => {});
  const aborted = await llm.nextAbort();
  assert.equal(aborted, llm.chats[0]);
  assert.equal(await aborted.aborted, aborted.abortedAt);
  assert.equal(await aborted.done, "aborted");
});

Deno.test("closing the fake ends a stream that never sent headers", async () => {
  const llm = await FakeLlm.start();
  llm.enqueue(stall());
  const pending = post(llm, {});
  await llm.nextChat();
  await llm[Symbol.asyncDispose]();
  const response = await pending;
  assert.equal(await response.text(), "");
});

Deno.test({
  name: "while loading, every endpoint answers the captured 503 Loading model",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    const captured = await Deno.readTextFile(
      `${FIXTURES}/single/health_loading_503.json`,
    );
    assert.equal(LOADING_BODY, captured.trim());
    llm.setLoading(true);
    for (const path of ["/health", "/v1/models", "/props"]) {
      const response = await fetch(`${llm.url}${path}`);
      assert.equal(response.status, 503, path);
      assert.equal(await response.text(), captured.trim(), path);
    }
    const chat = await post(llm, { model: "x", messages: [] });
    assert.equal(chat.status, 503);
    await chat.body?.cancel();
    llm.setLoading(false);
    const health = await fetch(`${llm.url}/health`);
    assert.deepEqual(await health.json(), { status: "ok" });
  },
});

Deno.test("a stopped fake refuses connections and comes back on the same port", async () => {
  await using llm = await FakeLlm.start();
  const first = await fetch(`${llm.url}/health`);
  await first.body?.cancel();
  await llm.stop();
  await assert.rejects(
    fetch(`${llm.url}/health`),
    (error: Error) => /refused/i.test(String(error.cause)),
  );
  await llm.restart();
  const again = await fetch(`${llm.url}/health`);
  assert.equal(again.status, 200);
  await again.body?.cancel();
  assert.deepEqual(
    llm.requests.map((r) => r.path),
    ["/health", "/health"],
  );
});

Deno.test("the fake records every model a request names: /props?model= and chat bodies", async () => {
  await using llm = await FakeLlm.start({ mode: "router" });
  const get = (path: string) =>
    fetch(`${llm.url}${path}`).then((r) => r.body?.cancel());
  await get("/health");
  await get("/v1/models");
  await get("/props");
  assert.deepEqual(llm.namedModels, []);
  await get("/props?model=tiny-a&autoload=false");
  const chat = await post(
    llm,
    { model: "tiny-b", messages: [] },
    "?autoload=false",
  );
  await chat.body?.cancel();
  assert.deepEqual(llm.namedModels, ["tiny-a", "tiny-b"]);
  assert.deepEqual(llm.autoloads, []);
});

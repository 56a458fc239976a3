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

const FIXTURES = fixturesDir();
const noFixtures = FIXTURES === null;
if (noFixtures) {
  log.warn("llama-server captures not found: fixture tests are skipped");
}

function post(llm: FakeLlm, body: unknown, query = "", signal?: AbortSignal) {
  return fetch(`${llm.url}/v1/chat/completions${query}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

function events(text: string): string[] {
  return text.split("\n\n").filter((e) => e !== "").map((e) => {
    assert.ok(e.startsWith("data: "), e);
    return e.slice("data: ".length);
  });
}

/** A chunk's shape: its keys and value types, recursively, values dropped. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map((
        [k, v],
      ) => [k, shape(v)]),
    );
  }
  return value === null ? null : typeof value;
}

function shapes(text: string): Set<string> {
  return new Set(
    events(text).map((d) =>
      d === "[DONE]" ? d : JSON.stringify(shape(JSON.parse(d)))
    ),
  );
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

/** A JSON capture of the single-model folder. */
function captured(name: string): unknown {
  return JSON.parse(Deno.readTextFileSync(`${FIXTURES}/single/${name}`));
}

Deno.test({
  name:
    "a prompt longer than the context gets the captured 400, with both sizes",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start({
      models: [{ id: "/srv/models/tiny.gguf", nCtx: 64 }],
    });
    const question = "word ".repeat(200);
    const response = await post(llm, {
      messages: [{ role: "user", content: question }],
      stream: true,
    });
    assert.equal(response.status, 400);
    assert.equal(
      response.headers.get("content-type"),
      "application/json; charset=utf-8",
    );
    const body = await response.json();
    const real = captured("err_prompt_too_long_nonstream.json") as {
      error: Record<string, unknown>;
    };
    assert.deepEqual(shape(body), shape(real));
    const prompt = llm.chats[0]!.promptTokens!;
    assert.ok(prompt > 200);
    assert.equal(body.error.n_prompt_tokens, prompt);
    assert.equal(body.error.n_ctx, 64);
    assert.equal(
      body.error.message,
      (real.error.message as string).replace("5011", String(prompt))
        .replace("4096", "64"),
    );
  },
});

Deno.test({
  name:
    "a reply that reaches the context end finishes with length at exactly n_ctx, as captured",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start({
      models: [{ id: "/srv/models/tiny.gguf", nCtx: 100 }],
    });
    llm.enqueue(reply({ content: Array(500).fill(" word") }));
    const text = await (await post(llm, {
      messages: [{ role: "user", content: "Tell me everything" }],
      stream: true,
      stream_options: { include_usage: true },
    })).text();
    const real = Deno.readTextFileSync(
      `${FIXTURES}/single/stream_context_end_length.sse`,
    );
    assert.deepEqual(shapes(text), shapes(real));
    const chunks = events(text).slice(0, -1).map((d) => JSON.parse(d));
    assert.equal(chunks.at(-2).choices[0].finish_reason, "length");
    const { usage } = chunks.at(-1);
    assert.equal(usage.total_tokens, 100);
    assert.equal(usage.prompt_tokens, llm.chats[0]!.promptTokens);
    assert.equal(usage.completion_tokens, chunks.length - 3);
  },
});

Deno.test({
  name:
    "max_tokens cuts a reply with length short of the context end, as captured",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: Array(50).fill(" word") }));
    const text = await (await post(llm, {
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 5,
    })).text();
    const real = Deno.readTextFileSync(
      `${FIXTURES}/single/stream_max_tokens_length.sse`,
    );
    assert.deepEqual(shapes(text), shapes(real));
    const chunks = events(text).slice(0, -1).map((d) => JSON.parse(d));
    assert.equal(chunks.at(-2).choices[0].finish_reason, "length");
    assert.equal(chunks.at(-1).usage.completion_tokens, 5);
    assert.ok(chunks.at(-1).usage.total_tokens < 4096);
    // Usage has the fields of the captured non-streamed answers too.
    const turn = captured("usage_turn1_nonstream.json") as { usage: unknown };
    assert.deepEqual(shape(chunks.at(-1).usage), shape(turn.usage));
  },
});

Deno.test({
  name:
    "tokenize and apply-template answer as captured; chat prompts count the template",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    const call = async (path: string, body: unknown) =>
      await (await fetch(llm.url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })).json();
    const plain = await call("/tokenize", {
      content: "Hello world, città <think>",
    });
    // The same form: `{tokens: [ids]}`; the ids are the fake's own.
    const real = captured("tokenize_specials.json") as { tokens: unknown[] };
    assert.deepEqual(Object.keys(plain), Object.keys(real));
    assert.ok(plain.tokens.length > 0);
    assert.ok(
      [...plain.tokens, ...real.tokens].every((id) => Number.isSafeInteger(id)),
    );
    const pieces = await call("/tokenize", {
      content: "Hello world",
      with_pieces: true,
    });
    assert.deepEqual(
      pieces.tokens.map((t: { piece: string }) => t.piece),
      (captured("tokenize_with_pieces.json") as {
        tokens: { piece: string }[];
      }).tokens.map((t) => t.piece),
    );
    const messages = [
      { role: "system", content: "You are helpful." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello!" },
      { role: "user", content: "How are you?" },
    ];
    const template = await call("/apply-template", { messages });
    assert.deepEqual(
      template,
      captured("apply_template.json") as { prompt: string },
    );
    // A chat prompt is the rendered template, counted with its specials.
    await (await post(llm, { messages })).text();
    const counted = await call("/tokenize", { content: template.prompt });
    assert.equal(llm.chats[0]!.promptTokens, counted.tokens.length);
  },
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

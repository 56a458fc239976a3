import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import { chatBody, LlmClient, type ModelChoice } from "../../src/llm/client.ts";
import { contextOverflow } from "../../src/llm/http_error.ts";
import { log } from "../../src/base/log.ts";
import type { Delta } from "../../src/llm/sse_stream.ts";
import {
  countTokens,
  cut,
  FakeLlm,
  fixture,
  fixturesDir,
  hold,
  httpError,
  malformed,
  reply,
  stall,
  streamError,
} from "../support/fake_llm.ts";

const FIXTURES = fixturesDir();
const noFixtures = FIXTURES === null;
if (noFixtures) {
  log.warn("llama-server captures not found: fixture tests are skipped");
}

const SINGLE: ModelChoice = {
  id: "/srv/models/tiny.gguf",
  router: false,
  nCtx: 4096,
};

function client(
  llm: FakeLlm,
  options: { model?: string; stallMs?: number } = {},
) {
  return new LlmClient({
    url: llm.url,
    stallMs: options.stallMs ?? 30_000,
    ...(options.model === undefined ? {} : { model: options.model }),
  });
}

function body(model = SINGLE.id): Record<string, unknown> {
  return chatBody({
    model,
    messages: [{ role: "user", content: "Hi" }],
    tools: [],
    thinking: true,
    extra: {},
  });
}

/** Adjacent text deltas of one kind joined, tool call pieces joined by index. */
function summary(deltas: Delta[]) {
  let think = "";
  let content = "";
  const calls: { id?: string; name?: string; arguments: string }[] = [];
  const rest: Delta[] = [];
  for (const delta of deltas) {
    if (delta.kind === "think") think += delta.text;
    else if (delta.kind === "content") content += delta.text;
    else if (delta.kind === "tool_call") {
      const call = calls[delta.index] ?? { arguments: "" };
      if (delta.id) call.id = delta.id;
      if (delta.name) call.name = delta.name;
      call.arguments += delta.arguments;
      calls[delta.index] = call;
    } else rest.push(delta);
  }
  return { think, content, calls, rest };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("Expected a rejection");
}

/** Reads a reply, keeping what arrived before it failed. */
async function readAll(
  stream: ReadableStream<Delta>,
): Promise<{ deltas: Delta[]; error: unknown }> {
  const deltas: Delta[] = [];
  try {
    for await (const delta of stream) deltas.push(delta);
  } catch (error) {
    return { deltas, error };
  }
  return { deltas, error: null };
}

async function play(file: string) {
  await using llm = await FakeLlm.start();
  llm.enqueue(fixture(`${FIXTURES}/${file}`));
  const stream = await client(llm).chat(
    SINGLE,
    body(),
    new AbortController().signal,
  );
  return await readAll(stream);
}

function capture(name: string, fn: () => Promise<void>) {
  Deno.test({ name, ignore: noFixtures, fn });
}

capture(
  "captured reasoning: think deltas, then content, finish, usage",
  async () => {
    const { deltas, error } = await play(
      "single/stream_reasoning_enable_thinking_budget4.sse",
    );
    assert.equal(error, null);
    const kinds = deltas.map((d) => d.kind);
    assert.deepEqual(kinds.slice(0, 4), ["think", "think", "think", "content"]);
    assert.deepEqual(kinds.slice(-3), ["finish", "usage", "timings"]);
    assert.deepEqual(summary(deltas), {
      think: "Olympics Pearl660",
      content:
        "Brigham app Cursedicator ethicIll horrible devised discreetmess",
      calls: [],
      rest: [{ kind: "finish", reason: "length" }, {
        kind: "usage",
        used: 27,
        prompt: 13,
      }, {
        kind: "timings",
        prompt_n: 1,
        cache_n: 12,
        predicted_n: 14,
        prompt_ms: 1.408,
        predicted_ms: 13.037,
      }],
    });
  },
);

capture("captured think tags inside content go to think", async () => {
  const { deltas, error } = await play(
    "single/stream_reasoning_format_none_budget3.sse",
  );
  assert.equal(error, null);
  const s = summary(deltas);
  // The whitespace templates put right after each tag is layout, dropped.
  assert.equal(s.think, "Olympics Pearl");
  assert.equal(s.content, "Christmas shooting humane matembuds");
});

capture(
  "captured single tool call: id and name from the first piece",
  async () => {
    const { deltas, error } = await play(
      "single/stream_tools_required_single_xmlfmt.sse",
    );
    assert.equal(error, null);
    const first = deltas[0];
    assert.deepEqual(first, {
      kind: "tool_call",
      index: 0,
      id: "wsToibymh9FGZ0qszs3BDpuEscDbvYIu",
      name: "get_forecast",
      arguments: "{",
    });
    assert.deepEqual(summary(deltas), {
      think: "",
      content: "",
      calls: [{
        id: "wsToibymh9FGZ0qszs3BDpuEscDbvYIu",
        name: "get_forecast",
        arguments: '{"metric":false,"days":3}',
      }],
      rest: [{ kind: "finish", reason: "tool_calls" }, {
        kind: "usage",
        used: 393,
        prompt: 321,
      }, {
        kind: "timings",
        prompt_n: 321,
        cache_n: 0,
        predicted_n: 72,
        prompt_ms: 8.312,
        predicted_ms: 769.399,
      }],
    });
  },
);

capture("captured parallel tool calls keep their indexes", async () => {
  const { deltas, error } = await play(
    "single/stream_tools_required_parallel_xmlfmt.sse",
  );
  assert.equal(error, null);
  assert.deepEqual(summary(deltas).calls, [
    {
      id: "Af8kuSyMAK47LZZSIISuUpoagfF4OBuh",
      name: "get_forecast",
      arguments: '{"metric":false,"days":3}',
    },
    {
      id: "BIZbhUxUTSqiwM6v0l9dVEpEWpGqpT6J",
      name: "get_forecast",
      arguments: '{"metric":false',
    },
  ]);
  assert.deepEqual(summary(deltas).rest, [
    { kind: "finish", reason: "length" },
    { kind: "usage", used: 431, prompt: 321 },
    {
      kind: "timings",
      prompt_n: 1,
      cache_n: 320,
      predicted_n: 110,
      prompt_ms: 2.76,
      predicted_ms: 1062.112,
    },
  ]);
});

capture("captured qwen3 JSON tool calls keep raw arguments", async () => {
  const { deltas, error } = await play(
    "single_qwen3_template/stream_qwen3_tools_required_json.sse",
  );
  assert.equal(error, null);
  const calls = summary(deltas).calls;
  assert.equal(calls.length, 2);
  assert.deepEqual(calls[0], {
    id: "LprTZDL5HiLbqcaDaKWTAz406UNwHiuv",
    name: "get_weather",
    arguments: '{"location"\n:"Paris","unit":\n\n"celsius"}',
  });
  assert.deepEqual(JSON.parse(calls[0]!.arguments), {
    location: "Paris",
    unit: "celsius",
  });
});

capture("captured usage without include_usage comes from timings", async () => {
  const { deltas, error } = await play(
    "single/stream_content_no_include_usage.sse",
  );
  assert.equal(error, null);
  assert.equal(summary(deltas).content, "ick scoredzsche Polo");
  assert.deepEqual(deltas.slice(-2), [
    { kind: "usage", used: 19, prompt: 15 },
    {
      kind: "timings",
      prompt_n: 1,
      cache_n: 14,
      predicted_n: 4,
      prompt_ms: 14.711,
      predicted_ms: 3.461,
    },
  ]);
});

capture("captured prompt progress chunks add nothing", async () => {
  const { deltas, error } = await play(
    "single/stream_content_return_progress.sse",
  );
  assert.equal(error, null);
  assert.deepEqual(summary(deltas), {
    think: "",
    content: "ick scored",
    calls: [],
    rest: [{ kind: "finish", reason: "length" }, {
      kind: "usage",
      used: 415,
      prompt: 413,
    }, {
      kind: "timings",
      prompt_n: 413,
      cache_n: 0,
      predicted_n: 2,
      prompt_ms: 10.667,
      predicted_ms: 1.864,
    }],
  });
});

capture("captured error mid-stream: tokens first, then the error", async () => {
  const { deltas, error } = await play(
    "single/stream_error_midstream_context_exceeded_concurrent_A.sse",
  );
  assert.ok(summary(deltas).content.startsWith("Zahhire developments"));
  assert.ok(error instanceof AssistantError);
  assert.equal(
    error.message,
    "llama-server error: Context size has been exceeded.",
  );
});

capture(
  "captured HTTP error before the stream names status and message",
  async () => {
    await using llm = await FakeLlm.start();
    llm.enqueue(fixture(`${FIXTURES}/single/err_prompt_too_long_stream.sse`));
    const error = await rejection(
      client(llm).chat(SINGLE, body(), new AbortController().signal),
    );
    assert.ok(error instanceof AssistantError);
    assert.equal(
      error.message,
      "llama-server answered 400: request (5011 tokens) exceeds the available context size (4096 tokens), try increasing it",
    );
    // The one refusal a reply recovers from carries both sizes.
    const overflow = contextOverflow(error);
    assert.ok(overflow);
    assert.equal(overflow.promptTokens, 5011);
    assert.equal(overflow.nCtx, 4096);
  },
);

Deno.test("other HTTP errors are no context overflow", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(httpError(400, { message: "invalid 'tool_choice'" }));
  const error = await rejection(
    client(llm).chat(SINGLE, body(), new AbortController().signal),
  );
  assert.ok(error instanceof AssistantError);
  assert.equal(contextOverflow(error), null);
});

Deno.test("tokenize counts through POST /tokenize; a router is asked with the model named and autoload off", async () => {
  await using llm = await FakeLlm.start();
  const signal = new AbortController().signal;
  assert.equal(
    await client(llm).tokenize(SINGLE, "Hello world, città", signal),
    countTokens("Hello world, città"),
  );
  const request = llm.requests.at(-1)!;
  assert.equal(request.path, "/tokenize");
  assert.deepEqual(request.body, {
    model: SINGLE.id,
    content: "Hello world, città",
  });

  await using router = await FakeLlm.start({ mode: "router" });
  const loaded: ModelChoice = { id: "tiny-a", router: true, nCtx: 4096 };
  assert.ok(await client(router).tokenize(loaded, "Hi", signal) > 0);
  assert.equal(router.requests.at(-1)!.path, "/tokenize?autoload=false");
  const unloaded: ModelChoice = { id: "tiny-b", router: true, nCtx: null };
  const error = await rejection(
    client(router).tokenize(unloaded, "Hi", signal),
  );
  assert.ok(error instanceof AssistantError);
  assert.deepEqual(router.autoloads, []);
});

Deno.test("a scripted reply is read with usage from the final chunk", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({
    think: ["Hmm", "."],
    content: ["It", " is", " noon."],
    usage: { prompt: 100, cached: 40 },
  }));
  const signal = new AbortController().signal;
  const stream = await client(llm).chat(SINGLE, body(), signal);
  const { deltas, error } = await readAll(stream);
  assert.equal(error, null);
  const { rest, ...text } = summary(deltas);
  assert.deepEqual(text, { think: "Hmm.", content: "It is noon.", calls: [] });
  const [finish, usage, timings, ...more] = rest;
  assert.deepEqual([finish, usage, more], [
    { kind: "finish", reason: "stop" },
    { kind: "usage", used: 105, prompt: 100 },
    [],
  ]);
  // The cost as the server reported it: 60 prompt tokens read, 40 reused.
  assert.ok(timings?.kind === "timings");
  const { prompt_ms, predicted_ms, ...counts } = timings;
  assert.deepEqual(counts, {
    kind: "timings",
    prompt_n: 60,
    cache_n: 40,
    predicted_n: 5,
  });
  assert.ok(prompt_ms > 0 && predicted_ms > 0);
  const request = await llm.nextChat();
  assert.equal(request.path, "/v1/chat/completions");
  assert.deepEqual(request.body, body());
  assert.equal(await request.done, "completed");
  assert.equal(request.abortedAt, null);
});

Deno.test("single server: its one model, n_ctx from /props, cached", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/models/qwen.gguf", nCtx: 8192 }],
  });
  const llmClient = client(llm, { model: "something-else" });
  const signal = new AbortController().signal;
  // The fake's /props, as llama-server's without --mmproj.
  const expected = {
    id: "/models/qwen.gguf",
    router: false,
    nCtx: 8192,
    vision: false,
  };
  assert.deepEqual(await llmClient.chooseModel(signal), expected);
  assert.deepEqual(await llmClient.chooseModel(signal), expected);
  assert.deepEqual(llm.requests.map((r) => r.path), [
    "/v1/models",
    "/props",
    "/v1/models",
  ]);
});

Deno.test("n_ctx prefers /props over meta, and falls back to meta when /props fails", async () => {
  await using llm = await FakeLlm.start({ models: [{ id: "m", nCtx: 4096 }] });
  llm.override("/props", () => new Response("oops", { status: 500 }));
  const llmClient = client(llm);
  const signal = new AbortController().signal;
  assert.deepEqual(await llmClient.chooseModel(signal), {
    id: "m",
    router: false,
    nCtx: 4096,
    vision: null,
  });
  llm.override(
    "/props",
    () => Response.json({ default_generation_settings: { n_ctx: 2048 } }),
  );
  assert.equal((await llmClient.chooseModel(signal)).nCtx, 2048);
});

/** Serves a captured model list (and props) and returns what chooseModel makes of it. */
async function chooseFrom(
  list: string,
  options: { model?: string; props?: string } = {},
) {
  await using llm = await FakeLlm.start({ mode: "router" });
  llm.override(
    "/v1/models",
    () =>
      new Response(Deno.readTextFileSync(`${FIXTURES}/${list}`), {
        headers: { "content-type": "application/json" },
      }),
  );
  const props = options.props;
  if (props) {
    llm.override(
      "/props",
      () =>
        new Response(Deno.readTextFileSync(`${FIXTURES}/${props}`), {
          headers: { "content-type": "application/json" },
        }),
    );
  }
  const signal = new AbortController().signal;
  let result: unknown;
  try {
    result = await client(llm, options).chooseModel(signal);
  } catch (error) {
    result = error;
  }
  return { result, paths: llm.requests.map((r) => r.path) };
}

capture(
  "router capture: all unloaded means no model loaded, and nothing else asked",
  async () => {
    for (
      const list of [
        "router_models_dir/get_v1_models_initial.json",
        "router_models_dir/get_models_right_after_load_request.json",
      ]
    ) {
      const { result, paths } = await chooseFrom(list);
      assert.ok(result instanceof AssistantError, list);
      assert.equal(result.message, "no model loaded");
      assert.deepEqual(paths, ["/v1/models"]);
    }
  },
);

capture(
  "router capture: the loaded model, n_ctx from its /props without autoload",
  async () => {
    const { result, paths } = await chooseFrom(
      "router_models_dir/get_v1_models_after_tiny_a_loaded.json",
      { props: "router_models_dir/get_props_tiny_a.json" },
    );
    // The captured props: a model without --mmproj reads no pictures.
    assert.deepEqual(result, {
      id: "tiny-a",
      router: true,
      nCtx: 4096,
      vision: false,
    });
    assert.deepEqual(paths, [
      "/v1/models",
      "/props?model=tiny-a&autoload=false",
    ]);
  },
);

capture(
  "router capture: a sleeping model is used without asking /props",
  async () => {
    const { result, paths } = await chooseFrom(
      "router_sleep_idle/get_models_after_4s_idle.json",
    );
    // Not asked: whether it reads pictures is not known.
    assert.deepEqual(result, {
      id: "tiny-a",
      router: true,
      nCtx: 4096,
      vision: null,
    });
    assert.deepEqual(paths, ["/v1/models"]);
  },
);

capture(
  "router capture: config model picks among loaded ones, never a failed or unloaded one",
  async () => {
    const list = "router_preset_no_autoload/get_models_after_broken_load.json";
    const props = "router_models_dir/get_props_tiny_a.json";
    const cases: [string | undefined, string][] = [
      [undefined, "tiny-a"],
      ["tiny-b", "tiny-b"],
      ["tiny-qwen3", "tiny-a"],
      ["broken", "tiny-a"],
    ];
    for (const [model, expected] of cases) {
      const { result, paths } = await chooseFrom(list, {
        props,
        ...(model === undefined ? {} : { model }),
      });
      assert.deepEqual(result, {
        id: expected,
        router: true,
        nCtx: 4096,
        vision: false,
      });
      assert.deepEqual(paths, [
        "/v1/models",
        `/props?model=${expected}&autoload=false`,
      ]);
    }
  },
);

capture("single capture: the one model, router false", async () => {
  const { result, paths } = await chooseFrom("single/get_v1_models.json", {
    props: "single/get_props.json",
  });
  assert.deepEqual(paths, ["/v1/models", "/props"]);
  assert.ok(!(result instanceof Error));
  assert.deepEqual(result, {
    id: "/srv/models/tiny.gguf",
    router: false,
    nCtx: 4096,
    vision: false,
  });
});

Deno.test("a model reads pictures when /props says so in modalities; unknown when it says nothing", async () => {
  await using llm = await FakeLlm.start({ models: [{ id: "m", nCtx: 4096 }] });
  let modalities: unknown = { vision: true, audio: false };
  llm.override("/props", () =>
    Response.json({
      default_generation_settings: { n_ctx: 4096 },
      ...(modalities === undefined ? {} : { modalities }),
    }));
  const signal = new AbortController().signal;
  assert.equal((await client(llm).chooseModel(signal)).vision, true);
  modalities = { vision: "yes" };
  assert.equal((await client(llm).chooseModel(signal)).vision, null);
  modalities = undefined;
  assert.equal((await client(llm).chooseModel(signal)).vision, null);
});

Deno.test("a lookup asked fresh reads /props again: a server restarted with --mmproj reads pictures", async () => {
  await using llm = await FakeLlm.start({ models: [{ id: "m", nCtx: 4096 }] });
  const llmClient = client(llm);
  const signal = new AbortController().signal;
  assert.equal((await llmClient.chooseModel(signal)).vision, false);
  llm.setModels([{ id: "m", nCtx: 4096, vision: true }]);
  assert.equal((await llmClient.chooseModel(signal)).vision, false, "kept");
  assert.equal(
    (await llmClient.chooseModel(signal, { fresh: true })).vision,
    true,
  );
});

Deno.test("a lookup that finds llama-server gone forgets /props: back with a smaller context and --mmproj, both are read again", async () => {
  await using llm = await FakeLlm.start({ models: [{ id: "m", nCtx: 8192 }] });
  const llmClient = client(llm);
  const signal = new AbortController().signal;
  const before = await llmClient.chooseModel(signal);
  assert.deepEqual([before.nCtx, before.vision], [8192, false]);
  await llm.stop();
  await assert.rejects(llmClient.chooseModel(signal), {
    code: "llama_unreachable",
  });
  llm.setModels([{ id: "m", nCtx: 2048, vision: true }]);
  await llm.restart();
  const after = await llmClient.chooseModel(signal);
  assert.deepEqual([after.nCtx, after.vision], [2048, true]);
});

Deno.test("forgetProps: the next lookup asks /props again", async () => {
  await using llm = await FakeLlm.start({ models: [{ id: "m", nCtx: 8192 }] });
  const llmClient = client(llm);
  const signal = new AbortController().signal;
  await llmClient.chooseModel(signal);
  llm.setModels([{ id: "m", nCtx: 2048 }]);
  assert.equal((await llmClient.chooseModel(signal)).nCtx, 8192, "kept");
  llmClient.forgetProps();
  assert.equal((await llmClient.chooseModel(signal)).nCtx, 2048);
});

Deno.test("router: no request ever names a model that is not loaded", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [
      { id: "big", status: "unloaded" },
      { id: "broken", status: "unloaded", failed: true },
      { id: "coming", status: "loading" },
      { id: "small", status: "loaded", nCtx: 2048 },
    ],
  });
  const llmClient = client(llm, { model: "big" });
  const signal = new AbortController().signal;
  const turn = async () => {
    const model = await llmClient.chooseModel(signal);
    const stream = await llmClient.chat(model, body(model.id), signal);
    return { model, read: await readAll(stream) };
  };
  const first = await turn();
  assert.deepEqual(first.model, {
    id: "small",
    router: true,
    nCtx: 2048,
    vision: false,
  });
  assert.equal(first.read.error, null);

  llm.setModels([
    { id: "big", status: "unloaded" },
    { id: "small", status: "sleeping", nCtx: 2048 },
  ]);
  const second = await turn();
  assert.equal(second.model.id, "small");

  llm.setModels([
    { id: "big", status: "unloaded" },
    { id: "small", status: "unloaded" },
  ]);
  const error = await rejection(turn());
  assert.ok(error instanceof AssistantError);
  assert.equal(error.message, "no model loaded");

  assert.deepEqual(llm.autoloads, []);
  for (const request of llm.requests) {
    const named = request.url.searchParams.get("model") ??
      (request.body as { model?: string } | undefined)?.model;
    assert.ok(named === undefined || named === "small", request.path);
  }
  assert.deepEqual(llm.chats.map((r) => r.path), [
    "/v1/chat/completions?autoload=false",
    "/v1/chat/completions?autoload=false",
  ]);
});

Deno.test("router: a model unloaded after the choice fails instead of loading", async () => {
  await using llm = await FakeLlm.start({ mode: "router" });
  const llmClient = client(llm);
  const signal = new AbortController().signal;
  const model = await llmClient.chooseModel(signal);
  assert.equal(model.id, "tiny-a");
  llm.setModels([{ id: "tiny-a", status: "unloaded" }]);
  const error = await rejection(llmClient.chat(model, body("tiny-a"), signal));
  assert.ok(error instanceof AssistantError);
  assert.equal(error.message, "llama-server answered 400: model is not loaded");
  assert.deepEqual(llm.autoloads, []);
});

Deno.test("unreachable server is named with its URL", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${listener.addr.port}`;
  listener.close();
  const llmClient = new LlmClient({ url, stallMs: 30_000 });
  const signal = new AbortController().signal;
  for (
    const attempt of [
      () => llmClient.chooseModel(signal),
      () => llmClient.chat(SINGLE, body(), signal),
    ]
  ) {
    const error = await rejection(attempt());
    assert.ok(error instanceof AssistantError);
    assert.equal(error.message, `llama-server unreachable at ${url}`);
    assert.ok(error.cause instanceof TypeError);
  }
});

Deno.test("HTTP errors name the status and the server's message", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    httpError(503, { message: "Loading model" }),
    httpError(502, "<html><body>upstream down</body></html>"),
  );
  const llmClient = client(llm);
  const signal = new AbortController().signal;
  const json = await rejection(llmClient.chat(SINGLE, body(), signal));
  assert.ok(json instanceof AssistantError);
  assert.equal(json.message, "llama-server answered 503: Loading model");
  const html = await rejection(llmClient.chat(SINGLE, body(), signal));
  assert.ok(html instanceof AssistantError);
  assert.equal(html.message, "llama-server answered 502: Bad Gateway");

  llm.override(
    "/v1/models",
    () =>
      new Response('{"error":{"code":500,"message":"boom"}}', { status: 500 }),
  );
  const list = await rejection(llmClient.chooseModel(signal));
  assert.ok(list instanceof AssistantError);
  assert.equal(list.message, "llama-server answered 500: boom");
});

Deno.test("stream failures: error chunk, malformed chunk, cut connection", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    streamError("Context size has been exceeded.", { tokens: ["a", "b"] }),
    malformed({ tokens: ["a"] }),
    cut({ tokens: ["a", "b"] }),
  );
  const llmClient = client(llm);
  const signal = new AbortController().signal;
  const expected = [
    ["llama-server error: Context size has been exceeded.", "ab"],
    ["malformed stream", "a"],
    ["llama-server closed the stream early", "ab"],
  ];
  for (const [message, text] of expected) {
    const { deltas, error } = await readAll(
      await llmClient.chat(SINGLE, body(), signal),
    );
    assert.equal(summary(deltas).content, text);
    assert.ok(error instanceof AssistantError, message);
    assert.equal(error.message, message);
  }
  const { error } = await readAll(await llmClient.chat(SINGLE, body(), signal));
  assert.equal(error, null, "the default reply still works");
});

Deno.test("a cut connection keeps the broken read as cause", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(cut({ tokens: ["a"] }));
  const stream = await client(llm).chat(
    SINGLE,
    body(),
    new AbortController().signal,
  );
  const { error } = await readAll(stream);
  assert.ok(error instanceof AssistantError);
  assert.ok(error.cause instanceof TypeError);
});

Deno.test("stall before headers aborts the request", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(stall());
  const error = await rejection(
    client(llm, { stallMs: 50 }).chat(
      SINGLE,
      body(),
      new AbortController().signal,
    ),
  );
  assert.ok(error instanceof AssistantError);
  assert.equal(error.message, "llama-server stalled");
  const request = await llm.nextChat();
  assert.equal(await request.done, "aborted");
});

Deno.test("stall after some tokens fails the stream and aborts the request", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(stall({ tokens: ["one", " two"] }));
  // Long enough for the tokens to be read before the stall discards them.
  const stream = await client(llm, { stallMs: 250 }).chat(
    SINGLE,
    body(),
    new AbortController().signal,
  );
  const { deltas, error } = await readAll(stream);
  assert.equal(summary(deltas).content, "one two");
  assert.ok(error instanceof AssistantError);
  assert.equal(error.message, "llama-server stalled");
  assert.equal(await (await llm.nextChat()).done, "aborted");
});

Deno.test("the caller's abort mid-stream surfaces as AbortError and reaches the server", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["a", "b"]));
  const controller = new AbortController();
  const stream = await client(llm).chat(SINGLE, body(), controller.signal);
  const reader = stream.getReader();
  assert.deepEqual(await reader.read(), {
    done: false,
    value: { kind: "content", text: "a" },
  });
  assert.deepEqual(await reader.read(), {
    done: false,
    value: { kind: "content", text: "b" },
  });
  const pending = reader.read();
  controller.abort();
  const error = await rejection(pending);
  assert.ok(error instanceof DOMException);
  assert.equal(error.name, "AbortError");
  const request = await llm.nextAbort();
  assert.equal(request.path, "/v1/chat/completions");
  assert.equal(typeof request.abortedAt, "number");
});

Deno.test("the caller's abort mid-stream reaches the server even after garbage collection", async () => {
  // `deno task test` exposes gc(); run without it, this is the test above.
  const gc = (globalThis as { gc?: () => void }).gc;
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["a"]));
  const controller = new AbortController();
  // As the daemon does: the signal it passes is made of others.
  const signal = AbortSignal.any([controller.signal]);
  // Only the delta stream is kept, not the Response it came from.
  const reader = (await client(llm).chat(SINGLE, body(), signal)).getReader();
  assert.deepEqual((await reader.read()).value, { kind: "content", text: "a" });
  const pending = reader.read();
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  controller.abort();
  const error = await rejection(pending);
  assert.ok(error instanceof DOMException, String(error));
  assert.equal(error.name, "AbortError");
  assert.equal(await (await llm.nextAbort()).done, "aborted");
});

Deno.test("the caller's abort before headers surfaces as AbortError and reaches the server", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(stall());
  const controller = new AbortController();
  const pending = client(llm).chat(SINGLE, body(), controller.signal);
  await llm.nextChat();
  controller.abort();
  const error = await rejection(pending);
  assert.ok(error instanceof DOMException);
  assert.equal(error.name, "AbortError");
  assert.equal(await (await llm.nextAbort()).done, "aborted");
});

Deno.test("cancelling the delta stream closes the connection at once", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["a"]));
  const stream = await client(llm).chat(
    SINGLE,
    body(),
    new AbortController().signal,
  );
  for await (const delta of stream) {
    assert.deepEqual(delta, { kind: "content", text: "a" });
    break;
  }
  assert.equal(await (await llm.nextChat()).done, "aborted");
});

Deno.test("chatBody: extra first, the daemon's fields win", () => {
  const messages = [{ role: "user" as const, content: "Hi" }];
  const tools = [{ type: "function", function: { name: "date" } }];
  const built = chatBody({
    model: "m",
    messages,
    tools,
    thinking: false,
    extra: {
      temperature: 0.2,
      model: "other",
      messages: [],
      stream: false,
      stream_options: { include_usage: false },
      tools: [{ type: "function", function: { name: "evil" } }],
      tool_choice: "required",
      chat_template_kwargs: { enable_thinking: true, reasoning_effort: "low" },
    },
  });
  assert.deepEqual(built, {
    temperature: 0.2,
    model: "m",
    messages,
    stream: true,
    stream_options: { include_usage: true },
    tools,
    tool_choice: "required",
    chat_template_kwargs: { reasoning_effort: "low", enable_thinking: false },
  });
});

Deno.test("chatBody: the last round forbids tools; no tools means no tools field", () => {
  const last = chatBody({
    model: "m",
    messages: [],
    tools: [{ type: "function" }],
    thinking: true,
    extra: { tool_choice: "auto", top_p: 0.9 },
    toolChoiceNone: true,
  });
  assert.equal(last.tool_choice, "none");
  assert.equal(last.top_p, 0.9);
  assert.deepEqual(last.chat_template_kwargs, { enable_thinking: true });
  const bare = chatBody({
    model: "m",
    messages: [],
    tools: [],
    thinking: true,
    extra: { tools: [{ type: "function" }] },
  });
  assert.equal("tools" in bare, false);
  assert.equal("tool_choice" in bare, false);
});

Deno.test("chatBody: n_cache_reuse is sent when set, left out at 0, and a [request] value wins", () => {
  const input = {
    model: "m",
    messages: [],
    tools: [],
    thinking: true,
    extra: {},
  };
  assert.equal(chatBody({ ...input, cacheReuse: 256 }).n_cache_reuse, 256);
  assert.equal("n_cache_reuse" in chatBody({ ...input, cacheReuse: 0 }), false);
  assert.equal("n_cache_reuse" in chatBody(input), false);
  const asked = { ...input, extra: { n_cache_reuse: 64 } };
  assert.equal(chatBody({ ...asked, cacheReuse: 256 }).n_cache_reuse, 64);
  // An explicit 0 in [request] turns the daemon's default off.
  const off = { ...input, extra: { n_cache_reuse: 0 } };
  assert.equal(chatBody({ ...off, cacheReuse: 256 }).n_cache_reuse, 0);
});

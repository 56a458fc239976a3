/**
 * One probe of llama-server against the fake: what each state looks like
 * and which requests a probe makes (never one that loads or swaps a model).
 */
import assert from "node:assert/strict";
import { probeBackend } from "../../src/llm/backend_probe.ts";
import type { BackendView } from "../../src/protocol/protocol.ts";
import { FakeLlm, type FakeModel } from "../support/fake_llm.ts";

const TIMEOUT_MS = 2000;

async function probe(llm: FakeLlm, model?: string): Promise<BackendView> {
  const { view } = await probeBackend({
    url: llm.url,
    timeoutMs: TIMEOUT_MS,
    ...(model !== undefined ? { model } : {}),
  });
  return view;
}

function router(models: FakeModel[]): Promise<FakeLlm> {
  return FakeLlm.start({ mode: "router", models });
}

/** Only /health and /v1/models, and no model named anywhere. */
function onlyHarmless(llm: FakeLlm): void {
  for (const request of llm.requests) {
    assert.equal(request.method, "GET", request.path);
    assert.ok(
      request.path === "/health" || request.path === "/v1/models",
      request.path,
    );
  }
  assert.deepEqual(llm.namedModels, []);
  assert.deepEqual(llm.autoloads, []);
}

Deno.test("a single llama-server is up with its model and context size", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 8192 }],
  });
  assert.deepEqual(await probe(llm), {
    state: "up",
    url: llm.url,
    model: "/srv/models/tiny.gguf",
    ctx_max: 8192,
    message: null,
  });
  assert.deepEqual(llm.requests.map((r) => r.path), ["/health", "/v1/models"]);
  onlyHarmless(llm);
});

Deno.test("/health answering 503 Loading model is loading", async () => {
  await using llm = await FakeLlm.start();
  llm.setLoading(true);
  assert.deepEqual(await probe(llm), {
    state: "loading",
    url: llm.url,
    model: null,
    ctx_max: null,
    message: "llama-server is loading its model",
  });
  // /v1/models is not asked while /health says the model loads.
  assert.deepEqual(llm.requests.map((r) => r.path), ["/health"]);
});

Deno.test("a stopped llama-server is down: the connection was refused", async () => {
  await using llm = await FakeLlm.start();
  await llm.stop();
  const view = await probe(llm);
  assert.equal(view.state, "down");
  assert.equal(
    view.message,
    `no connection to ${llm.url} (connection refused)`,
  );
  assert.equal(view.model, null);
  assert.equal(view.ctx_max, null);
});

Deno.test("a server that does not answer in time is down with the time named", async () => {
  await using llm = await FakeLlm.start();
  const release = Promise.withResolvers<void>();
  llm.override("/health", async () => {
    await release.promise;
    return new Response("{}");
  });
  const { view } = await probeBackend({ url: llm.url, timeoutMs: 200 });
  release.resolve();
  assert.equal(view.state, "down");
  assert.equal(view.message, `no answer from ${llm.url} within 0.2 s`);
});

Deno.test("unexpected answers are down, and say which", async () => {
  await using llm = await FakeLlm.start();
  llm.override("/health", () => new Response("nope", { status: 404 }));
  assert.deepEqual(await probe(llm), {
    state: "down",
    url: llm.url,
    model: null,
    ctx_max: null,
    message: `unexpected answer from ${llm.url}: /health answered 404`,
  });
  llm.override("/health", null);
  llm.override("/v1/models", () => new Response("<html>"));
  assert.equal(
    (await probe(llm)).message,
    `unexpected answer from ${llm.url}: /v1/models is not a model list`,
  );
});

Deno.test("a router with only unloaded models has no model, and nothing was loaded", async () => {
  await using llm = await router([
    { id: "tiny-a", status: "unloaded" },
    { id: "tiny-b", status: "unloaded", failed: true },
  ]);
  assert.deepEqual(await probe(llm, "tiny-a"), {
    state: "no_model",
    url: llm.url,
    model: null,
    ctx_max: null,
    message:
      "no model is loaded or sleeping (the router knows 2, 1 failed to load): load one in llama-server",
  });
  onlyHarmless(llm);
  assert.deepEqual(llm.models.map((m) => m.status), ["unloaded", "unloaded"]);
});

Deno.test("a router loading a model is loading it, the preferred one named first", async () => {
  await using llm = await router([
    { id: "tiny-a", status: "loading" },
    { id: "tiny-b", status: "loading" },
    { id: "tiny-c", status: "unloaded" },
  ]);
  assert.equal((await probe(llm)).message, "llama-server is loading tiny-a");
  const view = await probe(llm, "tiny-b");
  assert.equal(view.state, "loading");
  assert.equal(view.message, "llama-server is loading tiny-b");
  onlyHarmless(llm);
});

Deno.test("a router is up with the model a turn would use: loaded first, else sleeping", async () => {
  await using llm = await router([
    { id: "tiny-a", status: "sleeping", nCtx: 1024 },
    { id: "tiny-b", status: "unloaded" },
  ]);
  assert.deepEqual(await probe(llm), {
    state: "up",
    url: llm.url,
    model: "tiny-a",
    ctx_max: 1024,
    message: null,
  });
  llm.setModels([
    { id: "tiny-a", status: "sleeping" },
    { id: "tiny-b", status: "loaded", nCtx: 2048 },
  ]);
  const view = await probe(llm);
  assert.equal(view.model, "tiny-b");
  assert.equal(view.ctx_max, 2048);
  onlyHarmless(llm);
  // Nothing was woken either.
  assert.equal(llm.models[0]?.status, "sleeping");
});

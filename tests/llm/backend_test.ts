/**
 * The backend probe and its watch, in process against the fake llama-server:
 * what each state looks like, which requests a probe makes (never one that
 * loads or swaps a model), and when the watch probes and tells clients.
 */
import assert from "node:assert/strict";
import {
  BackendWatch,
  type BackendWatchOptions,
  probeBackend,
} from "../../src/llm/backend.ts";
import { LlmClient } from "../../src/llm/client.ts";
import type { BackendView } from "../../src/protocol.ts";
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

/** A watch with recorded events; the caller disposes it. */
function watch(
  llm: FakeLlm,
  options: Partial<BackendWatchOptions> = {},
): {
  watch: BackendWatch;
  events: BackendView[];
  next: () => Promise<BackendView>;
} {
  const events: BackendView[] = [];
  let waiter = Promise.withResolvers<BackendView>();
  const made = new BackendWatch({
    url: llm.url,
    pollMs: 0,
    timeoutMs: TIMEOUT_MS,
    busy: () => false,
    emit: (view) => {
      events.push(view);
      const current = waiter;
      waiter = Promise.withResolvers<BackendView>();
      current.resolve(view);
    },
    ...options,
  });
  return { watch: made, events, next: () => waiter.promise };
}

Deno.test("the watch starts unknown and tells of a state only when it changes", async () => {
  await using llm = await FakeLlm.start();
  const w = watch(llm);
  using _watch = w.watch;
  assert.equal(w.watch.view.state, "unknown");
  await w.watch.probe();
  await w.watch.probe();
  await w.watch.probe();
  assert.deepEqual(w.events.map((e) => e.state), ["up"]);
  llm.setLoading(true);
  await w.watch.probe();
  await w.watch.probe();
  llm.setLoading(false);
  await w.watch.probe();
  assert.deepEqual(w.events.map((e) => e.state), ["up", "loading", "up"]);
  assert.deepEqual(w.watch.view, w.events.at(-1));
});

Deno.test("no poll without a client; polls while one is connected; none once it left", async () => {
  await using llm = await FakeLlm.start();
  const w = watch(llm, { pollMs: 50 });
  using _watch = w.watch;
  assert.equal(await llm.requestWithin(300), null, "no client, no poll");
  w.watch.clients(1);
  const polled = await llm.requestWithin(2000);
  assert.equal(polled?.path, "/health");
  assert.equal((await llm.requestWithin(2000))?.path, "/v1/models");
  assert.equal(
    (await llm.requestWithin(2000))?.path,
    "/health",
    "polled again",
  );
  w.watch.clients(0);
  // A probe in flight may finish; then nothing more.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const after = llm.requests.length;
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(llm.requests.length, after, "the client left: no more polls");
});

Deno.test("no poll while a reply is in flight", async () => {
  await using llm = await FakeLlm.start();
  let busy = true;
  const w = watch(llm, { pollMs: 30, busy: () => busy });
  using _watch = w.watch;
  w.watch.clients(1);
  assert.equal(await llm.requestWithin(300), null);
  busy = false;
  const polled = await llm.requestWithin(2000);
  assert.equal(polled?.path, "/health");
});

Deno.test("polling off (0): only the probes asked for", async () => {
  await using llm = await FakeLlm.start();
  const w = watch(llm, { pollMs: 0 });
  using _watch = w.watch;
  w.watch.clients(1);
  assert.equal(await llm.requestWithin(300), null);
});

Deno.test("a turn's lookup updates the state: found is up, failed is probed at once", async () => {
  await using llm = await FakeLlm.start();
  const w = watch(llm);
  using _watch = w.watch;
  const client = new LlmClient({
    url: llm.url,
    stallMs: TIMEOUT_MS,
    observer: w.watch,
  });
  const choice = await client.chooseModel(AbortSignal.timeout(TIMEOUT_MS));
  assert.deepEqual(w.events, [{
    state: "up",
    url: llm.url,
    model: choice.id,
    ctx_max: 4096,
    message: null,
  }]);
  await llm.stop();
  const down = w.next();
  await assert.rejects(client.chooseModel(AbortSignal.timeout(TIMEOUT_MS)));
  assert.equal((await down).state, "down");
  assert.deepEqual(w.events.map((e) => e.state), ["up", "down"]);
  await llm.restart();
  await client.chooseModel(AbortSignal.timeout(TIMEOUT_MS));
  assert.deepEqual(w.events.map((e) => e.state), ["up", "down", "up"]);
});

Deno.test("a probe that started before a turn's lookup never overwrites what the lookup found", async () => {
  await using llm = await FakeLlm.start();
  const release = Promise.withResolvers<void>();
  const arrived = Promise.withResolvers<void>();
  llm.override("/health", async () => {
    arrived.resolve();
    await release.promise;
    return new Response("nope", { status: 500 });
  });
  const w = watch(llm);
  using _watch = w.watch;
  const probing = w.watch.probe();
  await arrived.promise;
  w.watch.chosen({ id: "fresh", router: false, nCtx: 512 });
  release.resolve();
  await probing;
  assert.deepEqual(w.events.map((e) => [e.state, e.model]), [["up", "fresh"]]);
  assert.equal(w.watch.view.state, "up");
});

Deno.test("a probe uses the context size a turn measured for the model", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "m", nCtx: 4096 }],
  });
  const w = watch(llm);
  using _watch = w.watch;
  w.watch.chosen({ id: "m", router: false, nCtx: 2048 });
  await w.watch.probe();
  assert.deepEqual(w.events.map((e) => e.ctx_max), [2048]);
});

Deno.test("a single server that is up is confirmed by /health alone; a router's model list is read at every probe", async () => {
  await using single = await FakeLlm.start();
  const w = watch(single);
  using _watch = w.watch;
  await w.watch.probe();
  await w.watch.probe();
  await w.watch.probe();
  assert.deepEqual(single.requests.map((r) => r.path), [
    "/health",
    "/v1/models",
    "/health",
    "/health",
  ]);
  // A restart is seen by /health, and the model is read again after it.
  await single.stop();
  await w.watch.probe();
  await single.restart();
  single.setModels([{ id: "/srv/models/other.gguf", nCtx: 2048 }]);
  await w.watch.probe();
  assert.deepEqual(
    w.events.map((e) => [e.state, e.model, e.ctx_max]),
    [
      ["up", "/srv/models/tiny.gguf", 4096],
      ["down", null, null],
      ["up", "/srv/models/other.gguf", 2048],
    ],
  );

  await using routed = await router([{ id: "tiny-a", status: "loaded" }]);
  const r = watch(routed);
  using _router = r.watch;
  await r.watch.probe();
  await r.watch.probe();
  assert.deepEqual(routed.requests.map((req) => req.path), [
    "/health",
    "/v1/models",
    "/health",
    "/v1/models",
  ]);
});

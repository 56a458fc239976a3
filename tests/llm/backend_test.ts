/**
 * The backend watch, in process against the fake llama-server: when it
 * probes, what a turn's lookup tells it, and when clients hear of a change.
 */
import assert from "node:assert/strict";
import {
  BackendWatch,
  type BackendWatchOptions,
} from "../../src/llm/backend.ts";
import { LlmClient } from "../../src/llm/client.ts";
import type { BackendView } from "../../src/protocol/protocol.ts";
import { FakeLlm, type FakeModel } from "../support/fake_llm.ts";

const TIMEOUT_MS = 2000;

function router(models: FakeModel[]): Promise<FakeLlm> {
  return FakeLlm.start({ mode: "router", models });
}

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

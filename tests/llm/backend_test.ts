/**
 * The backend watch, in process against the fake llama-server: when it
 * probes, what a turn's lookup tells it, and when clients hear of a change.
 * Its polls wait on a clock the tests move, so a quiet spell of many poll
 * periods takes no real time.
 */
import assert from "node:assert/strict";
import {
  BackendWatch,
  type BackendWatchOptions,
} from "../../src/llm/backend.ts";
import { LlmClient } from "../../src/llm/client.ts";
import type { BackendView } from "../../src/protocol/protocol.ts";
import { FakeLlm, type FakeModel } from "../support/fake_llm.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { within } from "../../src/base/within.ts";

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

/** A watch whose polls wait on `clock`. */
function clocked(
  llm: FakeLlm,
  clock: ManualClock,
  options: Partial<BackendWatchOptions>,
): ReturnType<typeof watch> {
  return watch(llm, { now: clock.now, timer: clock, ...options });
}

const paths = (llm: FakeLlm) => llm.requests.map((r) => r.path);

Deno.test("no poll without a client; polls while one is connected; none once it left", async () => {
  await using llm = await FakeLlm.start();
  const clock = new ManualClock();
  const w = clocked(llm, clock, { pollMs: 50 });
  using _watch = w.watch;
  clock.advance(1000);
  assert.equal(clock.pending, 0, "no client, no poll");
  assert.deepEqual(paths(llm), []);
  // A first client after a quiet spell: a probe at once, then one a period.
  w.watch.clients(1);
  await clock.scheduled();
  assert.deepEqual(paths(llm), ["/health", "/v1/models"]);
  clock.advance(50);
  await clock.scheduled();
  assert.deepEqual(paths(llm), ["/health", "/v1/models", "/health"]);
  w.watch.clients(0);
  assert.equal(clock.pending, 0, "the client left: no poll is due");
  clock.advance(1000);
  assert.equal(llm.requests.length, 3);
});

Deno.test("no poll while a reply is in flight, however long it runs", async () => {
  await using llm = await FakeLlm.start();
  const clock = new ManualClock();
  let busy = true;
  const w = clocked(llm, clock, { pollMs: 30, busy: () => busy });
  using _watch = w.watch;
  w.watch.clients(1);
  for (let period = 0; period < 100; period++) clock.advance(30);
  assert.deepEqual(paths(llm), []);
  assert.equal(clock.pending, 1, "the next poll is still due");
  busy = false;
  clock.advance(30);
  await clock.scheduled();
  assert.deepEqual(paths(llm), ["/health", "/v1/models"]);
});

Deno.test("polling off (0): only the probes asked for", async () => {
  await using llm = await FakeLlm.start();
  const clock = new ManualClock();
  const w = clocked(llm, clock, { pollMs: 0 });
  using _watch = w.watch;
  w.watch.clients(1);
  clock.advance(60_000);
  assert.equal(clock.pending, 0);
  assert.deepEqual(paths(llm), []);
  await w.watch.probe();
  assert.deepEqual(paths(llm), ["/health", "/v1/models"]);
});

Deno.test("no backend event while nothing changes: ten polls of a steady llama-server tell clients nothing", async () => {
  await using llm = await FakeLlm.start();
  const clock = new ManualClock();
  const w = clocked(llm, clock, { pollMs: 1000 });
  using _watch = w.watch;
  await w.watch.probe();
  w.watch.clients(1);
  const before = llm.requests.length;
  for (let period = 0; period < 10; period++) {
    await clock.scheduled();
    clock.advance(1000);
  }
  await clock.scheduled();
  // One /health a period: the model list of an unchanged server is not read again.
  assert.deepEqual(paths(llm).slice(before), Array(10).fill("/health"));
  assert.deepEqual(w.events.map((e) => e.state), ["up"], "only the first");
});

Deno.test("no probe while no client is connected; the first client brings a fresh state at once", async () => {
  await using llm = await FakeLlm.start();
  const clock = new ManualClock();
  const w = clocked(llm, clock, { pollMs: 200 });
  using _watch = w.watch;
  await w.watch.probe();
  assert.deepEqual(w.events.map((e) => e.state), ["up"]);
  // Ten poll periods with no client: nothing is even due.
  clock.advance(2000);
  assert.equal(clock.pending, 0);
  assert.deepEqual(paths(llm), ["/health", "/v1/models"]);
  // Meanwhile llama-server began loading a model: the first client to come
  // hears of it before a poll period has passed.
  llm.setLoading(true);
  const told = w.next();
  w.watch.clients(1);
  assert.ok(await within(told, 2000), "no fresh probe for the first client");
  assert.equal((await told).state, "loading");
  assert.deepEqual(paths(llm), ["/health", "/v1/models", "/health"]);
  // Gone again: the polls stop.
  await clock.scheduled();
  w.watch.clients(0);
  assert.equal(clock.pending, 0);
  clock.advance(2000);
  assert.equal(llm.requests.length, 3);
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

Deno.test("llama-server found down is lost: its listeners forget what /props said, and the probe what the turns measured", async () => {
  await using llm = await FakeLlm.start({ models: [{ id: "m", nCtx: 8192 }] });
  const w = watch(llm);
  using _watch = w.watch;
  const client = new LlmClient({
    url: llm.url,
    stallMs: TIMEOUT_MS,
    observer: w.watch,
  });
  let lost = 0;
  w.watch.onLost(() => {
    lost++;
    client.forgetProps();
  });
  const before = await client.chooseModel(AbortSignal.timeout(TIMEOUT_MS));
  assert.deepEqual([before.nCtx, before.vision], [8192, false]);
  await llm.stop();
  await w.watch.probe();
  assert.equal(w.watch.view.state, "down");
  assert.equal(lost, 1);
  // Back with a smaller context and --mmproj, between two lookups.
  llm.setModels([{ id: "m", nCtx: 2048, vision: true }]);
  await llm.restart();
  await w.watch.probe();
  assert.deepEqual(w.events.map((e) => [e.state, e.ctx_max]), [
    ["up", 8192],
    ["down", null],
    ["up", 2048],
  ]);
  const after = await client.chooseModel(AbortSignal.timeout(TIMEOUT_MS));
  assert.deepEqual([after.nCtx, after.vision], [2048, true]);
  assert.equal(lost, 1, "up again is no loss");
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

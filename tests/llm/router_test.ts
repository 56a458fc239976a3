/**
 * The never-swap rule against a router: the daemon only ever names a model
 * that is loaded (or sleeping), and asks the router never to autoload.
 */
import assert from "node:assert/strict";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, type FakeModel, reply } from "../support/fake_llm.ts";
import { isIdle, type Received } from "../support/socket_client.ts";

async function askOnce(
  models: FakeModel[],
  config = "",
): Promise<{ llm: FakeLlm; events: Received[]; daemon: Daemon }> {
  const llm = await FakeLlm.start({ mode: "router", models });
  const daemon = await Daemon.start({ llmUrl: llm.url, config });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(reply({ content: ["ok"] }));
  await client.send({ type: "ask", text: "Which model?" });
  const events = await client.until(isIdle);
  return { llm, events, daemon };
}

function namesOnlyUsable(
  llm: FakeLlm,
  usable: string[],
  unusable: string[],
): void {
  for (const request of llm.requests) {
    const model = request.url.searchParams.get("model") ??
      (request.body as { model?: string } | undefined)?.model;
    if (model !== undefined && model !== null) {
      assert.ok(
        usable.includes(model),
        `${request.method} ${request.path} names ${model}`,
      );
    }
    for (const name of unusable) {
      assert.ok(!request.text.includes(name), request.path);
    }
  }
  assert.deepEqual(llm.autoloads, [], "nothing was loaded");
}

Deno.test("with one model loaded and one unloaded, the loaded one is used without autoload", async () => {
  const { llm, events, daemon } = await askOnce([
    { id: "tiny-b", status: "unloaded" },
    { id: "tiny-a", status: "loaded", nCtx: 2048 },
  ]);
  await using _llm = llm;
  await using _daemon = daemon;
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
  const [chat] = llm.chats;
  assert.ok(chat);
  assert.equal((chat.body as { model: string }).model, "tiny-a");
  assert.equal(chat.url.searchParams.get("autoload"), "false");
  assert.ok(events.some((e) => e.type === "ctx" && e.max === 2048));
  namesOnlyUsable(llm, ["tiny-a"], ["tiny-b"]);
});

Deno.test("the config's model picks among several loaded ones", async () => {
  const { llm, daemon } = await askOnce([
    { id: "tiny-a", status: "loaded" },
    { id: "tiny-c", status: "loaded" },
  ], 'model = "tiny-c"\n');
  await using _llm = llm;
  await using _daemon = daemon;
  assert.equal((llm.chats[0]!.body as { model: string }).model, "tiny-c");
});

Deno.test("the config's model may name a loaded model by one of its aliases", async () => {
  const { llm, daemon } = await askOnce([
    { id: "tiny-a", status: "loaded" },
    { id: "org/tiny-c-Q4.gguf", aliases: ["tiny-c"], status: "loaded" },
  ], 'model = "tiny-c"\n');
  await using _llm = llm;
  await using _daemon = daemon;
  assert.equal(
    (llm.chats[0]!.body as { model: string }).model,
    "org/tiny-c-Q4.gguf",
  );
});

Deno.test("a sleeping model is used when none is loaded, and no props request wakes another", async () => {
  const { llm, events, daemon } = await askOnce([
    { id: "tiny-a", status: "unloaded" },
    { id: "tiny-s", status: "sleeping" },
  ]);
  await using _llm = llm;
  await using _daemon = daemon;
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
  assert.equal((llm.chats[0]!.body as { model: string }).model, "tiny-s");
  namesOnlyUsable(llm, ["tiny-s"], ["tiny-a"]);
});

Deno.test("no usable model: no model loaded, and no chat request is sent", async () => {
  const { llm, events, daemon } = await askOnce([
    { id: "tiny-a", status: "unloaded" },
    { id: "tiny-b", status: "loading" },
    { id: "tiny-c", status: "unloaded", failed: true },
  ]);
  await using _llm = llm;
  await using _daemon = daemon;
  assert.deepEqual(events.find((e) => e.type === "error"), {
    type: "error",
    code: "no_model_loaded",
    message: "no model loaded",
    turn: true,
  });
  assert.equal(llm.chats.length, 0);
  namesOnlyUsable(llm, [], ["tiny-a", "tiny-b", "tiny-c"]);
});

Deno.test("the model list is asked every turn, so an unload between turns is seen", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [{ id: "tiny-a", status: "loaded" }, {
      id: "tiny-b",
      status: "unloaded",
    }],
  });
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(reply({ content: ["one"] }), reply({ content: ["two"] }));
  await client.send({ type: "ask", text: "First" });
  await client.until(isIdle);

  llm.setModels([{ id: "tiny-a", status: "unloaded" }, {
    id: "tiny-b",
    status: "loaded",
  }]);
  await client.send({ type: "ask", text: "Second" });
  await client.until(isIdle);
  assert.deepEqual(llm.chats.map((c) => (c.body as { model: string }).model), [
    "tiny-a",
    "tiny-b",
  ]);
  assert.deepEqual(llm.autoloads, []);
});

Deno.test("ctx max follows the model in use, and is null when the new one reports no size", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [{ id: "big", status: "loaded", nCtx: 32768 }],
  });
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(reply({ content: ["one"] }), reply({ content: ["two"] }));
  await client.send({ type: "ask", text: "First" });
  const first = await client.until(isIdle);
  assert.ok(first.some((e) => e.type === "ctx" && e.max === 32768));

  llm.setModels([{ id: "small", status: "loaded", nCtx: null }]);
  await client.send({ type: "ask", text: "Second" });
  const second = await client.until(isIdle);
  assert.equal((llm.chats[1]!.body as { model: string }).model, "small");
  const ctx = second.find((e) => e.type === "ctx");
  assert.ok(ctx && ctx.type === "ctx");
  assert.equal(ctx.max, null);
  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.equal(hello.model, "small");
  assert.equal(hello.ctx_max, null);
});

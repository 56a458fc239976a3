/**
 * The backend state as clients see it, end to end: the daemon as a
 * subprocess with its derived flags, real socket clients, and the fake
 * llama-server stopped, restarted, loading, or a router with nothing loaded.
 * When the watch polls over many periods (no client, nothing changing) is
 * tested in process with a clock the test moves, in `backend_test.ts`.
 */
import assert from "node:assert/strict";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { SINGLE_ID } from "../support/fake_llm_models.ts";
import { isIdle, SocketClient } from "../support/socket_client.ts";

const RED_PNG = (await Deno.readFile(
  new URL("../fixtures/files/red.png", import.meta.url),
)).toBase64();

/** A client that fails a wait longer than `ms`. */
function connect(daemon: Daemon, ms = 10_000): Promise<SocketClient> {
  return SocketClient.connect(daemon.paths.socketPath, { timeoutMs: ms });
}

const healthChecks = (llm: FakeLlm) =>
  llm.requests.filter((r) => r.path === "/health");

Deno.test("hello carries the backend; every client hears down within backend_poll + 1 s, and up when it is back", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: SINGLE_ID, nCtx: 8192 }],
  });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "backend_poll = 1\n",
  });
  // The wait limit is the promise: the state within backend_poll + 1 s.
  await using first = await connect(daemon, 2000);
  await using second = await connect(daemon, 2000);
  const up = {
    state: "up",
    url: llm.url,
    model: SINGLE_ID,
    ctx_max: 8192,
    message: null,
  };
  assert.deepEqual((await first.next("hello")).backend, up);
  assert.deepEqual((await second.next("hello")).backend, up);

  await llm.stop();
  for (const client of [first, second]) {
    const { type: _type, ...down } = await client.next("backend");
    assert.deepEqual(down, {
      state: "down",
      url: llm.url,
      model: null,
      ctx_max: null,
      message: `no connection to ${llm.url} (connection refused)`,
    });
  }

  await llm.restart();
  for (const client of [first, second]) {
    const { type: _type, ...back } = await client.next("backend");
    assert.deepEqual(back, up);
  }
  // A client that connects now is greeted with the same.
  await using third = await connect(daemon);
  assert.deepEqual((await third.next("hello")).backend, up);
});

Deno.test("llama-server restarted with a smaller context while the daemon watches: the next question is planned for the new one", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: SINGLE_ID, nCtx: 8192 }],
  });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "backend_poll = 0.2\n",
  });
  await using client = await connect(daemon);
  await client.next("hello");
  // A picture refused (no --mmproj) has the model looked up, and no request
  // after it that could fail while the server is away.
  await client.send({
    type: "ask",
    text: "Before",
    files: [{ name: "red.png", mime: "image/png", data: RED_PNG }],
  });
  assert.equal((await client.next("error")).code, "no_vision");

  await llm.stop();
  await client.until((e) => e.type === "backend" && e.state === "down");
  llm.setModels([{ id: SINGLE_ID, nCtx: 2048 }]);
  await llm.restart();
  await client.until((e) => e.type === "backend" && e.state === "up");
  await client.send({ type: "ask", text: "After" });
  const after = await client.until((e) => e.type === "ctx");
  assert.equal(after.at(-1)?.type === "ctx" && after.at(-1)?.max, 2048);
  await client.until(isIdle);
});

Deno.test("/health answering 503 Loading model is loading, then up once loaded", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "backend_poll = 0.2\n",
  });
  await using client = await daemon.connect();
  assert.equal((await client.next("hello")).backend?.state, "up");
  llm.setLoading(true);
  const loading = await client.next("backend");
  assert.equal(loading.state, "loading");
  assert.equal(loading.message, "llama-server is loading its model");
  assert.equal(loading.model, null);
  llm.setLoading(false);
  const up = await client.next("backend");
  assert.equal(up.state, "up");
  assert.equal(up.model, SINGLE_ID);
  assert.equal(up.ctx_max, 4096);
});

Deno.test("a router with only unloaded models is no_model, and nothing is ever loaded or named", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [{ id: "tiny-a", status: "unloaded" }, {
      id: "tiny-b",
      status: "unloaded",
    }],
  });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: 'backend_poll = 0.2\nmodel = "tiny-b"\n',
  });
  await using client = await daemon.connect();
  const hello = await client.next("hello");
  assert.equal(hello.backend?.state, "no_model");
  assert.match(hello.backend?.message ?? "", /^no model is loaded or sleeping/);
  await client.send({ type: "ask", text: "Anyone there?" });
  const turn = await client.until(isIdle);
  assert.ok(
    turn.some((e) =>
      e.type === "error" && e.message === "no model loaded" && e.turn === true
    ),
  );
  // Several polls later, still nothing loaded, woken or even named.
  const polled = healthChecks(llm).length;
  while (healthChecks(llm).length < polled + 3) await llm.nextRequest();
  assert.deepEqual(llm.namedModels, []);
  assert.deepEqual(llm.autoloads, []);
  assert.deepEqual(llm.models.map((m) => m.status), ["unloaded", "unloaded"]);
  assert.equal(llm.chats.length, 0);
  assert.ok(
    llm.requests.every((r) =>
      r.method === "GET" && (r.path === "/health" || r.path === "/v1/models")
    ),
    llm.requests.map((r) => r.path).join(", "),
  );
  assert.equal(client.received.filter((e) => e.type === "backend").length, 0);

  // Someone loads a model in the router: up, with it.
  llm.setModels([
    { id: "tiny-a", status: "loaded", nCtx: 2048 },
    { id: "tiny-b", status: "unloaded" },
  ]);
  const up = await client.next("backend");
  assert.equal(up.state, "up");
  assert.equal(up.model, "tiny-a");
  assert.equal(up.ctx_max, 2048);
});

Deno.test("no probe while a reply streams: polling adds nothing to a reply in flight", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "backend_poll = 0.1\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  // Polls run while idle.
  const idle = healthChecks(llm).length;
  while (healthChecks(llm).length < idle + 2) await llm.nextRequest();

  const tokens = Array.from({ length: 20 }, (_, i) => ` w${i}`);
  llm.enqueue(reply({ content: tokens, tokenDelayMs: 75 }));
  await client.send({ type: "ask", text: "A slow one" });
  await client.until((e) => e.type === "user");
  const chat = await llm.nextChat();
  const turn = await client.until(isIdle);
  const ended = performance.now();
  assert.ok(turn.some((e) => e.type === "done" && e.stopped === false));
  // The reply's own token counts are part of it, not probes.
  const during = llm.requests.filter((r) =>
    r.at > chat.at && r.at < ended && r !== chat && r.path !== "/tokenize"
  );
  assert.deepEqual(during.map((r) => r.path), []);
  // The stream took over a second: five poll periods or more went by.
  assert.ok(ended - chat.at > 1000, `${ended - chat.at} ms`);
  // And polling resumes once the reply is over.
  const after = healthChecks(llm).length;
  while (healthChecks(llm).length <= after) await llm.nextRequest();
  assert.equal(client.received.filter((e) => e.type === "backend").length, 0);
});

Deno.test("with polling off, a turn that finds llama-server gone makes it down at once, and the next turn up", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "backend_poll = 0\n",
  });
  await using client = await daemon.connect();
  assert.equal((await client.next("hello")).backend?.state, "up");
  await llm.stop();
  await client.send({ type: "ask", text: "Still there?" });
  // The error ends the turn; the state follows from the probe it set off.
  const failed = await client.until((e) => e.type === "backend");
  if (!failed.some(isIdle)) failed.push(...await client.until(isIdle));
  const down = failed.find((e) => e.type === "backend");
  assert.equal(down?.state, "down");
  assert.equal(
    down?.message,
    `no connection to ${llm.url} (connection refused)`,
  );
  assert.ok(
    failed.some((e) =>
      e.type === "error" &&
      e.message === `llama-server unreachable at ${llm.url}` && e.turn === true
    ),
  );

  await llm.restart();
  llm.enqueue(reply({ content: ["Yes", "."] }));
  await client.send({ type: "ask", text: "And now?" });
  const turn = await client.until(isIdle);
  const types = turn.map((e) => e.type);
  // The state is back before the reply's first token.
  assert.ok(
    types.indexOf("backend") < types.indexOf("token"),
    types.join(", "),
  );
  const back = turn.find((e) => e.type === "backend");
  assert.equal(back?.state, "up");
  assert.equal(back?.model, SINGLE_ID);
  assert.ok(turn.some((e) => e.type === "done" && e.stopped === false));
  // Polling off: the running server saw the probe at start only (the one
  // after the failed turn found it stopped).
  assert.equal(healthChecks(llm).length, 1);
});

Deno.test("a llama-server that never answers: hello says unknown, then down names the timeout", async () => {
  await using llm = await FakeLlm.start();
  const release = Promise.withResolvers<void>();
  llm.override("/health", async () => {
    await release.promise;
    return new Response("{}");
  });
  try {
    await using daemon = await Daemon.start({
      llmUrl: llm.url,
      config: "backend_poll = 1\n",
    });
    await using client = await daemon.connect();
    const hello = await client.next("hello");
    assert.deepEqual(hello.backend, {
      state: "unknown",
      url: llm.url,
      model: null,
      ctx_max: null,
      message: null,
    });
    const down = await client.next("backend");
    assert.equal(down.state, "down");
    assert.equal(down.message, `no answer from ${llm.url} within 5 s`);
  } finally {
    release.resolve();
  }
});

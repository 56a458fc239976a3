/**
 * Listening through the daemon: `listen {on}` switches it for every client,
 * `hello.listening` carries it to a client that connects later, and turning
 * it on stops the reply in flight as a new question would. The assistant
 * and its socket server run in this process against the fake llama-server.
 */
import assert from "node:assert/strict";
import { within } from "../support/client_harness.ts";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { FakeLlm, hold, reply } from "../support/fake_llm.ts";
import { isIdle, withoutTimings } from "../support/socket_client.ts";

Deno.test("listen switches listening for every client, with the ref of the listen that switched it; hello carries it", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using a = await daemon.connect();
  await using b = await daemon.connect();
  assert.equal((await a.next("hello")).listening, false, "off at start");
  await b.next("hello");

  await a.send({ type: "listen", on: true, ref: "talk-1" });
  const on = { type: "listening", on: true, ref: "talk-1" };
  assert.deepEqual(await a.next(), on);
  assert.deepEqual(await b.next(), on);
  await using late = await daemon.connect();
  assert.equal((await late.next("hello")).listening, true);

  // Any client switches it off; a listen without a ref is told without one.
  await b.send({ type: "listen", on: false });
  for (const client of [a, b, late]) {
    assert.deepEqual(await client.next(), { type: "listening", on: false });
  }
  await using later = await daemon.connect();
  assert.equal((await later.next("hello")).listening, false);
});

Deno.test("a listen that changes nothing is still answered to every client, so a toggling client always hears back", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using a = await daemon.connect();
  await using b = await daemon.connect();
  await a.next("hello");
  await b.next("hello");
  await a.send({ type: "listen", on: false, ref: 7 });
  assert.deepEqual(await a.next(), { type: "listening", on: false, ref: 7 });
  assert.deepEqual(await b.next(), { type: "listening", on: false, ref: 7 });
  await a.send({ type: "listen", on: true, ref: 8 });
  await a.send({ type: "listen", on: true, ref: 9 });
  assert.deepEqual(await b.next(), { type: "listening", on: true, ref: 8 });
  assert.deepEqual(await b.next(), { type: "listening", on: true, ref: 9 });
});

Deno.test("on that is not a boolean is answered bad on to the sender alone, and listening stays as it was", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using a = await daemon.connect();
  await using b = await daemon.connect();
  await a.next("hello");
  await b.next("hello");
  for (const on of [undefined, "true", 1, null]) {
    await a.send({ type: "listen", on, ref: "x" });
    assert.deepEqual(await a.next(), {
      type: "error",
      code: "bad_on",
      message: "bad on",
      ref: "x",
    }, String(on));
  }
  // The next thing b hears is its own ping's answer: no listening went out.
  await b.send({ type: "ping", ref: "after" });
  assert.equal((await b.next("pong")).ref, "after");
  await using late = await daemon.connect();
  assert.equal((await late.next("hello")).listening, false);
});

Deno.test("listening turned on while a reply streams stops it, as a new question would; turned off it leaves a reply alone", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using asker = await daemon.connect();
  await using talker = await daemon.connect();
  await asker.next("hello");
  await talker.next("hello");

  // Off while a reply streams: the reply goes on to its end.
  llm.enqueue(reply({ content: ["All ", "of it."] }));
  await asker.send({ type: "ask", text: "First?", ref: "q1" });
  await asker.until((event) => event.type === "user");
  await talker.send({ type: "listen", on: false, ref: "off" });
  const first = await asker.until(isIdle);
  assert.ok(
    first.some((e) => e.type === "listening" && e.ref === "off"),
    JSON.stringify(first),
  );
  assert.deepEqual(withoutTimings(first.find((e) => e.type === "done")!), {
    type: "done",
    id: 1,
    stopped: false,
    ref: "q1",
  });
  assert.equal(llm.chats[0]!.abortedAt, null);

  // On while a reply streams: it is stopped (its request aborted, nothing
  // saved), then every client hears that listening is on.
  llm.enqueue(hold(["Half"]));
  await asker.send({ type: "ask", text: "Second?", ref: "q2" });
  await asker.until((event) =>
    event.type === "token" && event.delta === "Half"
  );
  const held = llm.chats.at(-1)!;
  await talker.send({ type: "listen", on: true, ref: "on" });
  const stopped = await asker.until((event) => event.type === "listening");
  assert.deepEqual(stopped.slice(-3), [
    { type: "done", id: 1, stopped: true, ref: "q2" },
    { type: "state", state: "idle" },
    { type: "listening", on: true, ref: "on" },
  ]);
  await within(held.aborted, "the reply's request to be aborted");
  assert.equal(daemon.assistant.replying, false);
  await daemon.assistant.settled();
  assert.deepEqual(
    daemon.store.open(1)?.turns.map((turn) => turn.user),
    ["First?"],
  );
});

/** Tool calls that wait for the user: allowed, denied, timed out and stopped, with two clients; and a late client's hello. */
import assert from "node:assert/strict";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { runs, weatherTools } from "../support/weather_tool.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import {
  isIdle,
  type Received,
  type SocketClient,
} from "../support/socket_client.ts";

type Body = {
  messages: { role: string; content: string | null; tool_call_id?: string }[];
};

const weatherCall = (place = "Paris") =>
  reply({
    toolCalls: [{ name: "weather", arguments: JSON.stringify({ place }) }],
  });

/** The tool message the model read in chat request `index`. */
function toolResult(llm: FakeLlm, index: number): string {
  const messages = (llm.chats[index]!.body as Body).messages;
  return messages.filter((m) => m.role === "tool").at(-1)?.content ?? "";
}

async function connected(daemon: LocalDaemon): Promise<SocketClient> {
  const client = await daemon.connect();
  await client.next("hello");
  return client;
}

/** Reads up to the `confirm` event; returns it with the events before it. */
async function untilConfirm(
  client: SocketClient,
): Promise<{ confirm: Received; before: Received[] }> {
  const events = await client.until((e) => e.type === "confirm");
  return { confirm: events.at(-1)!, before: events.slice(0, -1) };
}

Deno.test("allowed: every client is asked, the first answer counts, the second gets no such call, then the tool runs", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [tools.dir],
  });
  await using a = await connected(daemon);
  await using b = await connected(daemon);
  llm.enqueue(weatherCall(), reply({ content: ["Sunny."] }));
  await a.send({ type: "ask", text: "Weather in Paris?" });

  const seenA = await untilConfirm(a);
  const seenB = await untilConfirm(b);
  for (const seen of [seenA, seenB]) {
    assert.deepEqual(seen.before.at(-1), {
      type: "state",
      state: "confirm",
      tool: "weather",
    });
    assert.equal(seen.confirm.tool, "weather");
    assert.deepEqual(seen.confirm.args, { place: "Paris" });
  }
  const call = seenA.confirm.call as string;
  assert.equal(seenB.confirm.call, call);
  assert.deepEqual(await runs(tools.dir), [], "nothing runs before an answer");

  await a.send({ type: "approve", call, allow: true });
  assert.deepEqual(await b.next(), { type: "approved", call, allow: true });
  await b.send({ type: "approve", call, allow: false });
  const rest = await b.until(isIdle);
  assert.deepEqual(rest.filter((e) => e.type === "error"), [
    { type: "error", code: "no_such_call", message: "no such call" },
  ]);
  assert.deepEqual(
    rest.filter((e) => e.type === "tool").map((e) => e.done),
    [false, true],
  );
  const eventsA = await a.until(isIdle);
  assert.deepEqual(eventsA[0], { type: "approved", call, allow: true });
  assert.ok(!eventsA.some((e) => e.type === "error"), "A's answer counted");
  assert.deepEqual(await runs(tools.dir), ["Paris"]);
  assert.equal(toolResult(llm, 1), "Sunny in Paris\n");
});

Deno.test("denied: the model reads that the user declined, no tool runs, the history keeps a placeholder", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [tools.dir],
  });
  await using a = await connected(daemon);
  llm.enqueue(weatherCall("Oslo"), reply({ content: ["As you wish."] }));
  await a.send({ type: "ask", text: "Weather in Oslo?" });
  const { confirm } = await untilConfirm(a);
  await a.send({ type: "approve", call: confirm.call, allow: false });
  const events = await a.until(isIdle);
  assert.deepEqual(events[0], {
    type: "approved",
    call: confirm.call,
    allow: false,
  });
  assert.ok(!events.some((e) => e.type === "tool"), "no tool events");
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
  assert.deepEqual(await runs(tools.dir), []);
  assert.match(toolResult(llm, 1), /The user declined to run weather/);

  // The next turn replays the history: the declined call as a placeholder.
  llm.enqueue(reply({ content: ["Hi."] }));
  await a.send({ type: "ask", text: "Hello" });
  await a.until(isIdle);
  assert.match(
    toolResult(llm, 2),
    /^\[tool result not kept: weather, 0 bytes, 0 lines, \d+\.\d s, declined\]$/,
  );
});

Deno.test("no answer within confirm_timeout: declined, and every client is told", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [tools.dir],
    config: "confirm_timeout = 0.3\n",
  });
  await using a = await connected(daemon);
  await using b = await connected(daemon);
  llm.enqueue(weatherCall(), reply({ content: ["No answer, then."] }));
  await a.send({ type: "ask", text: "Weather?" });
  const { confirm } = await untilConfirm(a);
  for (const client of [a, b]) {
    const events = await client.until(isIdle);
    assert.ok(
      events.some((e) =>
        e.type === "approved" && e.call === confirm.call && e.allow === false
      ),
    );
  }
  assert.match(
    toolResult(llm, 1),
    /did not answer within 0\.3 seconds whether to run weather/,
  );
  assert.deepEqual(await runs(tools.dir), []);
  await a.send({ type: "approve", call: confirm.call, allow: true });
  assert.deepEqual(await a.next(), {
    type: "error",
    code: "no_such_call",
    message: "no such call",
  });
  assert.deepEqual(await runs(tools.dir), []);
});

Deno.test("stop cancels the wait: approved false, done stopped, the tool never runs", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [tools.dir],
  });
  await using a = await connected(daemon);
  await using b = await connected(daemon);
  llm.enqueue(weatherCall());
  await a.send({ type: "ask", text: "Weather?" });
  const { confirm } = await untilConfirm(a);
  await untilConfirm(b);
  await b.send({ type: "stop" });
  for (const client of [a, b]) {
    assert.deepEqual(await client.until(isIdle), [
      { type: "approved", call: confirm.call, allow: false },
      { type: "done", id: null, stopped: true },
      { type: "state", state: "idle" },
    ]);
  }
  await a.send({ type: "approve", call: confirm.call, allow: true });
  assert.deepEqual(await a.next(), {
    type: "error",
    code: "no_such_call",
    message: "no such call",
  });
  assert.deepEqual(await runs(tools.dir), []);
  assert.equal(llm.chats.length, 1, "no request follows a stopped wait");
});

Deno.test("a client that connects while a call waits sees it in hello and may answer it", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [tools.dir],
  });
  await using a = await connected(daemon);
  llm.enqueue(weatherCall("Rome"), reply({ content: ["Warm."] }));
  await a.send({ type: "ask", text: "Weather in Rome?" });
  const { confirm } = await untilConfirm(a);

  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.equal(hello.state, "confirm");
  assert.equal(hello.tool, "weather");
  assert.deepEqual(hello.pending, {
    id: null,
    user: "Weather in Rome?",
    reply: "",
    think: "",
    tools: [],
    confirm: { call: confirm.call, tool: "weather", args: { place: "Rome" } },
  });
  assert.deepEqual(hello.confirm, hello.pending?.confirm);
  await late.send({
    type: "approve",
    call: confirm.call,
    allow: true,
    ref: "yes-1",
  });
  const events = await a.until(isIdle);
  // The decision reaches every client, with the ref of the answer that made it.
  assert.deepEqual(events[0], {
    type: "approved",
    call: confirm.call,
    allow: true,
    ref: "yes-1",
  });
  assert.deepEqual(await runs(tools.dir), ["Rome"]);

  // Once decided, a newcomer's hello holds no waiting call.
  await using after = await daemon.connect();
  const again = await after.next("hello");
  assert.equal(again.state, "idle");
  assert.equal(again.pending, null);
  assert.equal(again.confirm, undefined);
});

Deno.test("a waiting call is in hello even when its reply belongs to a conversation the newcomer does not see", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [tools.dir],
  });
  await using a = await connected(daemon);
  llm.enqueue(weatherCall("Oslo"), reply({ content: ["Cold."] }));
  await a.send({ type: "ask", text: "Weather in Oslo?" });
  const { confirm } = await untilConfirm(a);
  // The reply will create its conversation; the current one is another, new one.
  await a.send({ type: "new" });
  await a.next("conversation");

  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.equal(hello.id, null);
  assert.equal(hello.pending, null);
  assert.equal(hello.state, "confirm");
  assert.deepEqual(hello.confirm, {
    call: confirm.call,
    tool: "weather",
    args: { place: "Oslo" },
  });
  await late.send({ type: "approve", call: confirm.call, allow: false });
  const events = await a.until(isIdle);
  assert.deepEqual(events[0], {
    type: "approved",
    call: confirm.call,
    allow: false,
  });
  assert.deepEqual(await runs(tools.dir), []);
});

Deno.test("confirm_tools makes a tool file's calls wait; other tools and bad arguments do not", async () => {
  const fixtures = new URL("../fixtures/tools/", import.meta.url).pathname;
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [fixtures],
    config: 'confirm_tools = ["echo_args"]\n',
  });
  await using a = await connected(daemon);
  llm.enqueue(
    reply({
      toolCalls: [
        { name: "typed", arguments: '{"name":"x","count":1}' },
        // Not valid for echo_args: refused without asking anyone.
        { name: "echo_args", arguments: '{"count":1}' },
        { name: "echo_args", arguments: '{"text":"hi"}' },
      ],
    }),
    reply({ content: ["Done."] }),
  );
  await a.send({ type: "ask", text: "Run things" });
  const { confirm, before } = await untilConfirm(a);
  assert.equal(confirm.tool, "echo_args");
  assert.deepEqual(confirm.args, { text: "hi" });
  assert.deepEqual(
    before.filter((e) => e.type === "tool").map((e) => `${e.name} ${e.done}`),
    ["typed false", "typed true", "echo_args false", "echo_args true"],
  );
  await a.send({ type: "approve", call: confirm.call, allow: true });
  const events = await a.until(isIdle);
  assert.ok(events.some((e) => e.type === "tool" && e.name === "echo_args"));
  assert.match(toolResult(llm, 1), /\[hi\]/);
});

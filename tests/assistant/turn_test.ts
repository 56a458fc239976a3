/**
 * The turn engine end to end: the daemon as a subprocess with its derived
 * flags, a fake llama-server over real HTTP, clients on the real socket.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { within } from "../support/client_harness.ts";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { chunk, FakeLlm, gated, hold, reply } from "../support/fake_llm.ts";
import { isIdle, withoutTimings } from "../support/socket_client.ts";

const TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname;

interface StoredRow {
  conv: number;
  seq: number;
  user: string;
  reply: string;
  tools: string;
  messages: string;
}

function storedTurns(daemon: LocalDaemon): StoredRow[] {
  const db = new DatabaseSync(daemon.paths.dbPath, { readOnly: true });
  try {
    return db.prepare(
      "SELECT conv, seq, user, reply, tools, messages FROM turns ORDER BY id",
    )
      .all() as unknown as StoredRow[];
  } finally {
    db.close();
  }
}

type Message = { role: string; content: string | null; tool_calls?: unknown[] };

Deno.test("a turn streams thinking, tokens and a tool call in order and stores the placeholder", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  await using client = await daemon.connect();
  await client.next("hello");

  llm.enqueue(
    reply({
      think: ["Let me ", "run it."],
      toolCalls: [{ name: "echo_args", arguments: '{"text":"a b"}' }],
    }),
    reply({ think: ["Done."], content: ["The tool ", "said a b."] }),
  );
  await client.send({ type: "ask", text: "Run the echo tool please" });
  const events = await client.until(isIdle);
  assert.deepEqual(
    events.map((e) => e.type === "state" ? `state ${e.state}` : e.type),
    [
      "user",
      "state thinking",
      "think",
      "think",
      "state tool",
      "tool",
      "tool",
      "state thinking",
      "think",
      "token",
      "token",
      "done",
      "ctx",
      "state idle",
    ],
  );
  assert.deepEqual(events[5], { type: "tool", name: "echo_args", done: false });
  assert.deepEqual(events[6], { type: "tool", name: "echo_args", done: true });
  assert.deepEqual(withoutTimings(events[11]!), {
    type: "done",
    id: 1,
    stopped: false,
  });

  // The second request carried the real tool result for the model.
  const second = llm.chats[1]!.body as { messages: Message[] };
  const toolMessage = second.messages.at(-1)!;
  assert.equal(toolMessage.role, "tool");
  assert.match(toolMessage.content!, /\[a b\]/);
  assert.match(toolMessage.content!, /stdin=\{"text":"a b"\}/);

  const [row] = storedTurns(daemon);
  assert.ok(row);
  assert.equal(row.user, "Run the echo tool please");
  assert.equal(row.reply, "The tool said a b.");
  assert.deepEqual(JSON.parse(row.tools), ["echo_args"]);
  const stored = JSON.parse(row.messages) as Message[];
  assert.deepEqual(stored.map((m) => m.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
  ]);
  assert.match(
    stored[0]!.content!,
    /^\[\d{4}-\d\d-\d\d \d\d:\d\d UTC[+-]\d\d:\d\d\] Run the echo/,
  );
  assert.equal(stored[1]!.tool_calls?.length, 1);
  assert.match(
    stored[2]!.content!,
    /^\[tool result not kept: echo_args, \d+ bytes, \d+ lines/,
  );
  assert.doesNotMatch(
    row.messages,
    /stdin=|Let me|Done\./,
    "no tool output, no reasoning",
  );
  assert.equal(stored[3]!.content, "The tool said a b.");
});

Deno.test("stop mid-stream ends the reply at once, aborts the request and saves nothing", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  llm.enqueue(hold(["one ", "two "]));
  await client.send({ type: "ask", text: "Count slowly" });
  await client.until((e) => e.type === "token" && e.delta === "two ");
  const request = llm.chats[0]!;
  await client.send({ type: "stop" });
  const events = await client.until(isIdle);
  assert.deepEqual(events, [
    { type: "done", id: null, stopped: true },
    { type: "state", state: "idle" },
  ]);
  await within(request.aborted, "the upstream request to be aborted");
  assert.equal(await request.done, "aborted");

  await client.send({ type: "list" });
  assert.deepEqual(await client.next("conversations"), {
    type: "conversations",
    items: [],
  });
  assert.deepEqual(storedTurns(daemon), []);
});

Deno.test("an ask during a reply stops it first; a late client gets the pending reply", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  await using first = await daemon.connect();
  await first.next("hello");

  llm.enqueue(
    reply({ toolCalls: [{ name: "echo_args", arguments: '{"text":"x"}' }] }),
    hold(["partial ", "answer"], {}),
  );
  llm.enqueue(reply({ think: ["quick"], content: ["Second answer."] }));
  await first.send({ type: "ask", text: "First question" });
  await first.until((e) => e.type === "token" && e.delta === "answer");

  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.equal(hello.state, "thinking");
  assert.deepEqual(hello.pending, {
    id: null,
    user: "First question",
    reply: "partial answer",
    think: "",
    tools: ["echo_args"],
  });

  const held = llm.chats[1]!;
  await first.send({ type: "ask", text: "Second question" });
  const events = [
    ...await first.until((e) => e.type === "done" && e.stopped === false),
    ...await first.until(isIdle),
  ];
  assert.deepEqual(events.slice(0, 3), [
    { type: "done", id: null, stopped: true },
    { type: "state", state: "idle" },
    { type: "user", text: "Second question" },
  ]);
  await within(held.aborted, "the held request to be aborted");
  assert.deepEqual(withoutTimings(events.at(-3)!), {
    type: "done",
    id: 1,
    stopped: false,
  });
  const lateEvents = await late.until((e) =>
    e.type === "done" && e.stopped === false
  );
  assert.deepEqual(
    lateEvents.filter((e) => e.type === "token").map((e) => e.delta).join(""),
    "Second answer.",
  );
  const rows = storedTurns(daemon);
  assert.deepEqual(rows.map((r) => [r.user, r.reply]), [[
    "Second question",
    "Second answer.",
  ]]);
});

Deno.test("a client that half-closes after its ask gets the whole reply, then is closed", async () => {
  await using llm = await FakeLlm.start();
  const gate = Promise.withResolvers<void>();
  llm.enqueue(gated("first", gate.promise, " second"));
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  await client.send({ type: "ask", text: "Half closed" });
  await client.closeWrite();
  await client.until((e) => e.type === "token" && e.delta === "first");
  gate.resolve();
  const rest = await client.closed();
  assert.deepEqual(
    rest.filter((e) => e.type !== "ctx").map((e) =>
      e.type === "token" ? e.delta : e.type === "state" ? e.state : e.type
    ),
    [" second", "done", "idle"],
  );
});

Deno.test("a client that half-closes without asking is closed at once, even during another's reply", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["long"]));
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using asker = await daemon.connect();
  await asker.next("hello");
  await asker.send({ type: "ask", text: "Take your time" });
  await asker.until((e) => e.type === "token");
  await using pinger = await daemon.connect();
  await pinger.send({ type: "ping" });
  await pinger.closeWrite();
  // The held reply never ends by itself: waiting for it would time out.
  const events = await pinger.closed();
  assert.deepEqual(events.map((e) => e.type), ["hello", "pong"]);
  await asker.send({ type: "stop" });
  await asker.until(isIdle);
});

Deno.test("the next request carries stored history with stamps, capped at history_turns", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
    config:
      "history_turns = 2\ncompact = false\nthinking = false\n[request]\ntemperature = 0.2\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");

  llm.enqueue(
    reply({
      think: ["secret reasoning"],
      toolCalls: [{ name: "echo_args", arguments: '{"text":"t1"}' }],
    }),
    reply({ content: ["answer one"] }),
    reply({ content: ["answer two"] }),
    reply({ content: ["answer three"] }),
    reply({ content: ["answer four"] }),
  );
  for (
    const question of [
      "question one",
      "question two",
      "question three",
      "question four",
    ]
  ) {
    await client.send({ type: "ask", text: question });
    await client.until(isIdle);
  }
  const bodies = llm.chats.map((c) =>
    c.body as Record<string, unknown> & { messages: Message[] }
  );
  assert.equal(bodies.length, 5);

  const second = bodies[2]!; // the request of turn two
  assert.deepEqual(second.chat_template_kwargs, { enable_thinking: false });
  assert.equal(second.temperature, 0.2);
  assert.equal(second.stream, true);
  assert.deepEqual(second.stream_options, { include_usage: true });
  const roles = second.messages.map((m) => m.role);
  assert.deepEqual(roles, [
    "system",
    "user",
    "assistant",
    "tool",
    "assistant",
    "user",
  ]);
  assert.match(
    second.messages[0]!.content!,
    /Today is \w+day, \d+ \w+ \d{4}\. You are running as the model tiny\./,
  );
  assert.match(second.messages[3]!.content!, /^\[tool result not kept/);
  assert.doesNotMatch(JSON.stringify(second.messages), /secret reasoning/);
  assert.match(second.messages.at(-1)!.content!, /\] question two$/);

  const fourth = bodies[4]!;
  const users = fourth.messages.filter((m) => m.role === "user").map((m) =>
    m.content!
  );
  assert.equal(users.length, 3, "two earlier turns and the question");
  assert.match(users[0]!, /question two$/);
  assert.match(users[2]!, /question four$/);
});

Deno.test("a reply is saved where it began even when another conversation is opened", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  llm.enqueue(reply({ content: ["first"] }));
  await client.send({ type: "ask", text: "In conversation one" });
  await client.until(isIdle);
  await client.send({ type: "new" });
  await client.next("conversation");

  llm.enqueue(reply({ content: ["slow ", "reply"], tokenDelayMs: 30 }));
  await client.send({ type: "ask", text: "In conversation two" });
  await client.next("user");
  await client.send({ type: "open", id: 1 });
  const events = await client.until((e) => e.type === "done");
  const done = events.at(-1)!;
  assert.equal(done.id, 2);
  assert.ok(events.some((e) => e.type === "conversation" && e.id === 1));

  await client.send({ type: "open", id: 2 });
  const opened = await client.until((e) => e.type === "conversation");
  assert.deepEqual(opened.at(-1), {
    type: "conversation",
    id: 2,
    turns: [{ user: "In conversation two", reply: "slow reply", tools: [] }],
    summary: null,
    memories: 0,
  });
});

Deno.test("deleting the conversation a reply belongs to stops the reply", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  llm.enqueue(reply({ content: ["saved"] }), hold(["never "]));
  await client.send({ type: "ask", text: "First" });
  await client.until(isIdle);
  await client.send({ type: "ask", text: "Second" });
  await client.until((e) => e.type === "token");
  await client.send({ type: "delete", id: 1 });
  const events = await client.until((e) => e.type === "conversations");
  assert.deepEqual(events.slice(0, 3), [
    { type: "done", id: 1, stopped: true },
    { type: "state", state: "idle" },
    { type: "conversation", id: null, turns: [], summary: null, memories: 0 },
  ]);
  assert.deepEqual(events.at(-1), { type: "conversations", items: [] });
  await within(llm.chats[1]!.aborted, "the reply's request to be aborted");
  // The delete answers at once; the store's upkeep removes the rows after.
  const deadline = performance.now() + 5000;
  while (storedTurns(daemon).length > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.deepEqual(storedTurns(daemon), []);
});

Deno.test("think tags inside content go to think, and ctx reports usage and n_ctx", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/m.gguf", nCtx: 8192 }],
  });
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  llm.enqueue(
    reply({
      think: ["pondering"],
      content: ["Yes."],
      thinkInContent: true,
      usage: { prompt: 40 },
    }),
  );
  await client.send({ type: "ask", text: "Well?" });
  const events = await client.until(isIdle);
  assert.equal(
    events.filter((e) => e.type === "think").map((e) => e.delta).join(""),
    "pondering",
  );
  assert.equal(
    events.filter((e) => e.type === "token").map((e) => e.delta).join(""),
    "Yes.",
  );
  const ctx = events.find((e) => e.type === "ctx");
  assert.ok(ctx && ctx.type === "ctx");
  assert.equal(ctx.max, 8192);
  assert.ok(ctx.used > 40, `used ${ctx.used} counts the prompt and the answer`);

  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.equal(hello.model, "/srv/models/m.gguf");
  assert.equal(hello.ctx_max, 8192);
  assert.equal(hello.ctx_used, ctx.used);
  assert.equal(hello.id, 1);
  assert.deepEqual(hello.turns, [{ user: "Well?", reply: "Yes.", tools: [] }]);
});

Deno.test("a literal <think> in an answer is shown and stored whole when the server splits reasoning", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  const answer = [
    "The ",
    "<think>",
    " tag wraps reasoning; ",
    "</think>",
    " ends it.",
  ];
  llm.enqueue(reply({ think: ["A question about tags."], content: answer }));
  await client.send({ type: "ask", text: "What do think tags do?" });
  const events = await client.until(isIdle);
  assert.equal(
    events.filter((e) => e.type === "think").map((e) => e.delta).join(""),
    "A question about tags.",
  );
  assert.equal(
    events.filter((e) => e.type === "token").map((e) => e.delta).join(""),
    answer.join(""),
  );
  assert.deepEqual(storedTurns(daemon).map((row) => row.reply), [
    answer.join(""),
  ]);
});

Deno.test("hello.pending names the reply's conversation: after new during a reply, a late client does not see it as the new one's", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  // A reply in a saved conversation, then `new` while it streams.
  llm.enqueue(reply({ content: ["saved"] }), hold(["more "]));
  await client.send({ type: "ask", text: "First" });
  await client.until(isIdle);
  await client.send({ type: "ask", text: "Second" });
  await client.until((e) => e.type === "token");
  {
    await using early = await daemon.connect();
    const hello = await early.next("hello");
    assert.equal(hello.id, 1);
    assert.deepEqual(hello.pending, {
      id: 1,
      user: "Second",
      reply: "more ",
      think: "",
      tools: [],
    });
  }
  await client.send({ type: "new" });
  await client.next("conversation");
  {
    await using late = await daemon.connect();
    const hello = await late.next("hello");
    assert.equal(hello.id, null);
    assert.deepEqual(hello.turns, []);
    assert.equal(hello.state, "thinking");
    assert.equal(hello.pending?.id, 1, "the reply belongs to conversation 1");
  }
  await client.send({ type: "stop" });
  await client.until(isIdle);

  // A reply that will create its conversation, then `new`: both are
  // unsaved, and the new empty one must not show the other's reply.
  llm.enqueue(hold(["unsaved "]));
  await client.send({ type: "ask", text: "Third" });
  await client.until((e) => e.type === "token");
  {
    await using early = await daemon.connect();
    const hello = await early.next("hello");
    assert.deepEqual(hello.pending, {
      id: null,
      user: "Third",
      reply: "unsaved ",
      think: "",
      tools: [],
    });
  }
  await client.send({ type: "new" });
  await client.next("conversation");
  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.equal(hello.id, null);
  assert.equal(hello.state, "thinking");
  assert.equal(hello.pending, null);
  await client.send({ type: "stop" });
  await client.until(isIdle);
});

Deno.test("done carries what the turn's requests cost, summed over its tool round, as llama-server reported it", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({ toolCalls: [{ name: "echo_args", arguments: '{"text":"x"}' }] }),
    reply({ content: ["It said ", "x."] }),
  );
  await client.send({ type: "ask", text: "Echo x" });
  const done = (await client.until(isIdle)).find((e) => e.type === "done");
  assert.ok(done?.type === "done" && done.timings);
  const timings = done.timings;
  const [first, second] = llm.cacheLog;
  assert.ok(first && second);
  assert.equal(timings.prompt_n, first.promptN + second.promptN);
  assert.equal(timings.cache_n, first.cacheN + second.cacheN);
  // The follow-up request reused the first one's prompt from the cache.
  assert.ok(second.cacheN > 0);
  assert.ok(timings.predicted_n > 0);
  assert.ok(timings.prompt_ms > 0 && timings.predicted_ms >= 0);
  assert.deepEqual(Object.keys(timings).sort(), [
    "cache_n",
    "predicted_ms",
    "predicted_n",
    "prompt_ms",
    "prompt_n",
  ]);
});

Deno.test("a server that reports no timings leaves them out of done and changes nothing else", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue({
    async *steps(context) {
      yield { send: chunk(context, { role: "assistant", content: null }) };
      yield { send: chunk(context, { content: "Plain." }) };
      yield { send: chunk(context, {}, "stop") };
      yield { send: "data: [DONE]\n\n" };
    },
  });
  await client.send({ type: "ask", text: "Hi" });
  const events = await client.until(isIdle);
  assert.deepEqual(events.find((e) => e.type === "done"), {
    type: "done",
    id: 1,
    stopped: false,
  });
});

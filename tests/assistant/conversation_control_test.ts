/**
 * Conversation control end to end: refs on every answer and on a turn,
 * retry and edit, rename and export. The daemon runs as a subprocess with
 * its derived flags against the fake llama-server; clients use the socket.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { within } from "../support/client_harness.ts";
import { LocalDaemon } from "../support/assistant_harness.ts";
import {
  askedQuestion,
  FakeLlm,
  hold,
  httpError,
  reply,
} from "../support/fake_llm.ts";
import {
  isIdle,
  type Received,
  type SocketClient,
  withoutTimings,
} from "../support/socket_client.ts";

const TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname;

function storedTurns(daemon: LocalDaemon): { user: string; reply: string }[] {
  const db = new DatabaseSync(daemon.paths.dbPath, { readOnly: true });
  try {
    return db.prepare("SELECT user, reply FROM turns ORDER BY conv, seq")
      .all().map((row) => ({
        user: String(row.user),
        reply: String(row.reply),
      }));
  } finally {
    db.close();
  }
}

/** Asks and waits for the turn's end; returns its events. */
async function turn(
  client: SocketClient,
  command: Record<string, unknown>,
): Promise<Received[]> {
  await client.send(command);
  return await client.until(isIdle);
}

type Chat = { messages: { role: string; content: string | null }[] };

Deno.test("every answer kind and a turn's user, done and error carry the command's ref", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using a = await daemon.connect();
  await using b = await daemon.connect();
  await a.next("hello");
  await b.next("hello");

  await a.send({ type: "ping", ref: "p" });
  assert.equal((await a.next("pong")).ref, "p");
  await a.send({ type: "list", ref: 1 });
  assert.deepEqual(await a.next("conversations"), {
    type: "conversations",
    items: [],
    ref: 1,
  });

  llm.enqueue(reply({ think: ["Hm."], content: ["Par", "is."] }));
  const events = await turn(a, { type: "ask", text: "Capital?", ref: "q1" });
  assert.deepEqual(events[0], { type: "user", text: "Capital?", ref: "q1" });
  assert.deepEqual(withoutTimings(events.find((e) => e.type === "done")!), {
    type: "done",
    id: 1,
    stopped: false,
    ref: "q1",
  });
  // Events no command caused carry none.
  for (const event of events) {
    if (event.type !== "user" && event.type !== "done") {
      assert.equal("ref" in event, false, JSON.stringify(event));
    }
  }
  // Every client sees the turn's ref: it is opaque, not secret.
  const seen = await b.until(isIdle);
  assert.equal(seen[0]?.ref, "q1");

  await a.send({ type: "search", q: "capi", ref: "s" });
  const results = await a.next("results");
  assert.equal(results.ref, "s");
  assert.equal(results.items.length, 1);

  await a.send({ type: "open", id: 1, ref: "o" });
  const opened = await a.next("conversation");
  assert.equal(opened.ref, "o");
  assert.equal((await b.next("conversation")).ref, "o");

  await a.send({ type: "rename", id: 1, title: "Capitals", ref: "r" });
  assert.deepEqual(await a.next("renamed"), {
    type: "renamed",
    id: 1,
    title: "Capitals",
    ref: "r",
  });
  assert.equal((await b.next("renamed")).ref, "r");

  await a.send({ type: "export", id: 1, ref: "x" });
  const exported = await a.next("export");
  assert.equal(exported.ref, "x");
  assert.equal(exported.format, "markdown");

  await a.send({ type: "new", ref: "n" });
  assert.deepEqual(await a.next("conversation"), {
    type: "conversation",
    id: null,
    turns: [],
    summary: null,
    memories: 0,
    ref: "n",
  });
  await b.next("conversation");

  // Command errors, from validation and from running, carry the ref.
  for (
    const [command, code, message] of [
      [
        { type: "open", id: 99, ref: "e1" },
        "no_such_conversation",
        "no such conversation",
      ],
      [{ type: "ask", text: 5, ref: "e2" }, "bad_text", "bad text"],
      [
        { type: "dance", ref: "e3" },
        "unknown_command",
        "unknown command dance",
      ],
      [{ type: "retry", ref: "e4" }, "nothing_to_retry", "nothing to retry"],
      [
        { type: "rename", id: 1, title: " ", ref: "e5" },
        "bad_title",
        "bad title",
      ],
      [
        { ref: "e6" },
        "bad_command",
        'bad command: a JSON object with a string "type" per line',
      ],
    ] as const
  ) {
    await a.send(command);
    assert.deepEqual(await a.next("error"), {
      type: "error",
      code,
      message,
      ref: command.ref,
    });
  }

  // A turn that fails says so with its ref.
  llm.enqueue(httpError(500, { message: "out of memory" }));
  const failed = await turn(a, { type: "ask", text: "Again?", ref: 7 });
  assert.deepEqual(failed.find((e) => e.type === "error"), {
    type: "error",
    code: "llama_http_error",
    message: "llama-server answered 500: out of memory",
    turn: true,
    ref: 7,
  });
  await b.until(isIdle);
  assert.equal(b.received.filter((e) => e.type === "error").length, 1);
});

Deno.test("a wrong ref is answered bad ref and the command is not run", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  const wrong = [
    "x".repeat(129),
    1.5,
    2 ** 53,
    -(2 ** 53),
    null,
    true,
    {},
    ["r"],
  ];
  for (const ref of wrong) {
    await client.send({ type: "ask", text: "Should not run", ref });
    assert.deepEqual(await client.next(), {
      type: "error",
      code: "bad_ref",
      message: "bad ref",
    }, JSON.stringify(ref));
  }
  // 128 characters is the limit, counted as characters, not UTF-16 units.
  const longest = "😀".repeat(128);
  await client.send({ type: "ping", ref: longest });
  assert.equal((await client.next("pong")).ref, longest);
  await client.send({ type: "ping", ref: 2 ** 53 - 1 });
  assert.equal((await client.next("pong")).ref, 2 ** 53 - 1);
  assert.equal(llm.chats.length, 0);
  assert.equal(client.received.some((e) => e.type === "user"), false);
});

Deno.test("retry and edit replace the last turn in open and in the file once the new reply finishes", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await using watcher = await daemon.connect();
  await client.next("hello");
  await watcher.next("hello");

  llm.enqueue(
    reply({ content: ["One."] }),
    reply({ content: ["A poor answer."] }),
    reply({ content: ["A better ", "answer."] }),
    reply({ content: ["An answer to the edit."] }),
  );
  await turn(client, { type: "ask", text: "First question" });
  await turn(client, { type: "ask", text: "Second question" });

  const retried = await turn(client, { type: "retry", ref: "again" });
  assert.deepEqual(retried[0], {
    type: "user",
    text: "Second question",
    replaces: true,
    ref: "again",
  });
  assert.deepEqual(withoutTimings(retried.find((e) => e.type === "done")!), {
    type: "done",
    id: 1,
    stopped: false,
    replaces: true,
    ref: "again",
  });
  // The model is asked as if the replaced turn had not been.
  const sent = (llm.chats[2]!.body as Chat).messages;
  assert.deepEqual(
    sent.map((m) => m.role),
    ["system", "user", "assistant", "user"],
  );
  assert.equal(askedQuestion(llm.chats[2]!.body), "Second question");
  assert.deepEqual(storedTurns(daemon), [
    { user: "First question", reply: "One." },
    { user: "Second question", reply: "A better answer." },
  ]);

  const edited = await turn(client, {
    type: "edit",
    text: "Second question, put better",
  });
  assert.deepEqual(edited[0], {
    type: "user",
    text: "Second question, put better",
    replaces: true,
  });
  assert.equal(
    askedQuestion(llm.chats[3]!.body),
    "Second question, put better",
  );
  assert.equal((llm.chats[3]!.body as Chat).messages.length, 4);

  const expected = [
    { user: "First question", reply: "One.", tools: [] },
    {
      user: "Second question, put better",
      reply: "An answer to the edit.",
      tools: [],
    },
  ];
  assert.deepEqual(
    storedTurns(daemon),
    expected.map(({ user, reply }) => ({
      user,
      reply,
    })),
  );
  await client.send({ type: "open", id: 1 });
  assert.deepEqual((await client.next("conversation")).turns, expected);
  // A client that connects now sees the replaced history too.
  await using late = await daemon.connect();
  assert.deepEqual((await late.next("hello")).turns, expected);
  // Search follows: the replaced reply is gone from the index.
  await client.send({ type: "search", q: "poor" });
  assert.deepEqual((await client.next("results")).items, []);
});

Deno.test("a stopped or failed retry leaves the stored last turn as it was", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(reply({ content: ["The original answer."] }));
  await turn(client, { type: "ask", text: "Keep this?" });

  llm.enqueue(hold(["A new ", "try"]));
  await client.send({ type: "retry", ref: "r1" });
  await client.until((e) => e.type === "token" && e.delta === "try");
  // A client joining mid-retry knows the turn in flight replaces the last.
  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.deepEqual(hello.pending, {
    id: 1,
    user: "Keep this?",
    reply: "A new try",
    think: "",
    tools: [],
    replaces: true,
  });
  assert.equal(hello.turns.length, 1);
  await client.send({ type: "stop" });
  const stopped = await client.until(isIdle);
  assert.deepEqual(stopped, [
    { type: "done", id: 1, stopped: true, ref: "r1" },
    { type: "state", state: "idle" },
  ]);

  llm.enqueue(httpError(500, { message: "no slot" }));
  const failed = await turn(client, { type: "edit", text: "Or this?" });
  assert.equal(failed.find((e) => e.type === "error")?.turn, true);

  const original = [{ user: "Keep this?", reply: "The original answer." }];
  assert.deepEqual(storedTurns(daemon), original);
  await client.send({ type: "open", id: 1 });
  assert.deepEqual((await client.next("conversation")).turns, [
    { ...original[0], tools: [] },
  ]);
  // And the next retry still replaces that same turn.
  llm.enqueue(reply({ content: ["Third time."] }));
  await turn(client, { type: "retry" });
  assert.deepEqual(storedTurns(daemon), [
    { user: "Keep this?", reply: "Third time." },
  ]);
});

Deno.test("retry needs a last turn; during a reply it stops that reply first", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  for (const command of [{ type: "retry" }, { type: "edit", text: "x" }]) {
    await client.send(command);
    assert.deepEqual(await client.next(), {
      type: "error",
      code: "nothing_to_retry",
      message: "nothing to retry",
    });
  }
  // The first reply of a new conversation has no stored turn to retry: it
  // goes on untouched.
  llm.enqueue(hold(["Streaming"]));
  await client.send({ type: "ask", text: "Only question" });
  await client.until((e) => e.type === "token");
  await client.send({ type: "retry" });
  assert.deepEqual(await client.next(), {
    type: "error",
    code: "nothing_to_retry",
    message: "nothing to retry",
  });
  assert.equal(llm.chats[0]!.abortedAt, null);
  await client.send({ type: "stop" });
  await client.until(isIdle);

  llm.enqueue(
    reply({ content: ["Saved."] }),
    hold(["Half"]),
    reply({ content: ["Replaced."] }),
  );
  await turn(client, { type: "ask", text: "Stored question" });
  await client.send({ type: "ask", text: "In flight", ref: "flight" });
  await client.until((e) => e.type === "token" && e.delta === "Half");
  const held = llm.chats.at(-1)!;
  await client.send({ type: "retry", ref: "again" });
  const events = await client.until((e) => e.type === "done" && !e.stopped);
  assert.deepEqual(events.slice(0, 3), [
    { type: "done", id: 1, stopped: true, ref: "flight" },
    { type: "state", state: "idle" },
    { type: "user", text: "Stored question", replaces: true, ref: "again" },
  ]);
  await within(held.aborted, "the reply in flight to be aborted");
  assert.deepEqual(storedTurns(daemon), [
    { user: "Stored question", reply: "Replaced." },
  ]);
});

Deno.test("rename reaches every client and the list; a bad title is refused", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using a = await daemon.connect();
  await using b = await daemon.connect();
  await a.next("hello");
  await b.next("hello");
  llm.enqueue(reply({ content: ["Fine."] }), reply({ content: ["Also."] }));
  await turn(a, { type: "ask", text: "How are you today my friend" });
  await a.send({ type: "new" });
  await a.next("conversation");
  await turn(a, { type: "ask", text: "Another one" });
  await b.until((e) => e.type === "done" && e.id === 2);
  await b.until(isIdle);

  await a.send({ type: "rename", id: 1, title: "  Small\n talk  " });
  const renamed = { type: "renamed", id: 1, title: "Small talk" };
  assert.deepEqual(await a.next("renamed"), renamed);
  assert.deepEqual(await b.next("renamed"), renamed);
  await b.send({ type: "list" });
  const items = (await b.next("conversations")).items;
  assert.deepEqual(items.map((i) => [i.id, i.title]), [
    [2, "Another one"],
    [1, "Small talk"],
  ]);

  const longest = "é".repeat(200);
  await a.send({ type: "rename", id: 2, title: longest });
  assert.equal((await a.next("renamed")).title, longest);
  for (const title of ["", "   ", "é".repeat(201), 5, undefined]) {
    await a.send({ type: "rename", id: 1, title });
    assert.deepEqual(await a.next(), {
      type: "error",
      code: "bad_title",
      message: "bad title",
    });
  }
  await a.send({ type: "rename", id: 9, title: "Nobody" });
  assert.deepEqual(await a.next(), {
    type: "error",
    code: "no_such_conversation",
    message: "no such conversation",
  });
  await a.send({ type: "list" });
  assert.deepEqual(
    (await a.next("conversations")).items.map((i) => i.title),
    [longest, "Small talk"],
  );
  // Only the two good renames went to the other client.
  await b.send({ type: "ping" });
  await b.until((e) => e.type === "pong");
  assert.equal(b.received.filter((e) => e.type === "renamed").length, 2);
});

Deno.test("export writes a conversation with tool use as JSON that parses back and as Markdown with every turn", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({
      toolCalls: [{ name: "echo_args", arguments: '{"text":"hi"}' }],
    }),
    reply({ content: ["The tool said **hi**."] }),
    reply({ content: ["Line one.\n\nLine two."] }),
  );
  const before = Math.floor(Date.now() / 1000);
  await turn(client, { type: "ask", text: "Run the echo tool" });
  await turn(client, { type: "ask", text: "And now?\nTwo lines." });
  const after = Math.ceil(Date.now() / 1000);

  await client.send({ type: "export", id: 1, format: "json" });
  const json = await client.next("export");
  assert.equal(json.format, "json");
  assert.equal(json.id, 1);
  const document = JSON.parse(json.text);
  assert.equal(document.format, "desktop-assistant/1");
  assert.equal(document.id, 1);
  assert.equal(document.title, "Run the echo tool");
  assert.ok(document.created >= before && document.created <= after);
  assert.ok(document.updated >= document.created && document.updated <= after);
  assert.deepEqual(
    document.turns.map((t: Record<string, unknown>) => [
      t.user,
      t.reply,
      t.tools,
    ]),
    [
      ["Run the echo tool", "The tool said **hi**.", ["echo_args"]],
      ["And now?\nTwo lines.", "Line one.\n\nLine two.", []],
    ],
  );
  for (const t of document.turns) {
    assert.ok(t.at >= before && t.at <= after, `at ${t.at}`);
    assert.deepEqual(Object.keys(t), ["user", "reply", "tools", "at"]);
  }

  await client.send({ type: "export", id: 1 });
  const markdown = await client.next("export");
  assert.equal(markdown.format, "markdown");
  const text = markdown.text;
  assert.match(text, /^# Run the echo tool\n/);
  for (
    const part of [
      "> Run the echo tool",
      "The tool said **hi**.",
      "echo_args",
      "> And now?\n> Two lines.",
      "Line one.\n\nLine two.",
    ]
  ) {
    assert.ok(text.includes(part), `${JSON.stringify(part)} in\n${text}`);
  }

  await client.send({ type: "export", id: 1, format: "pdf" });
  assert.deepEqual(await client.next(), {
    type: "error",
    code: "bad_format",
    message: "bad format",
  });
  await client.send({ type: "export", id: 5 });
  assert.deepEqual(await client.next(), {
    type: "error",
    code: "no_such_conversation",
    message: "no such conversation",
  });
});

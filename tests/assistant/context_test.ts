/**
 * The context budget end to end: the daemon as a subprocess, the fake
 * llama-server holding a small context the way the real one does (its 400
 * `exceed_context_size_error`, `finish_reason: "length"` at the context end,
 * `usage` counts), clients on the real socket.
 */
import { SINCE_7 } from "../store/fixtures.ts";
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { daemonEnv } from "../support/daemon_harness.ts";
import {
  FakeLlm,
  type RecordedRequest,
  reply,
  type Script,
} from "../support/fake_llm.ts";
import {
  isIdle,
  type Received,
  withoutTimings,
} from "../support/socket_client.ts";
import type { SocketClient } from "../support/socket_client.ts";
import { resolvePaths } from "../../src/base/paths.ts";
import { SCHEMA_VERSION } from "../../src/store/schema.ts";
import { Store } from "../../src/store/store.ts";

const TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname;
const MODEL = "/srv/models/tiny.gguf";

type Message = { role: string; content: string | null };

/** A reply of `n` tokens, one fake token each. */
function long(n: number, word = "story"): Script {
  return reply({ content: Array.from({ length: n }, () => ` ${word}`) });
}

/** A tools dir holding copies of some fixture tools; removed on dispose. */
async function toolsDir(
  ...names: string[]
): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "da-tools-" });
  for (const name of names) {
    for (const ext of ["toml", "sh"]) {
      await Deno.copyFile(`${TOOLS}${name}.${ext}`, `${path}/${name}.${ext}`);
    }
  }
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

async function ask(client: SocketClient, text: string): Promise<Received[]> {
  await client.send({ type: "ask", text });
  return await client.until(isIdle);
}

function messagesOf(request: RecordedRequest): Message[] {
  return (request.body as { messages: Message[] }).messages;
}

/** The questions (as typed) of the history a chat request carried, oldest first. */
function historyOf(request: RecordedRequest): string[] {
  const messages = messagesOf(request);
  const question = messages.findLastIndex((m) => m.role === "user");
  return messages.slice(1, question).filter((m) => m.role === "user")
    .map((m) => (m.content ?? "").replace(/^\[[^\]]*\] /, ""));
}

function storedRows(
  daemon: LocalDaemon,
): { user: string; reply: string; tokens: number | null }[] {
  const db = new DatabaseSync(daemon.paths.dbPath, { readOnly: true });
  try {
    return db.prepare("SELECT user, reply, tokens FROM turns ORDER BY id")
      .all() as { user: string; reply: string; tokens: number | null }[];
  } finally {
    db.close();
  }
}

Deno.test("twenty long replies in a small context: every ask is done, the history shrinks to fit, no request passes the budget", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: MODEL, nCtx: 2048 }],
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "reply_reserve = 512\nhistory_turns = 20\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const budget = 2048 - 512;

  const ctx: Received[] = [];
  for (let i = 0; i < 20; i++) {
    llm.enqueue(long(150));
    const events = await ask(client, `Question ${i}: tell me a long story`);
    assert.ok(
      events.some((e) => e.type === "done" && e.stopped === false),
      `ask ${i}: ${JSON.stringify(events.filter((e) => e.type !== "token"))}`,
    );
    assert.ok(!events.some((e) => e.type === "error"), `ask ${i} failed`);
    assert.ok(!events.some((e) => e.type === "done" && e.truncated));
    ctx.push(events.find((e) => e.type === "ctx")!);
  }

  // One request per ask: none was refused and sent again.
  assert.equal(llm.chats.length, 20);
  for (const [i, request] of llm.chats.entries()) {
    assert.ok(
      request.promptTokens! <= budget,
      `request ${i}: ${request.promptTokens} tokens, budget ${budget}`,
    );
    // The newest turns, in order, right before the question.
    const sent = historyOf(request);
    assert.deepEqual(
      sent,
      Array.from(
        { length: sent.length },
        (_, k) => `Question ${i - sent.length + k}: tell me a long story`,
      ),
    );
  }
  const sent = llm.chats.map((request) => historyOf(request).length);
  // While it fits, everything goes; then the share sent shrinks.
  assert.deepEqual(sent.slice(0, 3), [0, 1, 2]);
  assert.ok(sent.at(-1)! < 19, `the last request sent ${sent.at(-1)} turns`);
  assert.ok(sent.at(-1)! >= 3, `the last request sent ${sent.at(-1)} turns`);
  for (const [i, event] of ctx.entries()) {
    assert.equal(event.sent, sent[i]);
    assert.equal(event.total, i);
    assert.equal(event.max, 2048);
  }
  // Every turn is kept, with its size as llama-server counted it once the
  // turn was done.
  await daemon.waitForLog(/debug turn counted /, 20);
  const rows = storedRows(daemon);
  assert.equal(rows.length, 20);
  assert.ok(rows.every((row) => typeof row.tokens === "number"));
  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.equal(hello.turns.length, 20);
  assert.equal(hello.ctx_sent, sent.at(-1));
  assert.equal(hello.ctx_total, 19);
});

Deno.test("a count that undershoots: the 400 is recovered by sending fewer turns at once, and the turn is saved once", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: MODEL, nCtx: 2048 }],
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "reply_reserve = 512\nhistory_turns = 20\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  for (let i = 0; i < 10; i++) {
    llm.enqueue(long(150));
    await ask(client, `Question ${i}: tell me a long story`);
  }
  const before = llm.chats.length;

  // The server now counts twice what /tokenize says its messages take.
  llm.scalePrompts(2);
  llm.enqueue(reply({ content: ["Short", " answer."] }));
  const events = await ask(client, "One more question");
  assert.deepEqual(
    events.filter((e) => e.type !== "token").map((e) => e.type),
    ["user", "state", "done", "ctx", "state"],
  );
  assert.equal(
    events.filter((e) => e.type === "token").map((e) => e.delta).join(""),
    "Short answer.",
  );

  const [refused, resent, ...more] = llm.chats.slice(before);
  assert.deepEqual(more, []);
  assert.ok(refused!.promptTokens! > 2048, `${refused!.promptTokens}`);
  assert.ok(resent!.promptTokens! <= 2048 - 512, `${resent!.promptTokens}`);
  assert.ok(historyOf(resent!).length < historyOf(refused!).length);
  assert.equal(historyOf(refused!).at(-1), "Question 9: tell me a long story");
  const rows = storedRows(daemon);
  assert.equal(rows.length, 11);
  assert.equal(
    rows.filter((row) => row.user === "One more question").length,
    1,
  );
  assert.equal(rows.at(-1)!.reply, "Short answer.");
  assert.match(daemon.log, /request over the context, sent again with less/);
  assert.doesNotMatch(
    daemon.log,
    /One more question|Short answer|tell me a long story/,
    "no personal text in the log",
  );
});

Deno.test("a question longer than the context: the error names both sizes, the conversation is unchanged, the next ask works", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: MODEL, nCtx: 2048 }],
  });
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(reply({ content: ["First", " answer."] }));
  await ask(client, "A first question");

  const question = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(
    " ",
  );
  const events = await ask(client, question);
  const refused = llm.chats.at(-1)!;
  assert.ok(refused.promptTokens! > 2048);
  assert.deepEqual(events.filter((e) => e.type === "error"), [{
    type: "error",
    code: "question_too_long",
    message:
      `the question is too long for the model's context (${refused.promptTokens} tokens, the context holds 2048)`,
    turn: true,
  }]);
  assert.ok(!events.some((e) => e.type === "token" || e.type === "done"));
  assert.equal(storedRows(daemon).length, 1);

  llm.enqueue(reply({ content: ["Still", " here."] }));
  const next = await ask(client, "And now a short one");
  assert.ok(next.some((e) => e.type === "done" && e.stopped === false));
  // The failed question left nothing behind in the history sent.
  assert.deepEqual(historyOf(llm.chats.at(-1)!), ["A first question"]);
  await client.send({ type: "open", id: 1 });
  const opened = await client.next("conversation");
  assert.deepEqual(opened.turns.map((t) => t.user), [
    "A first question",
    "And now a short one",
  ]);
});

Deno.test("a tool result larger than the context: history goes first, then the result is cut with a note the model reads", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: MODEL, nCtx: 2048 }],
  });
  // The one tool alone, so its schema leaves room for history.
  await using tools = await toolsDir("big_output");
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [tools.path],
    config: "reply_reserve = 512\ntool_output_limit = 65536\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  for (let i = 0; i < 2; i++) {
    llm.enqueue(long(40));
    await ask(client, `Warm-up question ${i}`);
  }
  llm.enqueue(
    reply({
      toolCalls: [{
        name: "big_output",
        arguments: JSON.stringify({ bytes: 20000, line: "abc def" }),
      }],
    }),
    reply({ content: ["It", " was", " long."] }),
  );
  const events = await ask(client, "Run the big tool");
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
  assert.ok(!events.some((e) => e.type === "error"));

  const [call, followUp, ...more] = llm.chats.slice(2);
  assert.deepEqual(more, []);
  assert.deepEqual(historyOf(call!), [
    "Warm-up question 0",
    "Warm-up question 1",
  ]);
  // The follow-up left the history out and still had to cut the result.
  assert.deepEqual(historyOf(followUp!), []);
  const result = messagesOf(followUp!).at(-1)!;
  assert.equal(result.role, "tool");
  assert.match(result.content!, /^(abc def\n)+/);
  assert.match(
    result.content!,
    /\n\n\[The rest of this tool result was cut: it was about \d+ tokens, more than the model's context had room for, and only its first \d+ are shown above\.\]$/,
  );
  assert.ok(result.content!.length < 20000);
  assert.ok(
    followUp!.promptTokens! <= 2048 - 512,
    `${followUp!.promptTokens} tokens`,
  );
  const ctx = events.find((e) => e.type === "ctx")!;
  assert.equal(ctx.sent, 0);
  assert.equal(ctx.total, 2);
  // What is kept is the placeholder, as for any tool result.
  const rows = storedRows(daemon);
  assert.equal(rows.at(-1)!.reply, "It was long.");
});

Deno.test("a reply cut by the context end or by max_tokens is saved as shown and its done says truncated", async (t) => {
  await t.step("the context end", async () => {
    await using llm = await FakeLlm.start({
      models: [{ id: MODEL, nCtx: 1024 }],
    });
    await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
    await using client = await daemon.connect();
    await client.next("hello");
    llm.enqueue(long(5000));
    const events = await ask(client, "Tell me everything");
    const done = events.find((e) => e.type === "done")!;
    assert.deepEqual(withoutTimings(done), {
      type: "done",
      id: 1,
      stopped: false,
      truncated: true,
      truncated_by: "context",
    });
    const ctx = events.find((e) => e.type === "ctx")!;
    assert.equal(ctx.used, 1024);
    const shown = events.filter((e) => e.type === "token").map((e) => e.delta)
      .join("");
    assert.equal(storedRows(daemon)[0]!.reply, shown);
    assert.equal(shown, " story".repeat(1024 - llm.chats[0]!.promptTokens!));
  });
  await t.step("max_tokens", async () => {
    await using llm = await FakeLlm.start();
    await using daemon = await LocalDaemon.start({
      llmUrl: llm.url,
      config: "[request]\nmax_tokens = 8\n",
    });
    await using client = await daemon.connect();
    await client.next("hello");
    llm.enqueue(long(30), reply({ content: ["Whole."] }));
    const events = await ask(client, "Tell me a bit");
    assert.deepEqual(withoutTimings(events.find((e) => e.type === "done")!), {
      type: "done",
      id: 1,
      stopped: false,
      truncated: true,
      truncated_by: "max_tokens",
    });
    assert.equal(storedRows(daemon)[0]!.reply, " story".repeat(8));
    const next = await ask(client, "Again");
    assert.deepEqual(withoutTimings(next.find((e) => e.type === "done")!), {
      type: "done",
      id: 1,
      stopped: false,
    });
  });
});

Deno.test("a conversation stored before token counts were kept opens and answers", async () => {
  const home = await Deno.makeTempDir({ prefix: "da-test-" });
  try {
    const env = daemonEnv(home);
    const paths = resolvePaths((name) => env[name]);
    let id: number;
    {
      using store = new Store(paths.dbPath);
      id = store.saveTurn(null, {
        user: "What is a fjord?",
        reply: "A long, narrow inlet of the sea between high cliffs.",
        tools: [],
        messages: [
          {
            role: "user",
            content: "[2026-01-05 10:00 UTC+00:00] What is a fjord?",
          },
          {
            role: "assistant",
            content: "A long, narrow inlet of the sea between high cliffs.",
          },
        ],
      });
    }
    const raw = new DatabaseSync(paths.dbPath);
    raw.exec(`DROP TABLE summaries; ALTER TABLE turns DROP COLUMN tokens;
              ${SINCE_7}
              PRAGMA user_version = 5;`);
    raw.close();

    await using llm = await FakeLlm.start();
    await using daemon = await LocalDaemon.start({ llmUrl: llm.url, home });
    await using client = await daemon.connect();
    await client.next("hello");
    await client.send({ type: "open", id });
    const opened = await client.next("conversation");
    assert.deepEqual(opened.turns.map((t) => t.user), ["What is a fjord?"]);
    llm.enqueue(reply({ content: ["In", " Norway", "."] }));
    const events = await ask(client, "Where are they?");
    assert.ok(events.some((e) => e.type === "done" && e.id === id));
    assert.deepEqual(historyOf(llm.chats[0]!), ["What is a fjord?"]);
    const ctx = events.find((e) => e.type === "ctx")!;
    assert.equal(ctx.sent, 1);
    assert.equal(ctx.total, 1);

    await daemon.waitForLog(/debug turn counted /);
    const rows = storedRows(daemon);
    assert.equal(rows[0]!.tokens, null);
    assert.ok(typeof rows[1]!.tokens === "number" && rows[1]!.tokens > 0);
    const db = new DatabaseSync(paths.dbPath, { readOnly: true });
    try {
      assert.equal(
        db.prepare("PRAGMA user_version").get()?.user_version,
        SCHEMA_VERSION,
      );
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

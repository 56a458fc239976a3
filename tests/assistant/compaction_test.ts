/**
 * `compact`: the turns that leave the history window are folded into a
 * running summary by one side request, which begins as the turn's own
 * request did; the summary rides in a question, once, and is stored, shown
 * and exported with its conversation.
 */
import assert from "node:assert/strict";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { within } from "../support/client_harness.ts";
import {
  askedQuestion,
  FakeLlm,
  gated,
  hold,
  reply,
  type Script,
  stall,
  streamError,
} from "../support/fake_llm.ts";
import {
  isIdle,
  type Received,
  type SocketClient,
} from "../support/socket_client.ts";

type Message = { role: string; content: string | null };
type Body = {
  messages: Message[];
  max_tokens?: number;
  chat_template_kwargs?: { enable_thinking?: boolean };
  tools?: unknown[];
};

const INTRO = "Summary of the earlier conversation:";

/** Whether a chat request asks for the summary. */
function isSummaryRequest(body: unknown): boolean {
  const last = (body as Body).messages.at(-1)?.content ?? "";
  return last.startsWith("Summarise this conversation");
}

/**
 * Answers questions with "Answer N." and summary requests with the next of
 * `summaries` (a default one when they run out).
 */
function routed(summaries: Script[] = []): Script {
  let answers = 0;
  return {
    steps(context) {
      const script = isSummaryRequest(context.body)
        ? summaries.shift() ?? reply({ content: ["The user asked things."] })
        : reply({ content: [`Answer ${++answers}.`] });
      if (!("steps" in script)) throw new TypeError("a script with steps");
      return script.steps(context);
    },
  };
}

/** The next event of a type, whatever comes before it. */
async function nextOf<T extends Received["type"]>(
  client: SocketClient,
  type: T,
): Promise<Extract<Received, { type: T }>> {
  const events = await client.until((e) => e.type === type);
  return events.at(-1) as Extract<Received, { type: T }>;
}

async function ask(client: SocketClient, text: string) {
  await client.send({ type: "ask", text });
  return await client.until(isIdle);
}

/** Asks `count` questions, each after the daemon has settled (a summary due included), as a person who reads the reply first. */
async function converse(
  daemon: LocalDaemon,
  client: SocketClient,
  count: number,
  from = 1,
): Promise<void> {
  for (let n = from; n < from + count; n++) {
    await ask(client, `Question ${n}`);
    await daemon.assistant.settled();
  }
}

const CONFIG = "history_turns = 4\ncompact = true\nsummary_tokens = 60\n";

Deno.test("when the window moves, one side request that begins as the turn's own did makes the summary, and the next question carries it once", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([
      reply({ content: ["The user asked ", "questions 1 to 3."] }),
    ]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await using other = await daemon.connect();
  await client.next("hello");
  await other.next("hello");

  await converse(daemon, client, 5);
  const chats = llm.chats.map((c) => c.body as Body);
  const summaries = chats.filter(isSummaryRequest);
  assert.equal(summaries.length, 1, "one request for the move");
  const summaryBody = summaries[0]!;
  const turnBody = chats[chats.indexOf(summaryBody) - 1]!;
  // It begins exactly as the turn's last request, then that turn's reply.
  assert.deepEqual(
    summaryBody.messages.slice(0, turnBody.messages.length),
    turnBody.messages,
  );
  assert.deepEqual(summaryBody.messages[turnBody.messages.length], {
    role: "assistant",
    content: "Answer 5.",
  });
  assert.match(
    summaryBody.messages.at(-1)!.content!,
    /up to, but not including, its last 2 exchanges/,
  );
  assert.equal(summaryBody.chat_template_kwargs?.enable_thinking, false);
  assert.equal(summaryBody.max_tokens, 60);
  // The side request reused the turn's cache: only its end was read.
  const summaryCache = llm.chats.find((c) => isSummaryRequest(c.body))!.cache!;
  assert.ok(summaryCache.cacheN > summaryCache.promptN);

  const event = {
    type: "summary",
    id: 1,
    text: "The user asked questions 1 to 3.",
    turns: 3,
  };
  assert.deepEqual(await nextOf(client, "summary"), event);
  assert.deepEqual(await nextOf(other, "summary"), event);
  // Its size is what the server reported generating (the fake: a token a piece).
  assert.deepEqual(daemon.store.summary(1), {
    text: "The user asked questions 1 to 3.",
    turns: 3,
    tokens: 2,
  });

  // The next question carries it; the window holds the turns it does not cover.
  const events = await ask(client, "Question 6");
  const sixth = llm.chats.at(-1)!.body as Body;
  assert.equal(askedQuestion(sixth), "Question 6");
  const systems = sixth.messages.filter((m) => m.role === "system");
  assert.equal(systems.length, 1);
  assert.equal(sixth.messages[0], systems[0]);
  assert.equal(sixth.messages[0]!.content, turnBody.messages[0]!.content);
  const users = sixth.messages.filter((m) => m.role === "user").map((m) =>
    m.content!
  );
  assert.deepEqual(users.map((u) => u.replace(/^[\s\S]*\] /, "")), [
    "Question 4",
    "Question 5",
    "Question 6",
  ]);
  assert.ok(users.at(-1)!.startsWith(`${INTRO}\nThe user asked`));
  assert.equal(JSON.stringify(sixth.messages).split(INTRO).length, 2);
  const ctx = events.find((e) => e.type === "ctx")!;
  assert.equal(ctx.summarized, 3);

  // Later requests carry it in the same place, still once.
  await ask(client, "Question 7");
  const seventh = llm.chats.at(-1)!.body as Body;
  assert.equal(JSON.stringify(seventh.messages).split(INTRO).length, 2);
  assert.deepEqual(
    seventh.messages.slice(0, sixth.messages.length),
    [...sixth.messages.slice(0, -1), sixth.messages.at(-1)],
  );
  assert.ok(!seventh.messages.at(-1)!.content!.includes(INTRO));
});

Deno.test("the summarised turns stay stored, shown, searchable and exported, and the summary comes with the conversation", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([reply({ content: ["Questions 1 to 3: walrus."] })]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(daemon, client, 5);
  await client.send({ type: "open", id: 1 });
  const opened = await nextOf(client, "conversation");
  assert.equal(opened.turns.length, 5);
  assert.deepEqual(opened.summary, {
    text: "Questions 1 to 3: walrus.",
    turns: 3,
  });
  await using late = await daemon.connect();
  const hello = await late.next("hello");
  assert.deepEqual(hello.summary, opened.summary);
  await client.send({ type: "search", q: "Question 1" });
  assert.equal((await client.next("results")).items[0]?.id, 1);
  await client.send({ type: "export", id: 1, format: "json" });
  const json = JSON.parse((await client.next("export")).text);
  assert.deepEqual(json.summary, opened.summary);
  assert.equal(json.turns.length, 5);
  await client.send({ type: "export", id: 1 });
  const markdown = (await client.next("export")).text;
  assert.match(markdown, /Questions 1 to 3: walrus\./);
  assert.match(markdown, /Question 1\b/);
  // Deleted with its conversation.
  await client.send({ type: "delete", id: 1 });
  await nextOf(client, "conversations");
  assert.equal(daemon.store.summary(1), null);
});

Deno.test("a summary request that fails, or is cut by its token limit, stores nothing and is asked again only at the next move", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([
      streamError("Internal server error"),
      // Longer than summary_tokens: cut by the limit.
      reply({ content: Array.from({ length: 80 }, () => " word") }),
      reply({ content: ["Made at last."] }),
    ]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const summaryCount = () =>
    llm.chats.filter((c) => isSummaryRequest(c.body)).length;

  await converse(daemon, client, 5);
  assert.equal(summaryCount(), 1);
  assert.equal(daemon.store.summary(1), null);
  // The move goes ahead without it, and is not asked again for that move.
  await converse(daemon, client, 2, 6);
  assert.equal(summaryCount(), 1);
  const sixth = llm.chats.filter((c) => !isSummaryRequest(c.body))[5]!;
  assert.ok(!JSON.stringify(sixth.body).includes(INTRO));
  // The next move asks again: cut by its limit, nothing stored.
  await converse(daemon, client, 2, 8);
  assert.equal(summaryCount(), 2);
  assert.equal(daemon.store.summary(1), null);
  assert.equal(client.received.some((e) => e.type === "summary"), false);
  // And again at the move after: made.
  await converse(daemon, client, 2, 10);
  assert.equal(summaryCount(), 3);
  assert.equal(daemon.store.summary(1)?.text, "Made at last.");
  assert.ok(daemon.log.includes("summary request failed"));
});

Deno.test("no reasoning ever enters a summary: thinking is off and a think block the model writes anyway is dropped", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([
      reply({
        content: ["<think>", "secret plan", "</think>", "Plain summary."],
      }),
    ]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(daemon, client, 5);
  assert.equal(daemon.store.summary(1)?.text, "Plain summary.");
  assert.ok(!daemon.log.includes("secret plan"));
});

Deno.test("a question asked while a summary request runs starts at once; the summary gives way and is made after the reply", async () => {
  const summaryHeld = Promise.withResolvers<void>();
  await using llm = await FakeLlm.start({
    defaultScript: routed([
      {
        steps(context) {
          summaryHeld.resolve();
          const held = hold();
          if (!("steps" in held)) throw new TypeError("a script with steps");
          return held.steps(context);
        },
      },
      reply({ content: ["After the reply."] }),
    ]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(daemon, client, 4);
  await ask(client, "Question 5");
  await within(summaryHeld.promise, "the summary request to start");
  const held = llm.chats.at(-1)!;
  assert.ok(isSummaryRequest(held.body));
  // Still streaming when the question comes: nothing ended it yet.
  const unsettled = Symbol("unsettled");
  assert.equal(await Promise.race([held.done, unsettled]), unsettled);
  // The question goes out without waiting, and the held request is given up.
  const events = await ask(client, "Question 6");
  assert.ok(events.some((e) => e.type === "done"));
  assert.equal(
    await within(held.done, "the summary request to end"),
    "aborted",
  );
  // The window kept the turns the summary would have covered.
  const sixth = llm.chats.filter((c) => !isSummaryRequest(c.body)).at(-1)!;
  assert.equal(askedQuestion(sixth.body), "Question 6");
  const users = (sixth.body as Body).messages.filter((m) => m.role === "user");
  assert.equal(users.length, 6);
  await daemon.assistant.settled();
  assert.equal(daemon.store.summary(1)?.text, "After the reply.");
  // Asked again from the sixth turn's request, which held every turn.
  const again = llm.chats.filter((c) => isSummaryRequest(c.body)).at(-1)!;
  const body = again.body as Body;
  assert.deepEqual(
    body.messages.slice(0, (sixth.body as Body).messages.length),
    (sixth.body as Body).messages,
  );
});

Deno.test("retry and edit of the last turn leave the summary as it was", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([reply({ content: ["Kept summary."] })]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(daemon, client, 6);
  const before = daemon.store.summary(1);
  assert.equal(before?.text, "Kept summary.");
  await client.send({ type: "retry" });
  await client.until(isIdle);
  await client.send({ type: "edit", text: "Question six, edited" });
  await client.until(isIdle);
  await daemon.assistant.settled();
  assert.deepEqual(daemon.store.summary(1), before);
  const edited = llm.chats.filter((c) => !isSummaryRequest(c.body)).at(-1)!;
  assert.equal(
    JSON.stringify((edited.body as Body).messages).split(INTRO).length,
    2,
  );
});

Deno.test("a private conversation's summary stays in memory: sent to clients with a null id, never written", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([reply({ content: ["Private summary."] })]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await client.send({ type: "new", private: true });
  await client.next("conversation");
  await converse(daemon, client, 5);
  assert.deepEqual(await nextOf(client, "summary"), {
    type: "summary",
    id: null,
    text: "Private summary.",
    turns: 3,
  });
  await ask(client, "Question 6");
  const sixth = llm.chats.at(-1)!.body as Body;
  assert.ok(JSON.stringify(sixth.messages).includes("Private summary."));
  // Nowhere in the history files: the database, its log and its index.
  for (const suffix of ["", "-wal", "-shm"]) {
    let bytes = new Uint8Array();
    try {
      bytes = await Deno.readFile(daemon.paths.dbPath + suffix);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    const text = new TextDecoder().decode(bytes);
    assert.ok(!text.includes("Private summary"), `in history.db${suffix}`);
  }
});

Deno.test("compact = false makes no summary request: the oldest turns just leave", async () => {
  await using llm = await FakeLlm.start({ defaultScript: routed() });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "history_turns = 4\ncompact = false\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(daemon, client, 7);
  assert.equal(llm.chats.filter((c) => isSummaryRequest(c.body)).length, 0);
  const last = llm.chats.at(-1)!.body as Body;
  assert.equal(last.messages.filter((m) => m.role === "user").length, 5);
});

Deno.test("a summary request that stalls stores nothing, and the conversation goes on", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([stall(), reply({ content: ["Made next time."] })]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: `${CONFIG}stall_timeout = 0.3\n`,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(daemon, client, 5);
  assert.equal(daemon.store.summary(1), null);
  assert.match(daemon.log, /summary request failed .*llama-server stalled/);
  // The turns go on, and the next move makes the summary.
  await converse(daemon, client, 3, 6);
  assert.equal(daemon.store.summary(1)?.text, "Made next time.");
  assert.equal(client.received.filter((e) => e.type === "error").length, 0);
});

/** Answers questions with `pieces` words, summary requests with the next of `summaries`. */
function longAnswers(pieces: number, summaries: Script[]): Script {
  return {
    steps(context) {
      const script = isSummaryRequest(context.body)
        ? summaries.shift() ?? reply({ content: ["A short summary."] })
        : reply({
          content: Array.from({ length: pieces }, (_, i) => ` w${i % 97}`),
        });
      if (!("steps" in script)) throw new TypeError("a script with steps");
      return script.steps(context);
    },
  };
}

Deno.test("in a conversation that fills the context, every summary request fits it: after a failure the summary catches up, a part a request", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/m.gguf", nCtx: 4096 }],
    defaultScript: longAnswers(300, [streamError("Internal server error")]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "history_turns = 10\ncompact = true\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(daemon, client, 30);
  const requests = llm.chats.filter((c) => isSummaryRequest(c.body));
  assert.ok(requests.length >= 3, `${requests.length} summary requests`);
  for (const request of requests) {
    // Served, not refused for its length: the prompt and the summary fit.
    assert.ok(request.cache !== null, `refused: ${request.promptTokens}`);
    const body = request.body as Body;
    assert.ok(request.promptTokens! + body.max_tokens! <= 4096);
  }
  const summary = daemon.store.summary(1);
  assert.ok(summary !== null && summary.turns >= 20, JSON.stringify(summary));
  // Nothing was left out unsummarised for good: the last request's window
  // starts where the summary ends, or before.
  const last = llm.chats.filter((c) => !isSummaryRequest(c.body)).at(-1)!;
  const users = (last.body as Body).messages.filter((m) => m.role === "user");
  const first = Number(users[0]!.content!.match(/Question (\d+)$/)?.[1]);
  assert.ok(
    first - 1 <= summary.turns,
    `window from ${first}, summary ${summary.turns}`,
  );
});

Deno.test("a private conversation's summary that comes after the conversation was left is dropped: no client sees it", async () => {
  const gate = Promise.withResolvers<void>();
  const started = Promise.withResolvers<void>();
  await using llm = await FakeLlm.start({
    defaultScript: routed([{
      steps(context) {
        started.resolve();
        const held = gated("Private ", gate.promise, "summary.");
        if (!("steps" in held)) throw new TypeError("a script with steps");
        return held.steps(context);
      },
    }]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await client.send({ type: "new", private: true });
  await client.next("conversation");
  for (let n = 1; n <= 5; n++) await ask(client, `Secret question ${n}`);
  await within(started.promise, "the summary request");
  await client.send({ type: "new", private: true });
  await nextOf(client, "conversation");
  gate.resolve();
  await daemon.assistant.settled();
  assert.equal(client.received.some((e) => e.type === "summary"), false);
  assert.doesNotMatch(daemon.log, /summary made/);
});

Deno.test("opening the current conversation again keeps its window where it was: the turns a summary is due for stay sent", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: routed([
      {
        steps(context) {
          const held = hold();
          if (!("steps" in held)) throw new TypeError("a script with steps");
          return held.steps(context);
        },
      },
    ]),
  });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: CONFIG,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  for (let n = 1; n <= 6; n++) await ask(client, `Question ${n}`);
  await client.send({ type: "open", id: 1 });
  await nextOf(client, "conversation");
  await ask(client, "Question 7");
  const seventh = llm.chats.filter((c) => !isSummaryRequest(c.body)).at(-1)!;
  const users = (seventh.body as Body).messages.filter((m) =>
    m.role === "user"
  );
  assert.match(users[0]!.content!, /Question 1$/);
  assert.equal(daemon.store.summary(1), null);
});

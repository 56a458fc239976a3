/**
 * What the assistant remembers: memories the user keeps, the facts it
 * proposes after an idle spell, the model's `remember` tool that always
 * asks, and the block that rides in every new conversation's system
 * message, taken once so the cached prefix never changes.
 */
import assert from "node:assert/strict";
import type { Event } from "../../src/protocol/protocol.ts";
import { Brain, type EventOf, isIdle } from "../support/brain.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { countTokens } from "../support/fake_llm_context.ts";
import { ManualClock } from "../support/manual_clock.ts";
import {
  type Answer,
  answerDeltas,
  type Body,
  ScriptedModel,
} from "../support/scripted_model.ts";

const INTRO = "What you know about the user:";

function ofType<T extends Event["type"]>(events: Event[], type: T) {
  return events.filter((e): e is EventOf<T> => e.type === type);
}

function isProposal(body: Body): boolean {
  return body.response_format !== undefined;
}

function systemOf(body: Body): string {
  return String(body.messages[0]?.content ?? "");
}

/** A proposal answer: its text (finished by `stop`), its text and another finish, a whole scripted answer, or an error. */
type FactsAnswer = string | { text: string; finish: string } | Answer;

/** A model that answers questions plainly and proposal requests with `facts()`. */
function model(facts: () => FactsAnswer = () => '{"facts": []}') {
  return new ScriptedModel({
    answer(body) {
      if (!isProposal(body)) return answerDeltas(body, "Sure.");
      const answer = facts();
      if (typeof answer === "string") return answerDeltas(body, answer);
      if ("finish" in answer) {
        return answerDeltas(body, answer.text, { finish: answer.finish });
      }
      return answer;
    },
  });
}

/** A model whose first answer calls `remember` with `args`, and whose others answer plainly. */
function remembering(args: string, calls = { made: 0 }) {
  return new ScriptedModel({
    answer(body) {
      if (isProposal(body) || calls.made++ % 2 === 1) {
        return answerDeltas(body, "I will remember.");
      }
      return [
        {
          kind: "tool_call",
          index: 0,
          id: `c${calls.made}`,
          name: "remember",
          arguments: args.replace("#", String(calls.made)),
        },
        { kind: "finish", reason: "tool_calls" },
      ];
    },
  });
}

/** The conversation id the last finished turn's `done` named. */
function doneId(brain: Brain): number {
  const done = ofType(brain.events, "done").filter((e) => !e.stopped).at(-1);
  assert.ok(typeof done?.id === "number", "a saved turn");
  return done.id;
}

async function refusal(brain: Brain, command: Parameters<Brain["send"]>[0]) {
  const error = await brain.send(command).then(() => null, (e: unknown) => e);
  assert.ok(error instanceof Error, `${command.type} refused`);
  return (error as { code?: string }).code;
}

Deno.test("remember, rewrite and forget: each change goes to every client, newest first", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask" },
  });
  await brain.send({ type: "remember", text: "Prefers metric units" });
  const [first] = (await brain.next("memories")).items;
  assert.equal(first?.text, "Prefers metric units");
  assert.equal(first?.source, null);
  await brain.send({ type: "remember", text: "Works on Tern" });
  const both = await brain.next("memories");
  assert.deepEqual(both.items.map((m) => m.text), [
    "Works on Tern",
    "Prefers metric units",
  ]);
  await brain.send({ type: "remember", id: first!.id, text: "Uses metric" });
  const rewritten = await brain.next("memories");
  assert.equal(
    rewritten.items.find((m) => m.id === first!.id)?.text,
    "Uses metric",
  );
  await brain.send({ type: "forget", id: first!.id });
  assert.deepEqual(
    (await brain.next("memories")).items.map((m) => m.text),
    ["Works on Tern"],
  );
  assert.deepEqual(
    (await brain.send({ type: "memories" }) as EventOf<"memories">).items.map(
      (m) => m.text,
    ),
    ["Works on Tern"],
  );
  assert.equal(
    await refusal(brain, { type: "forget", id: 999 }),
    "no_such_memory",
  );
  assert.equal(
    await refusal(brain, { type: "remember", id: 999, text: "x" }),
    "no_such_memory",
  );
  assert.doesNotMatch(brain.log, /Tern|metric/, "no memory text in the log");
});

Deno.test("the newest memories within memory_tokens end a new conversation's system message, taken once for its life", async () => {
  // The heading counts too: 18 tokens with two memories, 27 with three.
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask", memory_tokens: 20 },
  });
  await brain.send({ type: "remember", text: "Old fact that will not fit in" });
  await brain.send({ type: "remember", text: "Likes tea" });
  await brain.send({ type: "remember", text: "Lives in Oslo" });
  const first = await brain.ask("Hello");
  const system = systemOf(brain.llm.bodies[0]!);
  assert.ok(system.endsWith(`${INTRO}\n- Lives in Oslo\n- Likes tea`), system);
  assert.equal(ofType(first, "ctx")[0]?.memories, 2);
  // A memory kept meanwhile leaves this conversation's prefix as it was.
  await brain.send({ type: "remember", text: "Has a cat" });
  await brain.ask("Again");
  assert.equal(systemOf(brain.llm.bodies[1]!), system);
  assert.equal((brain.assistant.hello() as EventOf<"hello">).memories, 2);
  // The next conversation knows it.
  await brain.send({ type: "new" });
  assert.equal((await brain.next("conversation")).memories, 4);
  await brain.ask("Hi");
  const asked = brain.llm.bodies.filter((body) => !isProposal(body));
  assert.match(
    systemOf(asked.at(-1)!),
    /:\n- Has a cat\n- Lives in Oslo$/,
  );
});

Deno.test("the block is counted as it is sent, heading and all, in a few counts whatever the number of memories", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask", memory_tokens: 100 },
  });
  for (let i = 1; i <= 40; i++) {
    await brain.send({
      type: "remember",
      text: `Fact number ${i} of the user`,
    });
  }
  await brain.ask("Hello");
  const counts = brain.llm.counted.filter((text) =>
    text.startsWith("- Fact") || text.startsWith(`\n\n${INTRO}`)
  );
  assert.ok(counts.length <= 7, `${counts.length} counts`);
  const system = systemOf(brain.llm.bodies[0]!);
  const block = system.slice(system.indexOf(`\n\n${INTRO}`));
  const lines = block.split("\n").filter((line) => line.startsWith("- "));
  assert.equal(lines[0], "- Fact number 40 of the user");
  assert.ok(countTokens(block) <= 100, `${countTokens(block)} tokens`);
  // The newest that fit: one more would not.
  const next = `${block}\n- Fact number ${40 - lines.length} of the user`;
  assert.ok(countTokens(next) > 100);
  assert.equal(ofType(brain.events, "ctx").at(-1)?.memories, lines.length);
});

Deno.test("turns that overlap share one block: a stopped turn that took it late never replaces the one a newer turn sent", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask" },
  });
  await brain.send({ type: "remember", text: "Likes tea" });
  await brain.send({ type: "remember", text: "Lives in Oslo" });
  const counting = Promise.withResolvers<void>();
  const tokenize = brain.llm.tokenize.bind(brain.llm);
  brain.llm.tokenize = (model, text, signal) => {
    if (text.includes("Oslo")) counting.resolve();
    return tokenize(model, text, signal);
  };
  const release = brain.llm.holdCounts();
  await brain.send({ type: "ask", text: "First" });
  await counting.promise;
  // Taken while the first turn counts its block: not in this conversation.
  await brain.send({ type: "remember", text: "Has a cat" });
  brain.llm.countFreely();
  // The second question stops the first while it is still counting.
  await brain.send({ type: "ask", text: "Second" });
  await brain.until((e) => e.type === "done" && !e.stopped);
  release();
  await brain.assistant.settled();
  await brain.ask("Third");
  const asked = brain.llm.bodies.filter((body) => !isProposal(body));
  assert.equal(asked.length, 2, "the stopped turn sent nothing");
  assert.ok(
    systemOf(asked[0]!).endsWith(`${INTRO}\n- Lives in Oslo\n- Likes tea`),
    systemOf(asked[0]!),
  );
  assert.equal(systemOf(asked[1]!), systemOf(asked[0]!));
});

Deno.test("a conversation reopened after a restart of the daemon sends the system message its first request sent", async () => {
  await using llm = await FakeLlm.start();
  const config = 'memory = "ask"\nmemory_idle = 3600\n';
  const systemAsked = (question: string) => {
    const chat = llm.chats.find((request) =>
      JSON.stringify((request.body as Body).messages.at(-1)).includes(question)
    );
    assert.ok(chat, `a request for ${question}`);
    return systemOf(chat.body as Body);
  };
  await using first = await Daemon.start({ llmUrl: llm.url, config });
  let id: number;
  {
    await using client = await first.connect();
    await client.next("hello");
    await client.send({ type: "remember", text: "Likes tea" });
    await client.next("memories");
    await client.send({ type: "ask", text: "First question" });
    const events = await client.until(isIdle);
    const done = events.find((e) => e.type === "done");
    id = Number(done?.id);
  }
  await first.stop();
  await using second = await Daemon.start({
    llmUrl: llm.url,
    config,
    home: first.home,
  });
  await using client = await second.connect();
  await client.next("hello");
  await client.send({ type: "remember", text: "Has a cat" });
  await client.next("memories");
  await client.send({ type: "open", id });
  const opened = await client.next("conversation");
  assert.equal(opened.memories, 1);
  await client.send({ type: "ask", text: "Second question" });
  await client.until(isIdle);
  const before = systemAsked("First question");
  assert.ok(before.endsWith(`${INTRO}\n- Likes tea`), before);
  assert.equal(systemAsked("Second question"), before);
});

Deno.test("a conversation saved before blocks were kept carries no memory when opened", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask" },
  });
  await brain.send({ type: "remember", text: "Likes tea" });
  const id = brain.store.saveTurn(null, {
    user: "Old question",
    reply: "Old reply.",
    tools: [],
    messages: [
      { role: "user", content: "Old question" },
      { role: "assistant", content: "Old reply." },
    ],
  });
  await brain.send({ type: "open", id });
  assert.equal((await brain.next("conversation")).memories, 0);
  await brain.ask("New question");
  assert.doesNotMatch(systemOf(brain.llm.bodies[0]!), /What you know/);
  assert.equal((brain.assistant.hello() as EventOf<"hello">).memories, 0);
});

Deno.test("with memory off no memory rides in the prompt and the model is offered no remember tool", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "off" },
  });
  await brain.send({ type: "remember", text: "Likes tea" });
  await brain.ask("Hello");
  const body = brain.llm.bodies[0]!;
  assert.doesNotMatch(systemOf(body), /What you know/);
  assert.equal(body.tools, undefined);
  assert.equal((brain.assistant.hello() as EventOf<"hello">).memories, 0);
});

Deno.test("after an idle spell the new turns are read once; kept, refused and waiting facts are dropped; at most three", async () => {
  const clock = new ManualClock();
  let answer =
    '{"facts": ["Likes TEA", "Has a dog named Rex", "Works on Tern", "Plays chess", "Reads sci-fi"]}';
  await using brain = await Brain.start({
    llm: model(() => answer),
    config: { memory: "ask", memory_idle: 120 },
    assistant: { idleTimer: clock },
  });
  await brain.send({ type: "remember", text: "likes   tea" });
  await brain.ask("I have a dog called Rex");
  assert.equal(brain.llm.bodies.filter(isProposal).length, 0, "not idle yet");
  clock.advance(120_000);
  const proposed = await brain.next("proposed");
  await brain.assistant.settled();
  const request = brain.llm.bodies.find(isProposal)!;
  assert.deepEqual(
    (request.response_format as { json_schema: { schema: unknown } })
      .json_schema.schema,
    {
      type: "object",
      properties: {
        facts: {
          type: "array",
          items: { type: "string", minLength: 1, maxLength: 500 },
          maxItems: 3,
        },
      },
      required: ["facts"],
      additionalProperties: false,
    },
  );
  assert.equal(
    (request.chat_template_kwargs as { enable_thinking: boolean })
      .enable_thinking,
    false,
  );
  assert.equal(request.tools, undefined);
  assert.deepEqual(proposed.items.map((p) => p.text), [
    "Has a dog named Rex",
    "Works on Tern",
    "Plays chess",
  ]);
  assert.equal(proposed.items[0]?.source.turn, 0);
  const hello = brain.assistant.hello() as EventOf<"hello">;
  assert.deepEqual(hello.proposed?.map((p) => p.text), [
    "Has a dog named Rex",
    "Works on Tern",
    "Plays chess",
  ]);
  // Read turns are not read again; a waiting fact is not proposed twice.
  answer = '{"facts": ["Plays chess", "Collects stamps"]}';
  await brain.ask("Another thing");
  clock.advance(120_000);
  const again = await brain.next("proposed");
  assert.deepEqual(again.items.map((p) => p.text), ["Collects stamps"]);
  const read = brain.llm.bodies.filter(isProposal).at(-1)!;
  assert.doesNotMatch(JSON.stringify(read.messages), /dog called Rex/);
  assert.doesNotMatch(brain.log, /Rex|chess|stamps/, "no fact in the log");
});

Deno.test("the first answer decides: accept keeps the fact (as worded), refuse keeps it from ever coming back", async () => {
  const clock = new ManualClock();
  let answer = '{"facts": ["Prefers short answers", "Is called Ada"]}';
  await using brain = await Brain.start({
    llm: model(() => answer),
    config: { memory: "ask", memory_idle: 1 },
    assistant: { idleTimer: clock },
  });
  await brain.ask("Keep it short, Ada here");
  clock.advance(1000);
  const [short, ada] = (await brain.next("proposed")).items;
  await brain.send({
    type: "accept",
    proposal: short!.proposal,
    text: "Wants short answers",
    ref: "a",
  });
  const decided = await brain.next("decided");
  assert.deepEqual(decided, {
    type: "decided",
    proposal: short!.proposal,
    accepted: true,
    ref: "a",
  });
  const kept = await brain.next("memories");
  assert.equal(kept.items[0]?.text, "Wants short answers");
  assert.deepEqual(kept.items[0]?.source, short!.source);
  assert.equal(
    await refusal(brain, { type: "refuse", proposal: short!.proposal }),
    "no_such_proposal",
  );
  await brain.send({ type: "refuse", proposal: ada!.proposal });
  assert.equal((await brain.next("decided")).accepted, false);
  assert.equal(
    (brain.assistant.hello() as EventOf<"hello">).proposed,
    undefined,
  );
  // Refused once, never proposed again, whatever its case and spacing; the
  // wording the user changed is not proposed again either.
  answer = '{"facts": ["is  called ADA", "Prefers SHORT answers"]}';
  await brain.ask("More");
  clock.advance(1000);
  await brain.assistant.settled();
  assert.equal(
    ofType(brain.events, "proposed").length,
    1,
    "nothing new to propose",
  );
});

Deno.test("a proposal answered with garbage, an error or nothing proposes nothing, is tried twice, and never touches a turn", async () => {
  for (
    const bad of [
      () => "Sure! Here are some facts: tea.",
      () => new Error("500 server error"),
      () => '{"facts": "tea"}',
      () => "",
      () => ({ text: '{"facts": ["Likes tea"]}', finish: "length" }),
    ]
  ) {
    const clock = new ManualClock();
    await using brain = await Brain.start({
      llm: model(bad),
      config: { memory: "ask", memory_idle: 1 },
      assistant: { idleTimer: clock },
    });
    await brain.ask("I like tea");
    clock.advance(1000);
    await brain.assistant.settled();
    await brain.assistant.settled();
    assert.equal(brain.llm.bodies.filter(isProposal).length, 2, "two tries");
    assert.deepEqual(ofType(brain.events, "proposed"), []);
    assert.deepEqual(ofType(brain.events, "error"), []);
    assert.equal(clock.pending, 0, "no loop waiting");
  }
});

Deno.test("a proposal request gives way to a question and runs again once it is answered", async () => {
  const clock = new ManualClock();
  const started = Promise.withResolvers<void>();
  let proposals = 0;
  await using brain = await Brain.start({
    llm: model(() => {
      if (proposals++ > 0) return '{"facts": ["Likes tea"]}';
      started.resolve();
      return { held: [] };
    }),
    config: { memory: "ask", memory_idle: 1 },
    assistant: { idleTimer: clock },
  });
  await brain.ask("I like tea");
  clock.advance(1000);
  await started.promise;
  const events = await brain.ask("And biscuits");
  assert.equal(ofType(events, "done")[0]?.stopped, false);
  const proposed = await brain.next("proposed");
  assert.deepEqual(proposed.items.map((p) => p.text), ["Likes tea"]);
  const [given, again] = brain.llm.bodies.filter(isProposal);
  assert.doesNotMatch(JSON.stringify(given!.messages), /biscuits/);
  // Run again, it reads the question that interrupted it too.
  assert.match(JSON.stringify(again!.messages), /I like tea[\s\S]*biscuits/);
  assert.deepEqual(ofType(brain.events, "error"), []);
});

Deno.test("deleting a conversation withdraws its proposals: decided, not accepted, nothing refused", async () => {
  const clock = new ManualClock();
  await using brain = await Brain.start({
    llm: model(() => '{"facts": ["Likes jazz"]}'),
    config: { memory: "ask", memory_idle: 1 },
    assistant: { idleTimer: clock },
  });
  await brain.ask("Play some jazz");
  const id = doneId(brain);
  clock.advance(1000);
  const [jazz] = (await brain.next("proposed")).items;
  await brain.send({ type: "delete", id });
  assert.deepEqual(await brain.next("decided"), {
    type: "decided",
    proposal: jazz!.proposal,
    accepted: false,
  });
  assert.equal(
    (brain.assistant.hello() as EventOf<"hello">).proposed,
    undefined,
  );
  assert.equal(
    await refusal(brain, { type: "accept", proposal: jazz!.proposal }),
    "no_such_proposal",
  );
  assert.deepEqual(ofType(brain.events, "memories"), []);
  // Not refused: another conversation may propose it.
  await brain.ask("More jazz");
  clock.advance(1000);
  assert.deepEqual(
    (await brain.next("proposed")).items.map((p) => p.text),
    ["Likes jazz"],
  );
});

Deno.test("proposals left unanswered at a restart come again: their turns count as read once every one is answered", async () => {
  const clock = new ManualClock();
  await using brain = await Brain.start({
    llm: model(() => '{"facts": ["Likes jazz"]}'),
    config: { memory: "ask", memory_idle: 1 },
    assistant: { idleTimer: clock },
  });
  await brain.ask("Play some jazz");
  const id = doneId(brain);
  clock.advance(1000);
  await brain.next("proposed");
  await brain.restart();
  assert.equal(
    (brain.assistant.hello() as EventOf<"hello">).proposed,
    undefined,
  );
  await brain.send({ type: "open", id });
  await brain.ask("Some more");
  clock.advance(1000);
  const [again] = (await brain.next("proposed")).items;
  const read = brain.llm.bodies.filter(isProposal).at(-1)!;
  assert.match(JSON.stringify(read.messages), /Play some jazz/);
  // Answered, its turns are read for good.
  await brain.send({ type: "refuse", proposal: again!.proposal });
  await brain.ask("Last one");
  clock.advance(1000);
  await brain.assistant.settled();
  const last = brain.llm.bodies.filter(isProposal).at(-1)!;
  assert.doesNotMatch(JSON.stringify(last.messages), /Play some jazz|more/);
  assert.match(JSON.stringify(last.messages), /Last one/);
});

Deno.test("a proposal request lists as known only the newest memories that fit its budget", async () => {
  const clock = new ManualClock();
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask", memory_idle: 1 },
    assistant: { idleTimer: clock },
  });
  for (let i = 1; i <= 60; i++) {
    await brain.send({
      type: "remember",
      text: `Known fact ${i}: ${"x".repeat(200)}`,
    });
  }
  await brain.ask("Hello");
  clock.advance(1000);
  await brain.assistant.settled();
  const request = brain.llm.bodies.find(isProposal)!;
  const content = String(request.messages[1]?.content);
  assert.match(content, /Known fact 60:/);
  assert.doesNotMatch(content, /Known fact 1:/);
  assert.ok(content.length < 4_500, `${content.length} characters`);
});

Deno.test("another conversation becoming current reads the last one at once; a private one proposes nothing", async () => {
  const clock = new ManualClock();
  await using brain = await Brain.start({
    llm: model(() => '{"facts": ["Likes jazz"]}'),
    config: { memory: "ask", memory_idle: 120 },
    assistant: { idleTimer: clock },
  });
  await brain.ask("Play some jazz");
  await brain.send({ type: "new" });
  const proposed = await brain.next("proposed");
  assert.deepEqual(proposed.items.map((p) => p.text), ["Likes jazz"]);

  await brain.send({ type: "new", private: true });
  await brain.ask("Private: I like opera");
  assert.equal(brain.llm.bodies.at(-1)!.tools, undefined, "no remember tool");
  clock.advance(120_000);
  await brain.send({ type: "new" });
  await brain.assistant.settled();
  assert.equal(brain.llm.bodies.filter(isProposal).length, 1);
});

Deno.test("what the model's remember keeps names its turn once saved: a new conversation's first, a retried one's own", async () => {
  await using brain = await Brain.start({
    llm: remembering('{"text": "Fact #"}'),
    config: { memory: "ask" },
  });
  await brain.send({ type: "ask", text: "Remember this" });
  await brain.send({
    type: "approve",
    call: (await brain.next("confirm")).call,
    allow: true,
  });
  await brain.until(isIdle);
  const id = doneId(brain);
  // Every client hears of the source once the turn is saved.
  const sourced = ofType(brain.events, "memories").at(-1);
  assert.deepEqual(sourced?.items[0]?.source, { id, turn: 0 });
  await brain.send({ type: "retry" });
  await brain.send({
    type: "approve",
    call: (await brain.next("confirm")).call,
    allow: true,
  });
  await brain.until(isIdle);
  const listed = await brain.send({ type: "memories" }) as EventOf<"memories">;
  assert.deepEqual(
    listed.items.map((m) => [m.text, m.source]),
    [["Fact 3", { id, turn: 0 }], ["Fact 1", { id, turn: 0 }]],
  );
});

Deno.test("a remember call whose text could not be kept is refused to the model without asking the user", async () => {
  await using brain = await Brain.start({
    llm: remembering('{"text": "  "}'),
    config: { memory: "ask" },
  });
  await brain.ask("Remember nothing");
  assert.deepEqual(ofType(brain.events, "confirm"), []);
  assert.deepEqual(ofType(brain.events, "memories"), []);
  const tool = brain.llm.bodies[1]!.messages.at(-1);
  assert.match(String(tool?.content), /^remember failed: text must be/);
});

Deno.test("the model's remember tool always waits for the user; allowed, the fact is kept with its source", async () => {
  let calls = 0;
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer(body) {
        if (calls++ === 0) {
          return [
            {
              kind: "tool_call",
              index: 0,
              id: "c1",
              name: "remember",
              arguments: '{"text": "Birthday is 3 May"}',
            },
            { kind: "finish", reason: "tool_calls" },
          ];
        }
        return answerDeltas(body, "I will remember.");
      },
    }),
    config: { memory: "ask" },
  });
  await brain.send({ type: "ask", text: "Remember my birthday is 3 May" });
  const confirm = await brain.next("confirm");
  assert.deepEqual(
    [confirm.tool, confirm.args],
    ["remember", { text: "Birthday is 3 May" }],
  );
  const tools = brain.llm.bodies[0]!.tools as { function: { name: string } }[];
  assert.deepEqual(tools.map((t) => t.function.name), ["remember"]);
  await brain.send({ type: "approve", call: confirm.call, allow: true });
  const kept = await brain.next("memories");
  assert.equal(kept.items[0]?.text, "Birthday is 3 May");
  await brain.until(isIdle);
  const tool = brain.llm.bodies[1]!.messages.at(-1);
  assert.deepEqual(tool, {
    role: "tool",
    tool_call_id: "c1",
    content: "Remembered.",
  });
  // Its source is the turn that kept it, in the conversation it began.
  const listed = await brain.send({ type: "memories" }) as EventOf<"memories">;
  assert.deepEqual(listed.items[0]?.source, { id: doneId(brain), turn: 0 });
});

Deno.test("export_memories answers Markdown or JSON; anything else is bad_format", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask" },
  });
  await brain.send({ type: "remember", text: "Likes tea" });
  const markdown = await brain.send({
    type: "export_memories",
    format: "markdown",
  });
  assert.match(
    (markdown as EventOf<"export">).text,
    /^# What the assistant knows about you\n\n- Likes tea \*\(/,
  );
  assert.equal((markdown as EventOf<"export">).id, undefined);
  const json = await brain.send({ type: "export_memories", format: "json" });
  const parsed = JSON.parse((json as EventOf<"export">).text);
  assert.equal(parsed.format, "desktop-assistant-memories/1");
  assert.deepEqual(parsed.items.map((m: { text: string }) => m.text), [
    "Likes tea",
  ]);
});

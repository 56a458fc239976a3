/**
 * What the assistant remembers: memories the user keeps, the facts it
 * proposes after an idle spell, the model's `remember` tool that always
 * asks, and the block that rides in every new conversation's system
 * message, taken once so the cached prefix never changes.
 */
import assert from "node:assert/strict";
import type { Event } from "../../src/protocol/protocol.ts";
import { Brain, type EventOf, isIdle } from "../support/brain.ts";
import { ManualClock } from "../support/manual_clock.ts";
import {
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

/** A model that answers questions plainly and proposal requests with `facts()`. */
function model(facts: () => string | Error = () => '{"facts": []}') {
  return new ScriptedModel({
    answer(body) {
      if (!isProposal(body)) return answerDeltas(body, "Sure.");
      const answer = facts();
      return answer instanceof Error ? answer : answerDeltas(body, answer);
    },
  });
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
  await using brain = await Brain.start({
    llm: model(),
    config: { memory: "ask", memory_tokens: 12 },
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
    /- Has a cat\n- Lives in Oslo\n- Likes tea$/,
  );
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
  // Refused once, never proposed again, whatever its case and spacing.
  answer = '{"facts": ["is  called ADA"]}';
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

/**
 * What follows a reply's end: the context meter of the conversation it
 * belongs to, the turn's count, the cache finding's "warm" mark, and the
 * title and summary requests, each about the conversation the turn was in.
 */
import assert from "node:assert/strict";
import {
  messagesText,
  overheadOf,
  shapeOf,
} from "../../src/assistant/token_ledger.ts";
import type { Event } from "../../src/protocol/protocol.ts";
import { countTokens } from "../support/fake_llm_context.ts";
import { Brain, type EventOf, isIdle } from "../support/brain.ts";
import {
  answerDeltas,
  type Body,
  questionOf,
  ScriptedModel,
} from "../support/scripted_model.ts";

function ofType<T extends Event["type"]>(
  events: Event[],
  type: T,
): EventOf<T>[] {
  return events.filter((e): e is EventOf<T> => e.type === type);
}

function isSummaryRequest(body: Body): boolean {
  return (body.messages.at(-1)?.content ?? "").startsWith("Summarise");
}

function isTitleRequest(body: Body): boolean {
  return (body.messages[0]?.content ?? "").startsWith("Write a title");
}

Deno.test("ctx names the conversation it measured", async () => {
  await using brain = await Brain.start({
    llm: new ScriptedModel({ answer: (body) => answerDeltas(body, "Hi.") }),
  });
  const events = await brain.ask("Hello");
  const [done] = ofType(events, "done");
  const [ctx] = ofType(events, "ctx");
  assert.equal(typeof done?.id, "number");
  assert.equal(ctx?.id, done?.id);
});

Deno.test("a reply the server reported no usage for sends no context figure of another conversation", async () => {
  let usage = true;
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer: (body) => answerDeltas(body, "An answer.", { usage }),
    }),
  });
  const first = await brain.ask("In the first conversation");
  const [measured] = ofType(first, "ctx");
  assert.ok(measured, "the first conversation is measured");
  await brain.send({ type: "new" });
  usage = false;
  const second = await brain.ask("In the second conversation");
  const [done] = ofType(second, "done");
  assert.notEqual(done?.id, measured.id);
  // Nothing measured this conversation: no meter is sent for it, and a
  // client connecting now is not shown the first conversation's.
  assert.deepEqual(ofType(second, "ctx"), []);
  const hello = brain.assistant.hello() as EventOf<"hello">;
  assert.equal(hello.ctx_used, null);
  // Its own figures stand: no earlier turn was sent.
  assert.equal(hello.ctx_sent, 0);
});

Deno.test("hello says how many earlier turns the current conversation's summary covers", async () => {
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer: (body) =>
        answerDeltas(
          body,
          isSummaryRequest(body) ? "The user asked." : "Answer. ".repeat(30),
        ),
    }),
    config: { compact: true, history_turns: 4, summary_tokens: 60 },
  });
  for (let n = 1; n <= 6; n++) await brain.ask(`Question ${n}`);
  const summary = ofType(brain.events, "summary").at(-1);
  assert.ok(summary, "a summary was made");
  await brain.ask("Question 7");
  const hello = brain.assistant.hello() as EventOf<"hello">;
  const ctx = ofType(brain.events, "ctx").at(-1);
  assert.equal(hello.ctx_summarized, summary.turns);
  assert.equal(ctx?.summarized, summary.turns);
  await brain.send({ type: "new" });
  const fresh = brain.assistant.hello() as EventOf<"hello">;
  assert.equal(fresh.ctx_summarized, null);
});

Deno.test("a count that finishes after a retry replaced its turn never overwrites the new turn's count", async () => {
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer: (body, index) =>
        answerDeltas(
          body,
          index === 1 ? "The first try." : `Try ${index} ${"more ".repeat(20)}`,
        ),
    }),
  });
  await brain.ask("Question 1");
  const release = brain.llm.holdCounts();
  await brain.send({ type: "ask", text: "Question 2" });
  await brain.until(isIdle);
  brain.llm.countFreely();
  await brain.send({ type: "retry" });
  const retried = await brain.until(isIdle);
  assert.equal(ofType(retried, "done")[0]?.replaces, true);
  // The retry's own count lands first; the replaced turn's comes after it.
  await brain.waitForLog(/turn counted/, 2);
  release();
  await brain.assistant.settled();
  const id = ofType(retried, "done")[0]!.id!;
  const stored = brain.store.open(id)!;
  assert.equal(stored.turns[1]?.reply.startsWith("Try 2"), true);
  // The count of the turn stored now, not of the one it replaced.
  const messages = stored.messages[1]!;
  assert.equal(
    stored.tokens[1],
    countTokens(messagesText(messages)) + overheadOf(shapeOf(messages)),
  );
});

/** A model whose answers are long enough for the window's moves to tell whether the server shifted the cache; its timings say it did not. */
function unshifting(
  options: { stopWhen?: (question: string) => boolean } = {},
): ScriptedModel {
  return new ScriptedModel({
    answer(body) {
      if (isSummaryRequest(body)) return answerDeltas(body, "Things.");
      if (options.stopWhen?.(questionOf(body))) {
        return { held: [{ kind: "content", text: "Partly" }] };
      }
      return answerDeltas(body, "Long answer. ".repeat(150));
    },
  });
}

Deno.test("a stopped reply leaves the server's cache no longer the conversation's: the next request teaches nothing of it", async () => {
  await using brain = await Brain.start({
    llm: unshifting({ stopWhen: (q) => q.startsWith("Stopped") }),
    config: { history_turns: 2 },
  });
  const stopped = async (n: number) => {
    await brain.send({ type: "ask", text: `Stopped ${n}` });
    await brain.until((e) => e.type === "token");
    await brain.send({ type: "stop" });
    await brain.until(isIdle);
  };
  await brain.ask("Question 1");
  await brain.ask("Question 2");
  await brain.ask("Question 3");
  // Each move of the window comes right after a stopped reply.
  await stopped(1);
  await brain.ask("Question 4");
  await stopped(2);
  await brain.ask("Question 5");
  assert.equal(brain.store.cacheShift("/srv/models/scripted.gguf"), null);
  assert.doesNotMatch(brain.log, /model prompt cache learnt/);
  // Without stops in between, two moves teach it.
  await brain.ask("Question 6");
  await brain.ask("Question 7");
  assert.equal(
    brain.store.cacheShift("/srv/models/scripted.gguf")?.shifts,
    false,
  );
});

Deno.test("a summary request leaves the server's cache no longer the turn's: the next request teaches nothing of it", async () => {
  await using brain = await Brain.start({
    llm: unshifting(),
    config: { history_turns: 4, compact: true, summary_tokens: 60 },
  });
  for (let n = 1; n <= 12; n++) await brain.ask(`Question ${n}`);
  assert.ok(
    brain.llm.bodies.filter(isSummaryRequest).length >= 2,
    "the window moved more than once, a summary before each move",
  );
  assert.equal(brain.store.cacheShift("/srv/models/scripted.gguf"), null);
});

Deno.test("a conversation deleted right after its reply's end gets no title or summary request", async () => {
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer: (body) => answerDeltas(body, "Answer. ".repeat(30)),
    }),
    config: {
      auto_title: true,
      compact: true,
      history_turns: 2,
      summary_tokens: 60,
    },
  });
  await brain.ask("Question 1");
  await brain.ask("Question 2");
  const asked = brain.llm.bodies.length;
  const release = brain.llm.holdCounts();
  await brain.send({ type: "ask", text: "Question 3" });
  const events = await brain.until(isIdle);
  const id = ofType(events, "done")[0]!.id!;
  await brain.send({ type: "delete", id });
  release();
  await brain.assistant.settled();
  const after = brain.llm.bodies.slice(asked + 1);
  assert.deepEqual(
    after.filter((b) => isSummaryRequest(b) || isTitleRequest(b)),
    [],
  );
});

Deno.test("a reply cut short inside its reasoning says so where the answer would be, shown and stored alike", async () => {
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer: () => [
        { kind: "think", text: "Let me think about it at length" },
        { kind: "finish", reason: "length" },
        { kind: "usage", used: 120, prompt: 60 },
      ],
    }),
    config: { request: { max_tokens: 60 } },
  });
  const events = await brain.ask("A hard question");
  const shown = ofType(events, "token").map((e) => e.delta).join("");
  assert.equal(
    shown,
    "[the reply ended inside its reasoning: raise max_tokens or set thinking = false]",
  );
  const [done] = ofType(events, "done");
  assert.equal(done?.truncated_by, "max_tokens");
  const stored = brain.store.open(done!.id!)!;
  assert.equal(stored.turns[0]?.reply, shown);
  // The model is not told it said the note.
  assert.deepEqual(stored.messages[0]?.at(-1), {
    role: "assistant",
    content: "",
  });
});

/**
 * The cache finding's "warm" mark (13.1): only a request that follows the
 * conversation's last finished turn, with no other request between, may
 * teach whether the server shifts its cache. A failed turn and a title
 * request reach the server too, so the request after either teaches
 * nothing, as after a stopped turn or a summary request
 * (reply_end_test.ts).
 */
import assert from "node:assert/strict";
import type { Event } from "../../src/protocol/protocol.ts";
import { Brain, type EventOf, isIdle } from "../support/brain.ts";
import {
  answerDeltas,
  type Body,
  questionOf,
  ScriptedModel,
} from "../support/scripted_model.ts";

const MODEL = "/srv/models/scripted.gguf";

function ofType<T extends Event["type"]>(events: Event[], type: T) {
  return events.filter((e): e is EventOf<T> => e.type === type);
}

function isTitleRequest(body: Body): boolean {
  return (body.messages[0]?.content ?? "").startsWith("Write a title");
}

/**
 * Answers long enough for a moved window to carry turns that tell whether
 * the server shifted its cache; the timings say it did not (`cache_n` 0).
 */
const LONG = "Long answer. ".repeat(150);

Deno.test("a failed reply leaves the server's cache no longer the conversation's: the next request teaches nothing of it", async () => {
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer(body) {
        if (questionOf(body).startsWith("Failed")) {
          return new Error("500 server error");
        }
        return answerDeltas(body, LONG);
      },
    }),
    config: { history_turns: 2 },
  });
  const failed = async (n: number) => {
    await brain.send({ type: "ask", text: `Failed ${n}` });
    const events = await brain.until(isIdle);
    assert.equal(ofType(events, "error")[0]?.turn, true, "the turn failed");
  };
  await brain.ask("Question 1");
  await brain.ask("Question 2");
  await brain.ask("Question 3");
  // Each move of the window comes right after a failed reply.
  await failed(1);
  await brain.ask("Question 4");
  await failed(2);
  await brain.ask("Question 5");
  assert.equal(brain.store.cacheShift(MODEL), null);
  assert.doesNotMatch(brain.log, /model prompt cache learnt/);
  // Without failures in between, two moves teach it.
  await brain.ask("Question 6");
  await brain.ask("Question 7");
  assert.equal(brain.store.cacheShift(MODEL)?.shifts, false);
});

Deno.test("a title request leaves the server's cache no longer the turn's: the next request teaches nothing of it", async () => {
  // The title request is held until a question takes its place; it is
  // then asked again once that question's reply has ended, so one runs
  // between every two turns until the user names the conversation.
  let titleStarted = Promise.withResolvers<void>();
  await using brain = await Brain.start({
    llm: new ScriptedModel({
      answer(body) {
        if (isTitleRequest(body)) {
          titleStarted.resolve();
          return { held: [] };
        }
        return answerDeltas(body, LONG);
      },
    }),
    config: { history_turns: 2, auto_title: true },
  });
  const asked = async (n: number) => {
    titleStarted = Promise.withResolvers<void>();
    await brain.send({ type: "ask", text: `Question ${n}` });
    await brain.until(isIdle);
  };
  for (let n = 1; n <= 5; n++) {
    await asked(n);
    // A title request follows this reply before the next question.
    await titleStarted.promise;
  }
  assert.equal(
    brain.llm.bodies.filter(isTitleRequest).length,
    5,
    "one title request after every reply",
  );
  // Questions 4 and 5 moved the window, each right after a title request.
  assert.equal(brain.store.cacheShift(MODEL), null);
  assert.doesNotMatch(brain.log, /model prompt cache learnt/);
  // Named by the user, the conversation gets no title request again. The
  // one after question 5 still ran, so question 6 teaches nothing either;
  // questions 7 and 8, two moves in a row after finished turns, teach it.
  const id = ofType(brain.events, "done").at(-1)!.id!;
  await brain.send({ type: "rename", id, title: "Named" });
  await brain.assistant.settled();
  await asked(6);
  await asked(7);
  await brain.assistant.settled();
  assert.equal(brain.store.cacheShift(MODEL), null);
  await asked(8);
  await brain.assistant.settled();
  assert.equal(brain.llm.bodies.filter(isTitleRequest).length, 5);
  assert.equal(brain.store.cacheShift(MODEL)?.shifts, false);
});

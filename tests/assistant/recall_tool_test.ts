/**
 * The model's `search_history` tool (13.4): it returns the best five turns
 * of the other conversations, changes nothing, and is not offered with
 * `recall = false`. meaning_test.ts shows it over the daemon with
 * embeddings on, and that the conversation it is asked in is left out.
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

function ofType<T extends Event["type"]>(events: Event[], type: T) {
  return events.filter((e): e is EventOf<T> => e.type === type);
}

const ASK = "What did I say about kiwi?";

/**
 * A model that calls search_history for "kiwi" when asked ASK, and
 * otherwise answers: a story whose long reply names a kiwi once, or a
 * plain note.
 */
function model(): ScriptedModel {
  return new ScriptedModel({
    answer(body) {
      const last = body.messages.at(-1)!;
      if (last.role === "tool") return answerDeltas(body, "Found it.");
      const question = questionOf(body);
      if (question === ASK) {
        return [
          {
            kind: "tool_call",
            index: 0,
            id: "s1",
            name: "search_history",
            arguments: '{"query": "kiwi"}',
          },
          { kind: "finish", reason: "tool_calls" },
        ];
      }
      if (question.startsWith("Story")) {
        return answerDeltas(
          body,
          `${"Once upon a time the orchard grew tall. ".repeat(8)}` +
            `A kiwi sat there. ${"The wind blew over the hills. ".repeat(8)}`,
        );
      }
      return answerDeltas(body, "Noted.");
    },
  });
}

/** What the model read back from its tool call. */
function toolResult(brain: Brain): string {
  const body = brain.llm.bodies.find((b: Body) =>
    b.messages.at(-1)?.role === "tool"
  );
  assert.ok(body, "the model was sent the tool's result");
  return String(body.messages.at(-1)!.content);
}

/** Eight other conversations that mention kiwi: five in their question (the best), three once in a long reply, asked last (the newest). */
async function history(brain: Brain): Promise<void> {
  for (let n = 1; n <= 5; n++) {
    await brain.ask(`Kiwi note ${n}`);
    await brain.send({ type: "new" });
    await brain.next("conversation");
  }
  for (let n = 1; n <= 3; n++) {
    await brain.ask(`Story ${n}`);
    await brain.send({ type: "new" });
    await brain.next("conversation");
  }
}

Deno.test("search_history returns the best five turns of the other conversations, and changes nothing", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { recall: true },
  });
  await history(brain);
  const others = brain.store.list();
  const kept = others.map((c) => brain.store.record(c.id));

  await brain.send({ type: "ask", text: ASK });
  const events = await brain.until(isIdle);
  assert.deepEqual(ofType(events, "error"), []);
  assert.deepEqual(
    ofType(events, "tool").map((e) => [e.name, e.done]),
    [["search_history", false], ["search_history", true]],
  );
  const lines = toolResult(brain).split("\n");
  assert.equal(lines.length, 5, toolResult(brain));
  const titles = lines.map((line) => {
    const match = /^(\d)\. "([^"]*)" \(\d{4}-\d{2}-\d{2}\): (.*)$/.exec(line);
    assert.ok(match, line);
    assert.match(match[3]!, /kiwi/i, "a snippet with the match");
    return match[2]!;
  });
  // The best: the questions that name it, not the newer replies that do once.
  assert.deepEqual(
    titles.toSorted(),
    [1, 2, 3, 4, 5].map((n) => `Kiwi note ${n}`),
  );

  // Read-only: every other conversation is as it was, none became current,
  // none was renamed or deleted, and no memory was touched.
  const id = ofType(events, "done")[0]!.id!;
  assert.ok(!others.some((c) => c.id === id), "asked in a new conversation");
  assert.deepEqual(
    brain.store.list().filter((c) => c.id !== id),
    others,
  );
  assert.deepEqual(others.map((c) => brain.store.record(c.id)), kept);
  for (const type of ["conversation", "renamed", "deleted", "memories"]) {
    assert.deepEqual(
      events.filter((e) => e.type === type),
      [],
      `no ${type} event`,
    );
  }
});

Deno.test("with recall = false the model is not offered search_history, and a call of it finds nothing", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { recall: false },
  });
  await history(brain);
  await brain.ask(ASK);
  const asked = brain.llm.bodies.find((b) => questionOf(b) === ASK)!;
  const offered = (asked.tools as { function: { name: string } }[] | undefined)
    ?.map((tool) => tool.function.name) ?? [];
  assert.ok(!offered.includes("search_history"), offered.join(", "));
  // Called all the same, it is no tool of this daemon's.
  assert.equal(
    toolResult(brain),
    'Unknown tool "search_history". Available tools: none.',
  );
});

/**
 * The one rule between summaries and retries: a summary never covers the
 * turn a retry or an edit replaces, so the request that asks again never
 * carries the answer it replaces.
 */
import assert from "node:assert/strict";
import { Brain } from "../support/brain.ts";
import {
  answerDeltas,
  type Body,
  ScriptedModel,
} from "../support/scripted_model.ts";

const INTRO = "Summary of the earlier conversation:";

/** Whether a request asks for the summary. */
function isSummaryRequest(body: Body): boolean {
  return (body.messages.at(-1)?.content ?? "").startsWith("Summarise");
}

/** The summary a request carries in a question, or null. */
function carriedSummary(body: Body): string | null {
  for (const message of body.messages) {
    if (message.role !== "user") continue;
    const content = message.content ?? "";
    if (content.startsWith(INTRO)) {
      return content.slice(INTRO.length).split("\n\n")[0]!.trim();
    }
  }
  return null;
}

/** A long answer: "Answer N." and filler, about 250 of the fake's tokens. */
function longAnswer(n: number): string {
  return `Answer ${n}. ` + "Here is more about it. ".repeat(40);
}

/** How many of the last exchanges a summary request says to leave out. */
function keptExchanges(instruction: string): number {
  if (/its last exchange/.test(instruction)) return 1;
  return Number(/its last (\d+) exchanges/.exec(instruction)?.[1] ?? 0);
}

/**
 * A model whose answers are long, and whose summaries name the answers
 * they were asked to summarise (ignoring any summary the request carries).
 */
function model(): ScriptedModel {
  let answers = 0;
  return new ScriptedModel({
    nCtx: 1024,
    answer(body) {
      if (isSummaryRequest(body)) {
        const read = body.messages.slice(0, -1)
          .filter((m) => m.role === "assistant")
          .flatMap((m) => m.content?.match(/^Answer \d+/) ?? []);
        const kept = keptExchanges(body.messages.at(-1)!.content!);
        const covered = read.slice(0, read.length - kept);
        return answerDeltas(body, `The user heard ${covered.join(", ")}.`);
      }
      return answerDeltas(body, longAnswer(++answers));
    },
  });
}

Deno.test("a turn that alone overflows half the room is left out of the summary, so a retry never carries the answer it replaces", async () => {
  await using brain = await Brain.start({
    llm: model(),
    config: { compact: true, history_turns: 4, summary_tokens: 60 },
  });
  await brain.ask("Question 1");
  await brain.ask("Question 2");
  const summaries = brain.llm.bodies.filter(isSummaryRequest);
  assert.equal(summaries.length, 1, "the window moved once");
  const summary = await brain.until((e) => e.type === "summary");
  assert.equal(summary.at(-1)?.type, "summary");

  await brain.send({ type: "retry" });
  await brain.until((e) => e.type === "state" && e.state === "idle");
  const retried = brain.llm.bodies.at(-1)!;
  assert.equal(retried.messages.at(-1)?.content?.endsWith("Question 2"), true);
  const carried = carriedSummary(retried);
  // The answer being replaced is not in what the model is told.
  assert.doesNotMatch(carried ?? "", /Answer 2/);
  assert.match(carried ?? "", /Answer 1/, "the turn before it is summarised");
  assert.equal(
    JSON.stringify(retried.messages).includes("Answer 2."),
    false,
    "nor anywhere in the request",
  );
});

/** The summary request: what it is made of, and what becomes the summary. */
import { contentText } from "../../src/llm/chat_types.ts";
import assert from "node:assert/strict";
import {
  planSummary,
  type RunningSummary,
  summaryFrom,
} from "../../src/assistant/summary_request.ts";
import type { ChatMessage } from "../../src/llm/chat_types.ts";

Deno.test("the summary is what the model wrote, without reasoning or a label, and nothing is taken from a sentence about summaries", () => {
  assert.equal(
    summaryFrom("<think>plan</think>\nThe user asked."),
    "The user asked.",
  );
  assert.equal(summaryFrom("<think>never closed"), null);
  assert.equal(summaryFrom("**Summary:** Paris in May."), "Paris in May.");
  assert.equal(
    summaryFrom("Summary of the earlier conversation:\nParis."),
    "Paris.",
  );
  assert.equal(
    summaryFrom("Summary statistics were discussed."),
    "Summary statistics were discussed.",
  );
  assert.equal(summaryFrom("  \n "), null);
});

/** What a summary is planned from: a conversation's turns and where its last request left them. */
interface Planned {
  turns: ChatMessage[][];
  summary: RunningSummary | null;
  lastRequest: ChatMessage[];
  windowStart: number;
}

/** A conversation of `count` turns of 100 tokens each, its last request as the window from `start` sent it. */
function conversation(count: number, start: number): Planned {
  const turns: ChatMessage[][] = [];
  for (let i = 0; i < count; i++) {
    turns.push([
      { role: "user", content: `[stamp] q${i}` },
      { role: "assistant", content: `a${i}` },
    ]);
  }
  const system: ChatMessage = { role: "system", content: "Be helpful." };
  return {
    turns,
    summary: null,
    windowStart: start,
    lastRequest: [
      system,
      ...turns.slice(start, count - 1).flat(),
      ...turns[count - 1]!,
    ],
  };
}

const plan = (
  c: Planned,
  upTo: number,
  nCtx: number | null,
  used: number | null,
) =>
  planSummary({
    ...c,
    upTo,
    maxTokens: 400,
    nCtx,
    used,
    fixed: 50,
    cost: () => 100,
    estimate: (text) => Math.ceil(text.length / 4),
  });

Deno.test("a summary request begins with the last request and its reply when they fit the context beside the summary", () => {
  const c = conversation(11, 0);
  const made = plan(c, 6, 8192, 1200)!;
  assert.equal(made.upTo, 6);
  assert.deepEqual(made.messages.slice(0, -1), c.lastRequest);
  assert.match(
    contentText(made.messages.at(-1)!.content),
    /its last 5 exchanges/,
  );
});

Deno.test("when they do not fit, it carries only the turns to summarise, as many as fit, so every request moves the summary on", () => {
  const c = conversation(30, 0);
  // The last request and reply took nearly all of the context.
  const made = plan(c, 20, 2048, 2000)!;
  assert.equal(made.messages[0]!.role, "system");
  // The turns it carries begin as the last request did.
  assert.deepEqual(
    made.messages.slice(0, -1),
    c.lastRequest!.slice(0, made.messages.length - 1),
  );
  // 2048 less the summary (400), a margin, the fixed start and the
  // instruction leaves room for a part of the twenty turns.
  assert.ok(made.upTo > 0 && made.upTo < 20, `upTo ${made.upTo}`);
  assert.equal(made.messages.length, 1 + 2 * made.upTo + 1);
  assert.match(
    contentText(made.messages.at(-1)!.content),
    /^Summarise this conversation:/,
  );
  // A window that moved past the summary without one: from its end, the
  // turns as they were sent (the summary in the question that carried it)...
  const behind = conversation(30, 12);
  const summary = { text: "Before.", turns: 4, tokens: 10, carrier: 6 };
  behind.summary = summary;
  const caught = plan(behind, 20, 8192, 3000)!;
  assert.equal(caught.upTo, 20);
  assert.equal(caught.messages[1]!.content, "[stamp] q4");
  assert.equal(
    caught.messages[5]!.content,
    "Summary of the earlier conversation:\nBefore.\n\n[stamp] q6",
  );
  assert.match(
    contentText(caught.messages.at(-1)!.content),
    /with the summary it began with/,
  );
  // ...and one that rode in a later question goes in the instruction, so the
  // turns keep the bytes the server has read.
  summary.carrier = 25;
  const later = plan(behind, 20, 8192, 3000)!;
  assert.ok(!JSON.stringify(later.messages.slice(0, -1)).includes("Before."));
  assert.match(
    contentText(later.messages.at(-1)!.content),
    /below: [\s\S]*\n\nSummary of the earlier conversation:\nBefore\.$/,
  );
  // Not one turn fits: no request.
  assert.equal(plan(conversation(30, 12), 20, 600, null), null);
});

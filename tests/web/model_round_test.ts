/**
 * The page's model (web/model.js) with the fields of SPEC section 12, fed
 * events shaped as docs/protocol.md defines them: a turn's timings, the
 * running summary, listening, search marks, each conversation's own context
 * meter, the link to the daemon, error codes, and the model's short name.
 */
import assert from "node:assert/strict";
import { CanvasModel, NO_DAEMON } from "../../web/model.js";
import { hitOf, shortModelName } from "../../web/model_parts.js";
import type { Event, Timings } from "../../src/protocol/protocol.ts";
import { idleHello as hello } from "../support/hello_fixture.ts";

/** What the daemon's socket carries, one line each. */
type Wire = Event;

function feed(model: CanvasModel, ...events: Wire[]) {
  const changed = new Set<string>();
  for (const event of events) {
    for (const part of model.apply(event)) changed.add(part);
  }
  return changed;
}

/** Read afresh: an assertion on a field narrows its type for later reads. */
const summaryOf = (model: CanvasModel) => model.current.summary;

const TIMINGS = {
  prompt_n: 40,
  cache_n: 1200,
  predicted_n: 64,
  prompt_ms: 800,
  predicted_ms: 3200,
};

Deno.test("done.timings is kept on the turn; a partial one or none leaves it out", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello(),
    { type: "user", text: "Hi" },
    { type: "token", delta: "Hello." },
    { type: "done", id: 3, stopped: false, timings: TIMINGS },
    { type: "user", text: "Again" },
    {
      type: "done",
      id: 3,
      stopped: false,
      // Short of figures, as a daemon of another version might send.
      timings: { prompt_n: 1 } as unknown as Timings,
    },
    { type: "user", text: "Once more" },
    { type: "done", id: 3, stopped: false },
  );
  assert.deepEqual(model.current.turns.map((t) => t.timings), [
    TIMINGS,
    undefined,
    undefined,
  ]);
});

Deno.test("the summary comes with the conversation and changes live, for the shown conversation only", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({ id: 5, turns: [{ user: "a", reply: "b", tools: [] }] }),
  );
  assert.equal(model.current.summary, null);
  let changed = feed(model, {
    type: "summary",
    id: 5,
    text: "You asked about a.",
    turns: 1,
  });
  assert.ok(changed.has("turns"));
  assert.deepEqual(model.current.summary, {
    text: "You asked about a.",
    turns: 1,
  });
  // Another conversation's summary is not this one's.
  changed = feed(model, { type: "summary", id: 9, text: "Other.", turns: 4 });
  assert.ok(!changed.has("turns"));
  assert.equal(summaryOf(model)?.text, "You asked about a.");
  feed(model, {
    type: "conversation",
    id: 9,
    turns: [],
    summary: { text: "Nine's.", turns: 2 },
  });
  assert.deepEqual(model.current.summary, { text: "Nine's.", turns: 2 });
  feed(model, { type: "conversation", id: 10, turns: [], summary: null });
  assert.equal(model.current.summary, null);
  // A private conversation's summary has id null.
  feed(model, { type: "conversation", id: null, turns: [], private: true });
  feed(model, { type: "summary", id: null, text: "Private.", turns: 3 });
  assert.equal(summaryOf(model)?.text, "Private.");
});

Deno.test("listening follows hello and the listening event; unknown_command for listen disables it", () => {
  const model = new CanvasModel();
  feed(model, hello());
  assert.equal(model.listening, null);
  feed(model, hello({ listening: true }));
  assert.equal(model.listening, true);
  feed(model, { type: "listening", on: false, ref: "voice-1" });
  assert.equal(model.listening, false);
  assert.equal(model.canListen, true);

  // Another command's unknown_command does not touch listening.
  feed(model, {
    type: "error",
    message: "unknown command frobnicate",
    code: "unknown_command",
    ref: "web-x-1",
  });
  assert.equal(model.canListen, true);
  model.takeNotices();

  model.listenSent("web-x-2");
  feed(model, {
    type: "error",
    message: "unknown command listen",
    code: "unknown_command",
    ref: "web-x-2",
  });
  assert.equal(model.canListen, false);
  assert.match(model.takeNotices()[0]!.text, /cannot listen/);
  // Matched by code: the same words under another code change nothing.
  const other = new CanvasModel();
  feed(other, hello());
  other.listenSent("r");
  feed(other, {
    type: "error",
    message: "unknown command listen",
    code: "bad_on",
    ref: "r",
  });
  assert.equal(other.canListen, true);
});

Deno.test("search marks are kept when they lie in the text, in order; otherwise the snippet is used", () => {
  const text = "Use **`sorted()`** to sort";
  const hit = hitOf({ id: 1, title: "t", snippet: "x", text, marks: [[0, 3]] });
  assert.deepEqual(hit.marks, [[0, 3]]);
  for (
    const marks of [[[0, 99]], [[5, 3]], [[4, 8], [2, 6]], [["a", 2]], "0,3"]
  ) {
    const bad = hitOf({
      id: 1,
      title: "t",
      snippet: "**x**",
      text,
      // Marks out of shape, as a daemon of another version might send.
      marks: marks as unknown as [number, number][],
    });
    assert.equal(bad.marks, undefined, JSON.stringify(marks));
  }
  assert.equal(hitOf({ id: 1, title: "t", snippet: "**x**" }).text, undefined);
});

Deno.test("a ctx event measures the conversation it names, whatever the page shows", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 1, ctx_max: 4096 }));
  // A reply in conversation 2 ends while the page shows conversation 1,
  // and no done of it came first (the page connected after it).
  feed(model, { type: "ctx", id: 2, used: 640, max: 4096, sent: 1, total: 1 });
  assert.equal(model.ctx.used, null, "not the conversation shown");
  feed(model, { type: "conversation", id: 2, turns: [] });
  assert.equal(model.ctx.used, 640);
});

Deno.test("each conversation shows its own context meter, never the one before", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({ id: 1, ctx_used: 900, ctx_max: 4096, ctx_sent: 2, ctx_total: 2 }),
  );
  assert.equal(model.ctx.used, 900);
  // A new conversation has no figure yet; the context size stays known.
  feed(model, { type: "conversation", id: null, turns: [] });
  assert.equal(model.ctx.used, null);
  assert.equal(model.ctx.max, 4096);
  feed(
    model,
    { type: "user", text: "Fresh" },
    { type: "done", id: 2, stopped: false },
    {
      type: "ctx",
      id: 2,
      used: 150,
      max: 4096,
      sent: 0,
      total: 0,
      summarized: 0,
    },
    { type: "state", state: "idle" },
  );
  assert.equal(model.ctx.used, 150);
  // Back to the first: its own last figure.
  feed(model, { type: "conversation", id: 1, turns: [] });
  assert.equal(model.ctx.used, 900);
  // A reply that finishes in another conversation measures that one.
  feed(
    model,
    { type: "conversation", id: 3, turns: [] },
    hello({ id: 3, ctx_used: 700, ctx_max: 4096 }),
  );
  assert.equal(model.ctx.used, null, "ctx_sent null: the figure is another's");
  feed(model, { type: "ctx", id: 3, used: 10, max: 4096, sent: 0, total: 0 });
  assert.equal(model.ctx.used, 10);
  assert.equal(model.ctx.summarized, null);
  feed(model, {
    type: "ctx",
    id: 3,
    used: 3000,
    max: 4096,
    sent: 4,
    total: 9,
    summarized: 5,
  });
  assert.equal(model.ctx.summarized, 5);
});

Deno.test("a hello's meter counts the turns the summary covers", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      id: 4,
      ctx_used: 3000,
      ctx_max: 4096,
      ctx_sent: 4,
      ctx_total: 9,
      ctx_summarized: 5,
    }),
  );
  assert.deepEqual(model.ctx, {
    used: 3000,
    max: 4096,
    sent: 4,
    total: 9,
    summarized: 5,
  });
  // Another conversation's hello: its figures, none carried over.
  feed(model, hello({ id: 6, ctx_used: 200, ctx_max: 4096 }));
  assert.equal(model.ctx.summarized, null);
});

Deno.test("a socket the bridge closed for want of a daemon is a daemon down, and hello brings it back", () => {
  const model = new CanvasModel();
  feed(model, hello());
  assert.equal(model.greeted, true);
  model.linked({ state: "down", code: NO_DAEMON, why: "no daemon answers" });
  assert.equal(model.greeted, false);
  assert.equal(model.link.code, 4001);
  feed(model, hello());
  assert.deepEqual(model.link, { state: "up", code: null, why: "" });
});

Deno.test("a failed turn keeps its error code", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello(),
    { type: "user", text: "Hi" },
    {
      type: "error",
      message: "llama-server unreachable at http://127.0.0.1:8080",
      code: "llama_unreachable",
      turn: true,
    },
  );
  assert.equal(model.current.turns[0]!.code, "llama_unreachable");
});

Deno.test("a model's short name is its file name without the folder and .gguf", () => {
  assert.equal(
    shortModelName("/home/sam/models/Qwen3-8B-Q4_K_M.gguf"),
    "Qwen3-8B-Q4_K_M",
  );
  assert.equal(shortModelName("C:\\models\\tiny.GGUF"), "tiny");
  assert.equal(shortModelName("qwen3-8b"), "qwen3-8b");
  assert.equal(shortModelName("org/model:Q4"), "model:Q4");
});

/**
 * The page's model of the memories and of search by meaning (web/model.js,
 * web/memory_model.js, web/sidebar_model.js), fed events shaped as the
 * daemon sends them (docs/protocol.md, "Memories" and "Search by
 * meaning"): the list, how many the conversation shown carries, the facts
 * proposed and how they close, the errors told and those that are not,
 * results found by meaning, words only, and indexing.
 */
import assert from "node:assert/strict";
import { CanvasModel } from "../../web/model.js";
import { memoryProblem } from "../../web/memory_model.js";
import type {
  Event,
  MemoryView,
  ProposalView,
} from "../../src/protocol/protocol.ts";
import { type Hello, idleHello } from "../support/hello_fixture.ts";

/** A `hello` as `helloEvent` builds it, memories counted. */
function hello(extra: Partial<Hello> = {}): Hello {
  return idleHello({
    id: 4,
    memories: 2,
    ...extra,
  });
}

function feed(model: CanvasModel, ...events: Event[]) {
  const changed = new Set<string>();
  for (const event of events) {
    for (const part of model.apply(event)) changed.add(part);
  }
  return changed;
}

const notices = (model: CanvasModel) =>
  model.takeNotices().map((n: { text: string }) => n.text);

const memory = (id: number, text: string, updated = 1_760_000_000 + id) => ({
  id,
  text,
  created: 1_760_000_000,
  updated,
  source: id % 2 === 0 ? { id: 4, turn: 0 } : null,
} satisfies MemoryView);

const fact = (proposal: string, text: string): ProposalView => ({
  proposal,
  text,
  source: { id: 4, turn: 1 },
});

/** Read afresh: an assertion on a field narrows its type for later reads. */
const results = (model: CanvasModel) => model.results;

const proposalTexts = (model: CanvasModel) =>
  [...model.memory.proposals.values()].map((p) => p.text);

Deno.test("a daemon that counts memories in its hello has them; one that does not has no panel", () => {
  const model = new CanvasModel();
  feed(model, hello({ memories: 3 }));
  assert.equal(model.memory.supported, true);
  assert.equal(model.memory.carried, 3);
  assert.equal(model.memory.items, null, "not sent until asked for");
  const old = new CanvasModel();
  const { memories: _, ...before } = hello();
  feed(old, before);
  assert.equal(old.memory.supported, false);
  assert.equal(old.memory.carried, null);
});

Deno.test("the memories are shown as sent, newest first, and each change replaces the list", () => {
  const model = new CanvasModel();
  feed(model, hello());
  const changed = feed(model, {
    type: "memories",
    items: [memory(2, "Works on Tern"), memory(1, "Prefers metric units")],
    ref: "web-1",
  });
  assert.ok(changed.has("memories"));
  assert.deepEqual(model.memory.items?.map((m) => m.text), [
    "Works on Tern",
    "Prefers metric units",
  ]);
  assert.deepEqual(model.memory.items?.[0]?.source, { id: 4, turn: 0 });
  assert.equal(model.memory.items?.[1]?.source, null);
  // Another client forgot one: every client gets the new list.
  feed(model, { type: "memories", items: [memory(2, "Works on Tern")] });
  assert.deepEqual(model.memory.items?.map((m) => m.id), [2]);
});

Deno.test("how many memories the conversation shown carries follows hello, conversation and its own ctx only", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 4, memories: 2 }));
  feed(model, {
    type: "conversation",
    id: 9,
    turns: [],
    summary: null,
    memories: 5,
  });
  assert.equal(model.memory.carried, 5);
  // A reply saved in another conversation measures that one.
  feed(model, {
    type: "ctx",
    id: 4,
    used: 10,
    max: 100,
    sent: 0,
    total: 0,
    memories: 1,
  });
  assert.equal(model.memory.carried, 5);
  const changed = feed(model, {
    type: "ctx",
    id: 9,
    used: 10,
    max: 100,
    sent: 0,
    total: 0,
    memories: 6,
  });
  assert.ok(changed.has("memories"));
  assert.equal(model.memory.carried, 6);
  // A new conversation before its first reply, then its first ctx.
  feed(model, { type: "conversation", id: null, turns: [], memories: 7 });
  assert.equal(model.memory.carried, 7);
  feed(
    model,
    { type: "user", text: "Hi" },
    { type: "done", id: 10, stopped: false },
    { type: "ctx", id: 10, used: 5, max: 100, sent: 0, total: 0, memories: 6 },
  );
  // The first request took the newest that fit its memory_tokens.
  assert.equal(model.memory.carried, 6);
});

Deno.test("a remember, a rewrite and a forget of this page's find their outcome by ref; a refusal is told as a command error", () => {
  const model = new CanvasModel();
  feed(model, hello());
  model.memory.sent("web-2", { kind: "add" });
  model.memory.sent("web-3", { kind: "edit", id: 1 });
  model.memory.sent("web-4", { kind: "forget", id: 9 });
  feed(model, {
    type: "memories",
    items: [memory(3, "Has a cat"), memory(1, "Likes tea")],
    ref: "web-2",
  });
  feed(model, {
    type: "error",
    code: "bad_memory",
    message: "bad memory",
    ref: "web-3",
  });
  feed(model, {
    type: "error",
    code: "no_such_memory",
    message: "no such memory",
    ref: "web-4",
  });
  assert.deepEqual(model.memory.takeOutcomes(), [
    { kind: "add", id: null, ok: true },
    { kind: "edit", id: 1, ok: false },
    { kind: "forget", id: 9, ok: false },
  ]);
  assert.deepEqual(notices(model), ["bad memory", "no such memory"]);
  // Another client's change is no outcome of this page's.
  feed(model, { type: "memories", items: [], ref: "web-other-1" });
  assert.deepEqual(model.memory.takeOutcomes(), []);
  // A command whose connection dropped before its answer waits no more.
  model.memory.sent("web-8", { kind: "edit", id: 3 });
  model.memory.sent("web-9", { kind: "answer", proposal: "p1" });
  feed(model, hello());
  assert.deepEqual(model.memory.takeOutcomes(), [
    { kind: "edit", id: 3, ok: false },
    { kind: "answer", id: null, ok: false },
  ]);
  assert.deepEqual([...model.memory.answering], []);
});

Deno.test("facts proposed show from hello and proposed, and close on decided from any client", () => {
  const model = new CanvasModel();
  feed(model, hello({ proposed: [fact("p1", "Prefers metric units")] }));
  assert.deepEqual(proposalTexts(model), ["Prefers metric units"]);
  const changed = feed(model, {
    type: "proposed",
    items: [fact("p2", "Works on Tern"), fact("p3", "Has a dog")],
  });
  assert.ok(changed.has("proposals"));
  assert.deepEqual(proposalTexts(model), [
    "Prefers metric units",
    "Works on Tern",
    "Has a dog",
  ]);
  // Another client kept one; refused another.
  feed(model, { type: "decided", proposal: "p2", accepted: true });
  feed(model, { type: "decided", proposal: "p1", accepted: false });
  assert.deepEqual(proposalTexts(model), ["Has a dog"]);
  assert.deepEqual(notices(model), []);
  // A new connection has only what its hello says.
  feed(model, hello());
  assert.deepEqual(proposalTexts(model), []);
});

Deno.test("a proposal this page answers waits for decided; no_such_proposal closes it quietly; bad_memory is told and leaves it", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({ proposed: [fact("p1", "Likes tea"), fact("p2", "Has a cat")] }),
  );
  model.memory.sent("web-5", { kind: "answer", proposal: "p1" });
  model.memory.sent("web-6", { kind: "answer", proposal: "p2" });
  assert.deepEqual([...model.memory.answering].sort(), ["p1", "p2"]);
  // Another client answered p1 first.
  feed(model, {
    type: "error",
    code: "no_such_proposal",
    message: "no such proposal",
    ref: "web-5",
  });
  assert.deepEqual(proposalTexts(model), ["Has a cat"]);
  assert.deepEqual(notices(model), [], "nothing to tell");
  // A rewording the daemon refuses: the card stays, to be fixed.
  feed(model, {
    type: "error",
    code: "bad_memory",
    message: "bad memory",
    ref: "web-6",
  });
  assert.deepEqual(proposalTexts(model), ["Has a cat"]);
  assert.deepEqual(notices(model), ["bad memory"]);
  assert.deepEqual([...model.memory.answering], []);
  // Its accept: the memories list comes first, the card stays until decided.
  model.memory.sent("web-7", { kind: "answer", proposal: "p2" });
  feed(model, {
    type: "memories",
    items: [memory(1, "Has a cat")],
    ref: "web-7",
  });
  assert.deepEqual([...model.memory.answering], ["p2"]);
  feed(model, {
    type: "decided",
    proposal: "p2",
    accepted: true,
    ref: "web-7",
  });
  assert.deepEqual(proposalTexts(model), []);
  assert.deepEqual([...model.memory.answering], []);
});

Deno.test("a memory's text is judged as the daemon judges it: 1 to 500 characters once trimmed, counted as code points", () => {
  assert.equal(memoryProblem("   \n "), "blank");
  assert.equal(memoryProblem(" Likes tea "), null);
  assert.equal(memoryProblem("a".repeat(500)), null);
  assert.equal(memoryProblem(`  ${"a".repeat(500)}  `), null);
  assert.equal(memoryProblem("a".repeat(501)), "long");
  // 500 emoji are 1,000 UTF-16 units and still one memory.
  assert.equal(memoryProblem("🐱".repeat(500)), null);
  assert.equal(memoryProblem("🐱".repeat(501)), "long");
});

Deno.test("results found by meaning keep their by; the daemon searches by meaning once its results carry it", () => {
  const model = new CanvasModel();
  feed(model, hello());
  assert.equal(model.meaning, null);
  model.searchSent("web-1", "holiday");
  feed(model, {
    type: "results",
    items: [
      {
        id: 3,
        title: "Trip",
        snippet: "**holiday** in Oslo",
        text: "holiday in Oslo",
        marks: [[0, 7]],
        by: "both",
      },
      {
        id: 5,
        title: "Fjords",
        snippet: "we took the ferry",
        text: "we took the ferry",
        marks: [],
        by: "meaning",
      },
    ],
    ref: "web-1",
  });
  assert.deepEqual(model.results?.map((hit) => [hit.id, hit.by]), [
    [3, "both"],
    [5, "meaning"],
  ]);
  assert.deepEqual(model.results?.[1]?.marks, []);
  assert.equal(model.meaning, true);
  // A daemon without embeddings sends no by.
  model.searchSent("web-2", "holidays");
  feed(model, {
    type: "results",
    items: [{ id: 3, title: "Trip", snippet: "**holidays**" }],
    ref: "web-2",
  });
  assert.equal(model.meaning, false);
  assert.equal(model.results?.[0]?.by, undefined);
});

Deno.test("words only: an answer of the other mode is dropped, and the query is searched again in the new one", () => {
  const model = new CanvasModel();
  feed(model, hello());
  model.searchSent("web-1", "tea");
  model.wordsOnly = true;
  assert.equal(model.searching("tea"), false, "the words-only search is due");
  model.searchSent("web-2", "tea");
  assert.equal(model.searching("tea"), true);
  feed(model, {
    type: "results",
    items: [{ id: 1, title: "A", snippet: "x", by: "meaning" }],
    ref: "web-1",
  });
  assert.equal(model.results, null, "an answer by meaning is not shown");
  feed(model, {
    type: "results",
    items: [{ id: 2, title: "B", snippet: "**tea**", by: "words" }],
    ref: "web-2",
  });
  assert.deepEqual(results(model)?.map((hit) => hit.id), [2]);
  assert.equal(model.resultsByWords, true);
});

Deno.test("meaning_off to a search is no error to tell: search by meaning is off, and words only with it", () => {
  const model = new CanvasModel();
  feed(model, hello());
  model.meaning = true;
  model.wordsOnly = true;
  model.searchSent("web-1", "tea");
  const changed = feed(model, {
    type: "error",
    code: "meaning_off",
    message:
      "search by meaning is off: set embed_url to an embeddings endpoint",
    ref: "web-1",
  });
  assert.ok(changed.has("list"));
  assert.equal(model.meaning, false);
  assert.equal(model.wordsOnly, false);
  assert.deepEqual(notices(model), []);
  assert.equal(model.askAgain, true, "searched again, without words only");
  assert.equal(model.searching("tea"), false);
  // Another search error is told.
  model.searchSent("web-2", "tea");
  feed(model, {
    type: "error",
    code: "bad_query",
    message: "bad query",
    ref: "web-2",
  });
  assert.deepEqual(notices(model), ["bad query"]);
});

Deno.test("indexing shows from hello and each report, and is gone when done reaches total", () => {
  const model = new CanvasModel();
  feed(model, hello({ indexing: { done: 10, total: 400 } }));
  assert.deepEqual(model.indexing, { done: 10, total: 400 });
  assert.equal(model.meaning, true, "only a daemon with embeddings indexes");
  const changed = feed(model, { type: "indexing", done: 250, total: 400 });
  assert.ok(changed.has("list"));
  assert.deepEqual(model.indexing, { done: 250, total: 400 });
  feed(model, { type: "indexing", done: 400, total: 400 });
  assert.equal(model.indexing, null);
  // A hello without it: nothing runs.
  feed(model, { type: "indexing", done: 1, total: 3 }, hello());
  assert.equal(model.indexing, null);
});

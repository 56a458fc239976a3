/**
 * The page's model of the daemon (web/model.js), fed events shaped exactly
 * as the daemon sends them (the `Event` type of src/protocol.ts, which
 * `helloEvent` in src/assistant/status.ts and the reply loop build): the
 * reply in flight for a late tab and which conversation it belongs to,
 * references, the context budget, the backend, conversation control,
 * approvals and search.
 */
import assert from "node:assert/strict";
import { CanvasModel } from "../../web/model.js";
import type {
  BackendView,
  Event,
  HelloPending,
  TurnView,
} from "../../src/protocol/protocol.ts";
import { type Hello, idleHello } from "../support/hello_fixture.ts";

/** What the daemon's socket carries, one line each. */
type Wire = Event;

const BACKEND_UP: BackendView = {
  state: "up",
  url: "http://127.0.0.1:8080",
  model: "tiny",
  ctx_max: 4096,
  message: null,
};

/** A `hello` as `helloEvent` builds it: every field present. */
function hello(extra: Partial<Hello> = {}): Hello {
  return idleHello({
    backend: BACKEND_UP,
    ...extra,
  });
}

/** `hello.pending`: the reply in flight and the conversation it belongs to. */
function pending(
  id: number | null,
  extra: Partial<HelloPending> = {},
): HelloPending {
  return { id, user: "", reply: "", think: "", tools: [], ...extra };
}

function feed(model: CanvasModel, ...events: Wire[]) {
  const changed = new Set<string>();
  for (const event of events) {
    for (const part of model.apply(event)) changed.add(part);
  }
  return changed;
}

const turn = (user: string, reply: string, tools: string[] = []): TurnView => ({
  user,
  reply,
  tools,
});

const notices = (model: CanvasModel) =>
  model.takeNotices().map((n: { text: string }) => n.text);

/** Read afresh: an assertion on a getter narrows its type for later reads. */
const shown = (model: CanvasModel) => model.shownPending;

Deno.test("a hello shows its conversation, the backend and the meter", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      id: 4,
      turns: [turn("Hi", "Hello.", ["date"])],
      ctx_used: 900,
      ctx_max: 4096,
      ctx_sent: 1,
      ctx_total: 1,
      ctx_summarized: null,
      model: "tiny",
    }),
  );
  assert.equal(model.greeted, true);
  assert.deepEqual(model.backend, BACKEND_UP);
  assert.deepEqual(model.ctx, {
    used: 900,
    max: 4096,
    sent: 1,
    total: 1,
    summarized: null,
  });
  assert.equal(model.current.private, false);
  assert.equal(model.current.id, 4);
  assert.deepEqual(model.current.turns, [{
    user: "Hi",
    reply: "Hello.",
    think: "",
    tools: [{ name: "date", done: true }],
    status: null,
  }]);
  assert.equal(model.pending, null);
  assert.equal(model.busy, false);
});

Deno.test("a turn streams into the reply in flight and is kept at done", () => {
  const model = new CanvasModel();
  feed(model, hello());
  feed(
    model,
    { type: "user", text: "Weather?", ref: "web-1" },
    { type: "state", state: "thinking" },
    { type: "think", delta: "Let me " },
    { type: "think", delta: "look." },
    { type: "state", state: "tool", tool: "weather" },
    { type: "tool", name: "weather", done: false },
  );
  assert.equal(model.state, "tool");
  assert.equal(model.tool, "weather");
  assert.deepEqual(model.shownPending?.tools, [{
    name: "weather",
    done: false,
  }]);
  feed(
    model,
    { type: "tool", name: "weather", done: true },
    { type: "token", delta: "Sunny" },
    { type: "token", delta: "." },
  );
  assert.equal(model.shownPending?.reply, "Sunny.");
  assert.equal(model.shownPending?.think, "Let me look.");
  const changed = feed(
    model,
    { type: "done", id: 7, stopped: false, ref: "web-1" },
    { type: "ctx", id: 1, used: 1200, max: 4096, sent: 0, total: 0 },
    { type: "state", state: "idle" },
  );
  assert.ok(changed.has("turns"));
  assert.equal(model.pending, null);
  assert.equal(model.busy, false);
  assert.equal(model.current.id, 7);
  assert.equal(model.current.turns.length, 1);
  assert.equal(model.current.turns[0]!.reply, "Sunny.");
  assert.equal(model.current.turns[0]!.status, null);
});

Deno.test("a stopped reply is shown as stopped, a failed one with its error", () => {
  const model = new CanvasModel();
  feed(model, hello());
  feed(
    model,
    { type: "user", text: "Long story" },
    { type: "token", delta: "Once" },
    { type: "done", id: null, stopped: true },
  );
  assert.equal(model.current.turns.at(-1)!.status, "stopped");
  assert.equal(model.current.id, null);
  feed(
    model,
    { type: "user", text: "Again" },
    {
      type: "error",
      code: "llama_unreachable",
      message: "llama-server unreachable at http://127.0.0.1:8080",
      turn: true,
    },
  );
  const failed = model.current.turns.at(-1)!;
  assert.equal(failed.status, "error");
  assert.match(failed.error!, /unreachable/);
  // A command's error is a notice, not a turn.
  feed(model, {
    type: "error",
    code: "unknown_command",
    message: "unknown command retry",
  });
  assert.deepEqual(model.takeNotices().map((n: { text: string }) => n.text), [
    "unknown command retry",
  ]);
  assert.equal(model.current.turns.length, 2);
});

Deno.test("a tab that joins mid-reply shows hello.pending when it is the shown conversation's", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      state: "thinking",
      id: 3,
      turns: [turn("First", "One.")],
      pending: pending(3, {
        user: "Second",
        reply: "So far",
        think: "Hm",
        tools: ["date"],
      }),
    }),
  );
  assert.equal(model.busy, true);
  assert.deepEqual(model.shownPending, {
    key: "id:3",
    id: 3,
    user: "Second",
    reply: "So far",
    think: "Hm",
    tools: [{ name: "date", done: true }],
    replaces: false,
  });
  feed(model, { type: "token", delta: ", and more." }, {
    type: "done",
    id: 3,
    stopped: false,
  });
  assert.deepEqual(
    model.current.turns.map((t: { reply: string }) => t.reply),
    ["One.", "So far, and more."],
  );
});

Deno.test("a late tab in the unsaved conversation a reply will create shows it and takes its id at done", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      state: "thinking",
      id: null,
      pending: pending(null, { user: "First question", reply: "Par" }),
    }),
  );
  assert.equal(shown(model)?.reply, "Par");
  feed(
    model,
    { type: "token", delta: "tly" },
    { type: "done", id: 8, stopped: false },
    { type: "state", state: "idle" },
  );
  assert.equal(model.current.id, 8);
  assert.deepEqual(model.current.turns.map((t: { reply: string }) => t.reply), [
    "Partly",
  ]);
});

Deno.test("a late tab showing another conversation than the reply's keeps that reply out of it", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      state: "thinking",
      id: 3,
      turns: [turn("Here", "Shown.")],
      pending: pending(5, { user: "Over there", reply: "Stream" }),
    }),
    {
      type: "conversations",
      items: [
        { id: 5, title: "Over there", updated: 2 },
        { id: 3, title: "Here", updated: 1 },
      ],
    },
  );
  assert.equal(model.busy, true);
  assert.equal(shown(model), null);
  assert.equal(model.pending?.id, 5);
  feed(model, { type: "token", delta: "ing" });
  assert.equal(shown(model), null);
  // Opened while it streams: it shows there, with what came so far.
  feed(model, { type: "conversation", id: 5, turns: [] });
  assert.equal(shown(model)?.reply, "Streaming");
  feed(model, { type: "conversation", id: 3, turns: [turn("Here", "Shown.")] });
  feed(
    model,
    { type: "done", id: 5, stopped: false },
    { type: "state", state: "idle" },
  );
  assert.equal(model.current.id, 3);
  assert.deepEqual(model.current.turns.map((t: { reply: string }) => t.reply), [
    "Shown.",
  ]);
  assert.deepEqual(notices(model), ["The reply was saved in “Over there”."]);
});

Deno.test("a late tab after new during a reply stays in the new conversation and never takes the reply's id", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      state: "thinking",
      id: null,
      pending: pending(5, { user: "Still going", reply: "Part" }),
    }),
  );
  assert.equal(shown(model), null);
  assert.equal(model.busy, true);
  feed(
    model,
    { type: "token", delta: " two" },
    { type: "done", id: 5, stopped: false },
    { type: "ctx", id: 1, used: 300, max: 4096, sent: 2, total: 2 },
    { type: "state", state: "idle" },
  );
  assert.equal(model.current.id, null);
  assert.deepEqual(model.current.turns, []);
  assert.equal(model.title, "New conversation");
  assert.equal(model.busy, false);
});

Deno.test("a late tab gets pending null while a reply runs that will create its own conversation: it streams elsewhere", () => {
  const model = new CanvasModel();
  // `new` during the first reply of an unsaved conversation: both ids
  // would be null, so the daemon leaves the reply out; `state` says it runs.
  feed(model, hello({ state: "thinking", id: null, pending: null }));
  assert.equal(model.busy, true);
  assert.equal(shown(model), null);
  assert.notEqual(model.pending, null);
  feed(
    model,
    { type: "think", delta: "Hm" },
    { type: "token", delta: "Not here" },
  );
  assert.equal(shown(model), null);
  feed(
    model,
    { type: "done", id: 6, stopped: false },
    { type: "state", state: "idle" },
  );
  assert.equal(model.current.id, null);
  assert.deepEqual(model.current.turns, []);
  assert.equal(model.busy, false);
  assert.deepEqual(notices(model), [
    "The reply was saved in “Conversation 6”.",
  ]);
  // Its next reply is the shown conversation's again.
  feed(
    model,
    { type: "user", text: "Mine" },
    { type: "token", delta: "Yes." },
    { type: "done", id: 7, stopped: false },
  );
  assert.equal(model.current.id, 7);
  assert.equal(model.current.turns.length, 1);
});

Deno.test("idle ends a reply the tab never saw end", () => {
  const model = new CanvasModel();
  feed(model, hello({ state: "thinking", pending: null }));
  assert.equal(model.busy, true);
  const changed = feed(model, { type: "state", state: "idle" });
  assert.ok(changed.has("pending"));
  assert.equal(model.pending, null);
  assert.equal(model.busy, false);
});

Deno.test("a reply goes on streaming in the conversation it started in when another is opened", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 1, turns: [turn("a", "b")] }));
  feed(model, { type: "user", text: "Slow one" }, {
    type: "token",
    delta: "Part",
  });
  feed(model, { type: "conversation", id: 2, turns: [turn("x", "y")] });
  assert.equal(model.shownPending, null);
  assert.notEqual(model.pending, null);
  // Reopened while it streams: shown again.
  feed(model, { type: "conversation", id: 1, turns: [turn("a", "b")] });
  assert.equal(shown(model)?.reply, "Part");
  feed(model, { type: "conversation", id: 2, turns: [turn("x", "y")] });
  feed(model, {
    type: "conversations",
    items: [{ id: 1, title: "a", updated: 1 }],
  });
  feed(model, { type: "done", id: 1, stopped: false });
  assert.equal(model.current.turns.length, 1);
  assert.equal(model.current.id, 2);
  assert.deepEqual(notices(model), ["The reply was saved in “a”."]);
});

Deno.test("11.2: the meter shows sent and total, and a cut reply says what cut it", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({ id: 1, ctx_used: 10, ctx_max: 4096, ctx_sent: 6, ctx_total: 14 }),
  );
  assert.deepEqual(model.ctx, {
    used: 10,
    max: 4096,
    sent: 6,
    total: 14,
    summarized: null,
  });
  feed(model, {
    type: "ctx",
    id: 1,
    used: 3900,
    max: 4096,
    sent: 5,
    total: 15,
  });
  assert.deepEqual(model.ctx, {
    used: 3900,
    max: 4096,
    sent: 5,
    total: 15,
    summarized: null,
  });
  feed(
    model,
    { type: "user", text: "More" },
    { type: "token", delta: "Cut" },
    {
      type: "done",
      id: 9,
      stopped: false,
      truncated: true,
      truncated_by: "context",
    },
    { type: "user", text: "Shorter" },
    { type: "token", delta: "Cut too" },
    {
      type: "done",
      id: 9,
      stopped: false,
      truncated: true,
      truncated_by: "max_tokens",
    },
    { type: "user", text: "Whole" },
    { type: "done", id: 9, stopped: false },
  );
  assert.deepEqual(
    model.current.turns.map((t) => [
      t.status,
      t.truncatedBy,
    ]),
    [["truncated", "context"], ["truncated", "max_tokens"], [null, undefined]],
  );
});

Deno.test("11.3: the backend from hello and its changes", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      backend: {
        state: "unknown",
        url: "http://127.0.0.1:8080",
        model: null,
        ctx_max: null,
        message: null,
      },
    }),
  );
  assert.equal(model.backend?.state, "unknown");
  const changed = feed(model, {
    type: "backend",
    state: "down",
    url: "http://127.0.0.1:8080",
    model: null,
    ctx_max: null,
    message: "connection refused",
  });
  assert.ok(changed.has("status"));
  assert.deepEqual(model.backend, {
    state: "down",
    url: "http://127.0.0.1:8080",
    model: null,
    ctx_max: null,
    message: "connection refused",
  });
  feed(model, {
    type: "backend",
    state: "up",
    url: "http://127.0.0.1:8080",
    model: "tiny",
    ctx_max: 4096,
    message: null,
  });
  assert.equal(model.backend?.model, "tiny");
});

Deno.test("11.4: retry replaces the last kept turn only when it finishes", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 2, turns: [turn("Q1", "A1"), turn("Q2", "A2")] }));
  feed(
    model,
    { type: "user", text: "Q2", replaces: true, ref: "web-3" },
    { type: "token", delta: "New" },
  );
  assert.equal(model.shownPending?.replaces, true);
  feed(model, { type: "done", id: 2, stopped: true, replaces: true });
  assert.deepEqual(
    model.current.turns.map((t: { reply: string }) => t.reply),
    ["A1", "A2"],
  );
  assert.match(model.takeNotices()[0]!.text, /earlier reply is kept/);

  // A stopped ask leaves an unsaved turn; a finished edit replaces the kept one and it.
  feed(
    model,
    { type: "user", text: "Q3" },
    { type: "done", id: 2, stopped: true },
    { type: "user", text: "Q2 edited", replaces: true },
    { type: "token", delta: "A2 edited" },
    { type: "done", id: 2, stopped: false, replaces: true },
  );
  assert.deepEqual(
    model.current.turns.map((t: { user: string }) => t.user),
    ["Q1", "Q2 edited"],
  );
});

Deno.test("11.4: rename, private conversations and export", () => {
  const model = new CanvasModel();
  feed(model, hello({ id: 5, turns: [turn("Old", "x")] }));
  feed(model, {
    type: "conversations",
    items: [{ id: 5, title: "Old title", updated: 1 }],
  });
  assert.equal(model.title, "Old title");
  const changed = feed(model, {
    type: "renamed",
    id: 5,
    title: "Better title",
  });
  assert.ok(changed.has("list"));
  assert.equal(model.title, "Better title");

  feed(model, { type: "conversation", id: null, turns: [], private: true });
  assert.equal(model.current.private, true);
  assert.equal(model.title, "Private conversation");
  feed(
    model,
    { type: "user", text: "Secret" },
    { type: "token", delta: "Kept in memory." },
    { type: "done", id: null, stopped: false },
  );
  assert.equal(model.current.id, null);
  assert.equal(model.current.turns.length, 1);
  // An export answer changes nothing shown (the page downloads it).
  const exported = feed(model, {
    type: "export",
    id: 5,
    format: "markdown",
    text: "# Better title",
  });
  assert.deepEqual([...exported], []);
  // A hello of a private conversation says so too.
  const other = new CanvasModel();
  feed(other, hello({ private: true }));
  assert.equal(other.current.private, true);
});

Deno.test("11.5: a tool call waits for approval, in hello too, and every tab closes its prompt", () => {
  const model = new CanvasModel();
  feed(model, hello());
  feed(
    model,
    { type: "user", text: "Weather in Paris?" },
    { type: "state", state: "confirm" },
    {
      type: "confirm",
      call: "c1",
      tool: "weather",
      args: { place: "Paris" },
    },
  );
  assert.equal(model.state, "confirm");
  assert.deepEqual([...model.confirms.values()], [{
    call: "c1",
    tool: "weather",
    args: { place: "Paris" },
  }]);
  feed(model, { type: "approved", call: "c1", allow: false });
  assert.equal(model.confirms.size, 0);
  assert.deepEqual(model.shownPending?.tools, [{
    name: "weather",
    allowed: false,
  }]);

  const late = new CanvasModel();
  feed(
    late,
    hello({
      state: "confirm",
      tool: "weather",
      pending: pending(null, {
        user: "Weather in Paris?",
        confirm: { call: "c2", tool: "weather", args: { place: "Paris" } },
      }),
    }),
  );
  assert.equal(late.confirms.get("c2")?.tool, "weather");
  // A stop ends the wait: idle closes every prompt.
  feed(late, { type: "done", id: null, stopped: true }, {
    type: "state",
    state: "idle",
  });
  assert.equal(late.confirms.size, 0);
});

Deno.test("11.5: a late tab takes the waiting call from hello.confirm, whichever conversation it shows", () => {
  const call = { call: "c3", tool: "weather", args: { place: "Oslo" } };
  // The reply is in another conversation than the one shown.
  const elsewhere = new CanvasModel();
  feed(
    elsewhere,
    hello({
      state: "confirm",
      tool: "weather",
      id: 2,
      pending: pending(7, { user: "Weather?", confirm: call }),
      confirm: call,
    }),
  );
  assert.equal(shown(elsewhere), null);
  assert.deepEqual([...elsewhere.confirms.values()], [call]);
  // Opening another conversation leaves the prompt: approvals are shared.
  feed(elsewhere, { type: "conversation", id: 3, turns: [] });
  assert.deepEqual([...elsewhere.confirms.values()], [call]);
  feed(elsewhere, { type: "approved", call: "c3", allow: true });
  assert.equal(elsewhere.confirms.size, 0);
  assert.deepEqual(elsewhere.pending?.tools, [{
    name: "weather",
    allowed: true,
  }]);

  // The reply is left out of the hello (`pending: null`): only
  // hello.confirm tells of the call.
  const left = new CanvasModel();
  feed(
    left,
    hello({ state: "confirm", tool: "weather", pending: null, confirm: call }),
  );
  assert.deepEqual([...left.confirms.values()], [call]);
  assert.equal(shown(left), null);
  assert.equal(left.busy, true);

  // hello.confirm wins over pending.confirm; nothing waits without either.
  const both = new CanvasModel();
  feed(
    both,
    hello({
      state: "confirm",
      pending: pending(null, { confirm: { ...call, call: "old" } }),
      confirm: call,
    }),
  );
  assert.deepEqual([...both.confirms.keys()], ["c3"]);
  feed(both, hello({ state: "thinking", pending: pending(null) }));
  assert.equal(both.confirms.size, 0);
});

Deno.test("search results are paired with their query by ref", () => {
  const model = new CanvasModel();
  feed(model, hello());
  const hit = (id: number, title: string) => ({
    id,
    title,
    snippet: `**${title}**`,
  });

  // Typed on: the first query's answer comes after the second was sent.
  model.searchSent("web-2", "ca");
  model.searchSent("web-3", "cat");
  assert.equal(model.searching("cat"), true);
  const stale = feed(model, {
    type: "results",
    items: [hit(1, "car")],
    ref: "web-2",
  });
  assert.equal(stale.has("list"), false);
  assert.equal(model.results, null);
  feed(model, { type: "results", items: [hit(2, "cat")], ref: "web-3" });
  assert.deepEqual(model.results, [hit(2, "cat")]);
  assert.equal(model.resultsFor, "cat");

  // A search that fails is answered by its error: the next query's results
  // are that query's.
  model.searchSent("web-4", "dog");
  feed(model, {
    type: "error",
    code: "command_failed",
    message: "search failed",
    ref: "web-4",
  });
  assert.deepEqual(notices(model), ["search failed"]);
  assert.equal(model.searching("dog"), false);
  model.searchSent("web-5", "dog");
  feed(model, { type: "results", items: [hit(3, "dog")], ref: "web-5" });
  assert.equal(model.resultsFor, "dog");
  assert.deepEqual(model.results, [hit(3, "dog")]);

  // The box emptied before the answer came: the conversations stay.
  model.searchSent("web-6", "emu");
  model.clearSearch();
  const late = feed(model, {
    type: "results",
    items: [hit(4, "emu")],
    ref: "web-6",
  });
  assert.equal(late.has("list"), false);
  assert.equal(model.results, null);
  assert.equal(model.resultsFor, null);
  // Another command's answer, or another connection's, is no search's.
  model.searchSent("web-7", "fox");
  feed(model, { type: "results", items: [hit(5, "x")], ref: "web-1" });
  assert.equal(model.results, null);
  // A new connection's hello: searches sent before it are never answered.
  feed(model, hello());
  assert.equal(model.searching("fox"), false);
});

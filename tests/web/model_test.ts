/**
 * The page's model of the daemon (web/model.js), fed events shaped as the
 * README and SPEC sections 4 and 11 define them, including the ones a
 * daemon adds with references, the context budget, the backend, conversation
 * control and approvals: each is shown once it arrives, and its absence
 * shows nothing.
 */
import assert from "node:assert/strict";
import { CanvasModel } from "../../web/model.js";

function hello(extra: Record<string, unknown> = {}) {
  return {
    type: "hello",
    state: "idle",
    model: null,
    ctx_used: null,
    ctx_max: null,
    id: null,
    turns: [],
    pending: null,
    ...extra,
  };
}

function feed(model: CanvasModel, ...events: Record<string, unknown>[]) {
  const changed = new Set<string>();
  for (const event of events) {
    for (const part of model.apply(event)) changed.add(part);
  }
  return changed;
}

const turn = (user: string, reply: string, tools: string[] = []) => ({
  user,
  reply,
  tools,
});

Deno.test("a hello of today's daemon shows its conversation and no backend, meter parts or privacy", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      id: 4,
      turns: [turn("Hi", "Hello.", ["date"])],
      ctx_used: 900,
      ctx_max: 4096,
      model: "tiny",
    }),
  );
  assert.equal(model.greeted, true);
  assert.equal(model.backend, null);
  assert.deepEqual(model.ctx, {
    used: 900,
    max: 4096,
    sent: null,
    total: null,
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
    { type: "ctx", used: 1200, max: 4096 },
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
      message: "llama-server unreachable at http://127.0.0.1:8080",
      turn: true,
    },
  );
  const failed = model.current.turns.at(-1)!;
  assert.equal(failed.status, "error");
  assert.match(failed.error!, /unreachable/);
  // A command's error is a notice, not a turn.
  feed(model, { type: "error", message: "unknown command retry" });
  assert.deepEqual(model.takeNotices().map((n: { text: string }) => n.text), [
    "unknown command retry",
  ]);
  assert.equal(model.current.turns.length, 2);
});

Deno.test("a tab that joins mid-reply starts from hello.pending", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({
      state: "thinking",
      id: 3,
      turns: [turn("First", "One.")],
      pending: {
        user: "Second",
        reply: "So far",
        think: "Hm",
        tools: ["date"],
      },
    }),
  );
  assert.equal(model.busy, true);
  assert.deepEqual(model.shownPending, {
    key: "id:3",
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
  // Read afresh: the assertion above narrowed the getter's type.
  const shown = (m: CanvasModel) => m.shownPending;
  assert.equal(shown(model)?.reply, "Part");
  feed(model, { type: "conversation", id: 2, turns: [turn("x", "y")] });
  feed(model, {
    type: "conversations",
    items: [{ id: 1, title: "a", updated: 1 }],
  });
  feed(model, { type: "done", id: 1, stopped: false });
  assert.equal(model.current.turns.length, 1);
  assert.deepEqual(model.takeNotices().map((n: { text: string }) => n.text), [
    "The reply was saved in “a”.",
  ]);
});

Deno.test("11.2: the meter shows sent and total, and a cut reply says so", () => {
  const model = new CanvasModel();
  feed(
    model,
    hello({ ctx_used: 10, ctx_max: 4096, ctx_sent: 6, ctx_total: 14 }),
  );
  assert.deepEqual(model.ctx, { used: 10, max: 4096, sent: 6, total: 14 });
  feed(model, { type: "ctx", used: 3900, max: 4096, sent: 5, total: 15 });
  assert.deepEqual(model.ctx, { used: 3900, max: 4096, sent: 5, total: 15 });
  feed(
    model,
    { type: "user", text: "More" },
    { type: "token", delta: "Cut" },
    { type: "done", id: 9, stopped: false, truncated: true },
  );
  assert.equal(model.current.turns.at(-1)!.status, "truncated");
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
  assert.match(model.takeNotices()[0].text, /earlier reply is kept/);

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
      pending: {
        user: "Weather in Paris?",
        reply: "",
        think: "",
        tools: [],
        confirm: { call: "c2", tool: "weather", args: { place: "Paris" } },
      },
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

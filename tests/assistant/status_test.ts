/** The status `hello` reports, folded from the events alone. */
import assert from "node:assert/strict";
import {
  foldStatus,
  INITIAL_STATUS,
  isNote,
  type StatusEvent,
} from "../../src/assistant/status.ts";

const fold = (events: StatusEvent[]) =>
  events.reduce(foldStatus, INITIAL_STATUS);

Deno.test("a turn's events fold into the state, the model and the context it used", () => {
  const status = fold([
    { type: "user", text: "Hi" },
    { type: "state", state: "thinking" },
    { type: "model", id: "/srv/models/tiny.gguf", ctx_max: 4096 },
    { type: "token", delta: "Hello" },
    { type: "usage", used: 120 },
    { type: "done", id: 1, stopped: false },
    { type: "window", sent: 3, total: 5, summarized: 2, used: 120 },
    { type: "ctx", id: 1, used: 120, max: 4096, sent: 3, total: 5 },
    { type: "state", state: "idle" },
  ]);
  assert.deepEqual(status, {
    state: "idle",
    model: "/srv/models/tiny.gguf",
    ctx_used: 120,
    ctx_max: 4096,
    ctx_sent: 3,
    ctx_total: 5,
    ctx_summarized: 2,
  });
});

Deno.test("the tool a state names stays only while that state lasts", () => {
  const waiting = fold([
    { type: "state", state: "thinking" },
    { type: "state", state: "confirm", tool: "weather" },
  ]);
  assert.equal(waiting.state, "confirm");
  assert.equal(waiting.tool, "weather");
  const running = foldStatus(waiting, {
    type: "state",
    state: "tool",
    tool: "date",
  });
  assert.equal(running.tool, "date");
  const after = foldStatus(running, { type: "state", state: "thinking" });
  assert.equal(after.state, "thinking");
  assert.equal("tool" in after, false);
});

Deno.test("another conversation becoming current forgets what the last request carried and used, not the context size", () => {
  const before = fold([
    { type: "model", id: "m", ctx_max: 2048 },
    { type: "ctx", id: 3, used: 900, max: 2048, sent: 2, total: 2 },
    { type: "window", sent: 2, total: 2, summarized: 1, used: 900 },
  ]);
  const after = foldStatus(before, {
    type: "conversation",
    id: null,
    turns: [],
  });
  assert.equal(after.ctx_sent, null);
  assert.equal(after.ctx_total, null);
  assert.equal(after.ctx_summarized, null);
  assert.equal(after.ctx_used, null);
  assert.equal(after.ctx_max, 2048);
});

Deno.test("a turn the server reported no usage for leaves no figure of the turn before", () => {
  const status = fold([
    { type: "window", sent: 1, total: 1, summarized: 0, used: 400 },
    { type: "window", sent: 2, total: 2, summarized: 0, used: null },
  ]);
  assert.equal(status.ctx_used, null);
  assert.equal(status.ctx_sent, 2);
});

Deno.test("a ctx event of a reply in a conversation no longer current leaves its window out", () => {
  // The window note goes only with the current conversation's replies.
  const status = fold([
    { type: "window", sent: 4, total: 4, summarized: 0, used: null },
    { type: "conversation", id: 7, turns: [] },
    { type: "ctx", id: 2, used: 300, max: 4096, sent: 1, total: 1 },
  ]);
  assert.equal(status.ctx_used, 300);
  assert.equal(status.ctx_sent, null);
});

Deno.test("events the status does not follow change nothing, and only notes stay off the wire", () => {
  const start = fold([{ type: "state", state: "thinking" }]);
  for (
    const event of [
      { type: "token", delta: "x" },
      { type: "think", delta: "y" },
      { type: "renamed", id: 1, title: "T" },
      { type: "pong", pid: 1, uptime: 0, version: "0" },
    ] satisfies StatusEvent[]
  ) {
    assert.equal(foldStatus(start, event), start);
    assert.equal(isNote(event), false);
  }
  assert.equal(isNote({ type: "usage", used: 1 }), true);
  assert.equal(isNote({ type: "model", id: "m", ctx_max: null }), true);
  assert.equal(
    isNote({ type: "window", sent: 0, total: 0, summarized: 0, used: 0 }),
    true,
  );
});

Deno.test("the fold never changes the status it is given", () => {
  const frozen = Object.freeze(
    fold([{ type: "state", state: "tool", tool: "t" }]),
  );
  const next = foldStatus(frozen, { type: "state", state: "idle" });
  assert.equal(frozen.state, "tool");
  assert.equal(next.state, "idle");
});

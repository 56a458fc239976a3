import assert from "node:assert/strict";
import {
  formatArgs,
  modelName,
  Renderer,
  sanitize,
} from "../../src/clients/chat_render.ts";
import type { BackendView, Event } from "../../src/protocol/protocol.ts";

function render(
  events: Event[],
  options = { colors: false, think: true, clearOnSwitch: false },
): string {
  const renderer = new Renderer(options);
  return events.map((event) => renderer.event(event)).join("");
}

Deno.test("a streamed turn: question, reasoning, tool status, answer, blank line", () => {
  const out = render([
    { type: "user", text: "Weather?" },
    { type: "state", state: "thinking" },
    { type: "think", delta: "Need the" },
    { type: "think", delta: " tool." },
    { type: "tool", name: "weather", done: false },
    { type: "tool", name: "weather", done: true },
    { type: "token", delta: "Sunny" },
    { type: "token", delta: "." },
    { type: "done", id: 4, stopped: false },
  ]);
  assert.equal(
    out,
    "> Weather?\n(thinking) Need the tool.\n[tool] weather … done\nSunny.\n\n",
  );
});

Deno.test("--no-think hides reasoning entirely", () => {
  const out = render([
    { type: "user", text: "Q" },
    { type: "think", delta: "private" },
    { type: "token", delta: "A" },
    { type: "done", id: 1, stopped: false },
  ], { colors: false, think: false, clearOnSwitch: false });
  assert.equal(out, "> Q\nA\n\n");
});

Deno.test("colours: reasoning dimmed, errors red; none without colours", () => {
  const colored = render([
    { type: "think", delta: "hmm" },
    {
      type: "error",
      code: "llama_stalled",
      message: "llama-server stalled",
      turn: true,
    },
  ], { colors: true, think: true, clearOnSwitch: false });
  assert.equal(
    colored,
    "\x1b[2mhmm\x1b[0m\n\x1b[31merror: llama-server stalled\x1b[0m\n",
  );
  const plain = render([{ type: "error", code: "bad_id", message: "bad id" }]);
  assert.equal(plain, "error: bad id\n");
});

Deno.test("a stopped reply is marked and its line ended", () => {
  const out = render([
    { type: "user", text: "Go" },
    { type: "token", delta: "Par" },
    { type: "done", id: null, stopped: true },
  ]);
  assert.equal(out, "> Go\nPar\n[stopped]\n\n");
});

Deno.test("a reply cut short says why; the meter shows once the conversation no longer fits whole", () => {
  const out = render([
    { type: "user", text: "Go on" },
    { type: "token", delta: "And then" },
    {
      type: "done",
      id: 3,
      stopped: false,
      truncated: true,
      truncated_by: "context",
    },
    { type: "ctx", used: 3900, max: 4096, sent: 6, total: 14 },
    { type: "user", text: "Briefly" },
    { type: "token", delta: "So" },
    {
      type: "done",
      id: 3,
      stopped: false,
      truncated: true,
      truncated_by: "max_tokens",
    },
    // Everything sent: no meter.
    { type: "ctx", used: 900, max: 4096, sent: 2, total: 2 },
  ]);
  assert.equal(
    out,
    "> Go on\nAnd then\n[cut short: the context is full]\n\n" +
      "context 3,900/4,096 · 6 of 14 turns\n" +
      "> Briefly\nSo\n[cut short: the reply reached max_tokens]\n\n",
  );
});

Deno.test("hello shows the meter when the last request left turns out", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  });
  const out = renderer.hello({
    type: "hello",
    state: "idle",
    model: null,
    ctx_used: 2000,
    ctx_max: 2048,
    ctx_sent: 1,
    ctx_total: 2,
    id: 2,
    turns: [
      { user: "A", reply: "a", tools: [] },
      { user: "B", reply: "b", tools: [] },
    ],
    pending: null,
  });
  assert.equal(
    out,
    "desktop-assistant · /help for commands\n" +
      "── conversation #2 · 2 turns ──\n> A\na\n\n> B\nb\n\n" +
      "context 2,000/2,048 · 1 of 2 turns\n",
  );
});

Deno.test("hello shows the conversation and the reply in flight", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  });
  const out = renderer.hello({
    type: "hello",
    state: "tool",
    tool: "date",
    model: "/srv/models/tiny.gguf",
    ctx_used: null,
    ctx_max: null,
    ctx_sent: null,
    ctx_total: null,
    id: 7,
    turns: [{ user: "Hi", reply: "Hello.", tools: [] }],
    pending: {
      id: 7,
      user: "Time?",
      reply: "",
      think: "Check.",
      tools: ["date"],
    },
  });
  assert.equal(
    out,
    "desktop-assistant · tiny · /help for commands\n" +
      "── conversation #7 · 1 turn ──\n> Hi\nHello.\n\n" +
      "> Time?\n(thinking) Check.\n[tool] date …",
  );
  assert.equal(renderer.atLineStart, false);
  assert.equal(
    renderer.event({ type: "tool", name: "date", done: true }),
    " done\n",
  );
});

Deno.test("hello leaves out a reply in flight that belongs to another conversation", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  });
  const out = renderer.hello({
    type: "hello",
    state: "thinking",
    model: null,
    ctx_used: null,
    ctx_max: null,
    ctx_sent: null,
    ctx_total: null,
    id: null,
    turns: [],
    pending: { id: 3, user: "Elsewhere?", reply: "Par", think: "", tools: [] },
  });
  assert.equal(
    out,
    "desktop-assistant · /help for commands\n" +
      "[a reply is streaming in conversation #3]\n",
  );
  // A call of that reply waiting for approval is asked all the same:
  // approvals are shared, whichever conversation is shown.
  const confirm = { call: "c9", tool: "weather", args: { place: "Oslo" } };
  const asked = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  }).hello({
    type: "hello",
    state: "confirm",
    tool: "weather",
    model: null,
    ctx_used: null,
    ctx_max: null,
    ctx_sent: null,
    ctx_total: null,
    id: 7,
    turns: [],
    pending: {
      id: 3,
      user: "Elsewhere?",
      reply: "",
      think: "",
      tools: [],
      confirm,
    },
    confirm,
  });
  assert.ok(
    asked.endsWith('run weather {"place": "Oslo"}? [y/N] '),
    JSON.stringify(asked),
  );
});

Deno.test("lists, results with marked matches, and a deleted conversation", () => {
  const renderer = new Renderer({
    colors: true,
    think: true,
    clearOnSwitch: false,
  });
  const results = renderer.event({
    type: "results",
    items: [{
      id: 3,
      title: "Trip to Rome",
      snippet: "the **città** at\nnight",
    }],
  });
  assert.equal(
    results,
    "\x1b[1m    #3\x1b[0m  Trip to Rome\n" +
      "        the \x1b[1m\x1b[33mcittà\x1b[0m at night\n",
  );
  const plain = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  });
  assert.equal(
    plain.event({ type: "conversations", items: [] }, { deleted: 3 }),
    "deleted conversation #3\nno conversations yet\n",
  );
  assert.equal(plain.event({ type: "results", items: [] }), "no matches\n");
});

Deno.test("a conversation switch clears a terminal screen, and /new announces itself", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: true,
  });
  assert.equal(
    renderer.event({ type: "conversation", id: null, turns: [] }),
    "\x1b[H\x1b[2J\x1b[3J── new conversation ──\n",
  );
});

Deno.test("text from the daemon cannot carry escape sequences to the terminal", () => {
  assert.equal(sanitize("a\x1b]0;pwned\x07b\r\nc\u009b"), "a]0;pwnedb\nc");
  const out = render([{ type: "token", delta: "\x1b[2Jx" }]);
  assert.equal(out, "[2Jx");
  assert.equal(modelName("/srv/models/Qwen3-8B.Q4.gguf"), "Qwen3-8B.Q4");
});

Deno.test("a retry says it replaces the last turn, and a stopped one that the last turn stays", () => {
  const out = render([
    { type: "user", text: "Again?", replaces: true, ref: "r" },
    { type: "token", delta: "Half" },
    { type: "done", id: 2, stopped: true, ref: "r" },
    { type: "user", text: "New?" },
    { type: "done", id: 2, stopped: true },
  ]);
  assert.equal(
    out,
    "> Again? (replaces the last turn)\nHalf\n[stopped: the last turn stays]\n\n" +
      "> New?\n[stopped]\n\n",
  );
});

Deno.test("a private conversation says so in its header, on connect and on switching", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  });
  const hello = renderer.hello({
    type: "hello",
    state: "idle",
    model: null,
    ctx_used: null,
    ctx_max: null,
    ctx_sent: null,
    ctx_total: null,
    id: null,
    turns: [{ user: "Secret?", reply: "Kept in memory.", tools: [] }],
    pending: null,
    private: true,
  });
  assert.equal(
    hello,
    "desktop-assistant · /help for commands\n" +
      "── private conversation · not saved · 1 turn ──\n" +
      "> Secret?\nKept in memory.\n\n",
  );
  assert.equal(
    renderer.event({
      type: "conversation",
      id: null,
      turns: [],
      private: true,
    }),
    "── private conversation · not saved ──\n",
  );
  assert.equal(
    renderer.event({ type: "renamed", id: 3, title: "A\nnew  name" }),
    '#3 is now called "A new name"\n',
  );
});

Deno.test("the header line says the backend state; a change shows as a line of its own", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  });
  const url = "http://127.0.0.1:8080";
  const hello = (backend: BackendView) =>
    renderer.hello({
      type: "hello",
      state: "idle",
      model: null,
      ctx_used: null,
      ctx_max: null,
      ctx_sent: null,
      ctx_total: null,
      backend,
      id: null,
      turns: [],
      pending: null,
    });
  assert.equal(
    hello({
      state: "up",
      url,
      model: "/srv/models/tiny.gguf",
      ctx_max: 4096,
      message: null,
    }),
    "desktop-assistant · backend up · tiny · /help for commands\n",
  );
  assert.equal(
    hello({
      state: "down",
      url,
      model: null,
      ctx_max: null,
      message: `no connection to ${url} (connection refused)`,
    }),
    `desktop-assistant · backend down: no connection to ${url} (connection refused) · /help for commands\n`,
  );
  assert.equal(
    hello({ state: "unknown", url, model: null, ctx_max: null, message: null }),
    "desktop-assistant · backend unknown · /help for commands\n",
  );
  assert.equal(
    renderer.event({
      type: "backend",
      state: "loading",
      url,
      model: null,
      ctx_max: null,
      message: "llama-server is loading its model",
    }),
    "backend loading: llama-server is loading its model\n",
  );
  const colored = new Renderer({
    colors: true,
    think: true,
    clearOnSwitch: false,
  });
  assert.equal(
    colored.event({
      type: "backend",
      state: "down",
      url,
      model: null,
      ctx_max: null,
      message: "no answer from x within 5 s\x1b[2J",
    }),
    "\x1b[31mbackend down: no answer from x within 5 s[2J\x1b[0m\n",
  );
});

Deno.test("a call's arguments show as compact JSON, escape sequences removed, long ones cut", () => {
  assert.equal(formatArgs({ place: "Paris" }), '{"place": "Paris"}');
  assert.equal(
    formatArgs({ a: [1, true, null], b: { c: "x" } }),
    '{"a": [1, true, null], "b": {"c": "x"}}',
  );
  assert.equal(formatArgs({ t: "\x1b[2Jhi" }), '{"t": "\\u001b[2Jhi"}');
  const long = formatArgs({ text: "y".repeat(1000) });
  assert.equal(long.length, 400);
  assert.ok(long.endsWith("…"));
});

Deno.test("a waiting call is asked on one line; the answer ends it, or a note says it was decided elsewhere", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    clearOnSwitch: false,
  });
  const view = { call: "c1", tool: "weather", args: { place: "Oslo" } };
  assert.equal(
    renderer.confirm(view) + renderer.approved(true, true),
    'run weather {"place": "Oslo"}? [y/N] allowed\n',
  );
  assert.equal(
    renderer.confirm(view) + renderer.approved(false, false),
    'run weather {"place": "Oslo"}? [y/N] declined (answered elsewhere or timed out)\n',
  );
});

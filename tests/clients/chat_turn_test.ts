import assert from "node:assert/strict";
import { Renderer, sanitize } from "../../src/clients/chat_render.ts";
import type { Event } from "../../src/protocol/protocol.ts";

function render(
  events: Event[],
  options = { colors: false, think: true },
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
  ], { colors: false, think: false });
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
  ], { colors: true, think: true });
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
    { type: "ctx", id: 1, used: 3900, max: 4096, sent: 6, total: 14 },
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
    { type: "ctx", id: 1, used: 900, max: 4096, sent: 2, total: 2 },
  ]);
  assert.equal(
    out,
    "> Go on\nAnd then\n[cut short: the context is full]\n\n" +
      "context 3,900/4,096 · 6 of 14 turns\n" +
      "> Briefly\nSo\n[cut short: the reply reached max_tokens]\n\n",
  );
});

Deno.test("text from the daemon cannot carry escape sequences to the terminal", () => {
  assert.equal(sanitize("a\x1b]0;pwned\x07b\r\nc\u009b"), "a]0;pwnedb\nc");
  const out = render([{ type: "token", delta: "\x1b[2Jx" }]);
  assert.equal(out, "[2Jx");
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

Deno.test("a waiting call is asked on one line; the answer ends it, or a note says it was decided elsewhere", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
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
  // A timeout only ever declines: an allow from elsewhere says nothing of one.
  assert.equal(
    renderer.confirm(view) + renderer.approved(true, false),
    'run weather {"place": "Oslo"}? [y/N] allowed (answered elsewhere)\n',
  );
  // Decided while another line was being drawn: a note of its own.
  assert.equal(
    renderer.approved(true, false),
    "[allowed (answered elsewhere)]\n",
  );
});

Deno.test("a long question wraps at a readable width, between words, its lines indented", () => {
  const renderer = new Renderer({
    colors: false,
    think: true,
    columns: () => 200,
  });
  const question = "why ".repeat(40).trim();
  const out = renderer.event({ type: "user", text: `${question}\nand this` });
  const lines = out.trimEnd().split("\n");
  assert.ok(lines.length > 2, out);
  assert.ok(lines.every((line) => line.length <= 80), out);
  assert.ok(lines[0]!.startsWith("> why"));
  assert.ok(lines.slice(1).every((line) => /^ {2}\S/.test(line)), out);
  assert.equal(
    lines.join(" ").replace(/^> | {2,}/g, " ").split(/\s+/).filter((w) =>
      w === "why"
    ).length,
    40,
  );
  assert.equal(lines.at(-1), "  and this");
});

/**
 * chat's memory commands over a stand-in connection: what each sends, how
 * the list and the changes show, `/forget`'s question, the exports, and
 * the errors in words that say what to do.
 */
import assert from "node:assert/strict";
import { parseSlash } from "../../src/clients/chat_commands.ts";
import { helpLines } from "../../src/clients/chat_help.ts";
import { formatTime } from "../../src/clients/chat_lines.ts";
import type { MemoryView } from "../../src/protocol/protocol.ts";
import { session } from "./chat_fixture.ts";

const TEA: MemoryView = {
  id: 3,
  text: "Likes green tea",
  created: 1_700_000_000,
  updated: 1_700_000_000,
  source: { id: 12, turn: 0 },
};
const METRIC: MemoryView = {
  id: 5,
  text: "Prefers metric units",
  created: 1_700_100_000,
  updated: 1_700_100_000,
  source: null,
};

Deno.test("/memories lists each memory by number, with its date and the conversation it came from", () => {
  const { chat, sent, screen } = session();
  chat.submit("/memories");
  assert.deepEqual(sent.at(-1), { type: "memories", ref: "ref-1" });
  assert.equal(chat.ready, false);
  chat.onEvent({ type: "memories", items: [METRIC, TEA], ref: "ref-1" });
  assert.equal(chat.ready, true);
  const day = (seconds: number) => formatTime(seconds).slice(0, 10);
  assert.ok(
    screen().endsWith(
      `    #5  ${day(METRIC.updated)}  Prefers metric units\n` +
        `    #3  ${day(TEA.updated)}  Likes green tea (from #12)\n`,
    ),
    screen(),
  );
  chat.submit("/memories");
  chat.onEvent({ type: "memories", items: [], ref: "ref-2" });
  assert.match(screen(), /no memories yet: \/remember text keeps one\n$/);
});

Deno.test("/remember keeps a fact or rewrites memory #N; a short line says so, and another client's change shows nothing", () => {
  const { chat, sent, screen } = session();
  chat.submit("/remember Prefers   metric units");
  assert.deepEqual(sent.at(-1), {
    type: "remember",
    text: "Prefers metric units",
    ref: "ref-1",
  });
  assert.equal(chat.ready, false);
  chat.onEvent({ type: "memories", items: [METRIC, TEA], ref: "ref-1" });
  assert.match(screen(), /memory #5 kept\n$/);
  assert.equal(chat.ready, true);
  chat.submit("/remember #3 Likes black tea");
  assert.deepEqual(sent.at(-1), {
    type: "remember",
    id: 3,
    text: "Likes black tea",
    ref: "ref-2",
  });
  chat.onEvent({
    type: "memories",
    items: [{ ...TEA, text: "Likes black tea" }, METRIC],
    ref: "ref-2",
  });
  assert.match(screen(), /memory #3 rewritten\n$/);
  // The page forgets one, or the model's remember runs: nothing to say.
  const before = screen();
  chat.onEvent({ type: "memories", items: [METRIC], ref: "page-7" });
  chat.onEvent({ type: "memories", items: [METRIC, TEA] });
  assert.equal(screen(), before);
  assert.equal(chat.ready, true);
});

Deno.test("a fact that starts with a number is kept as it is: only #N rewrites a memory", () => {
  for (const fact of ["3 kids", "4", "2 cats and #3 dogs"]) {
    assert.deepEqual(parseSlash(`/remember ${fact}`), {
      kind: "request",
      wait: { kind: "memory", change: "kept" },
      command: { type: "remember", text: fact },
    });
  }
  assert.deepEqual(parseSlash("/remember #3 kids"), {
    kind: "request",
    wait: { kind: "memory", change: "rewritten", id: 3 },
    command: { type: "remember", id: 3, text: "kids" },
  });
  // Not a number after the #: a fact like any other.
  assert.deepEqual(parseSlash("/remember #rust is my language"), {
    kind: "request",
    wait: { kind: "memory", change: "kept" },
    command: { type: "remember", text: "#rust is my language" },
  });
});

Deno.test("/remember and /forget typed wrong say how they go, and send nothing", () => {
  assert.deepEqual(parseSlash("/remember"), {
    kind: "usage",
    text: "usage: /remember text",
  });
  assert.deepEqual(parseSlash("/remember #4"), {
    kind: "usage",
    text: "usage: /remember #N text (N from /memories)",
  });
  assert.deepEqual(parseSlash("/forget tea"), {
    kind: "usage",
    text: "usage: /forget N (a number from /memories)",
  });
  assert.deepEqual(parseSlash("/memories all"), {
    kind: "usage",
    text: "usage: /memories [export [file]]",
  });
  const { chat, sent, screen } = session();
  chat.submit("/forget");
  assert.deepEqual(sent, []);
  assert.match(screen(), /usage: \/forget N/);
});

Deno.test("/forget N asks by the memory's text first: y forgets it, anything else keeps it", () => {
  const { chat, sent, screen } = session();
  chat.submit("/forget 3");
  // The list as it is now names the memory.
  assert.deepEqual(sent.at(-1), { type: "memories", ref: "ref-1" });
  chat.onEvent({ type: "memories", items: [METRIC, TEA], ref: "ref-1" });
  assert.match(screen(), /forget memory #3 "Likes green tea"\? \[y\/N\] $/);
  assert.equal(chat.asking, true);
  chat.submit("y");
  assert.deepEqual(sent.at(-1), { type: "forget", id: 3, ref: "ref-2" });
  assert.equal(chat.ready, false);
  chat.onEvent({ type: "memories", items: [METRIC], ref: "ref-2" });
  assert.match(screen(), /memory #3 forgotten\n$/);
  assert.equal(chat.ready, true);

  chat.submit("/forget 5");
  chat.onEvent({ type: "memories", items: [METRIC], ref: "ref-3" });
  chat.submit("n");
  assert.match(screen(), /\[y\/N\] no: memory #5 stays\n$/);
  assert.equal(sent.length, 3, "nothing forgotten");
  // A number the list does not have is said at once, nothing asked.
  chat.submit("/forget 9");
  chat.onEvent({ type: "memories", items: [METRIC], ref: "ref-4" });
  assert.match(
    screen(),
    /error: no such memory #9: \/memories lists them by number\n$/,
  );
  assert.equal(chat.asking, false);
  assert.equal(chat.ready, true);
});

Deno.test("a memory refused or gone is said in words that say what to do", () => {
  const { chat, screen } = session();
  chat.submit(`/remember ${"x".repeat(501)}`);
  chat.onEvent({
    type: "error",
    code: "bad_memory",
    message: "bad memory",
    ref: "ref-1",
  });
  assert.match(
    screen(),
    /error: not kept: a memory is 1 to 500 characters\n$/,
  );
  chat.submit("/remember 8 Gone");
  chat.onEvent({
    type: "error",
    code: "no_such_memory",
    message: "no such memory",
    ref: "ref-2",
  });
  assert.match(
    screen(),
    /error: no such memory: \/memories lists them by number\n$/,
  );
  assert.equal(chat.ready, true);
});

Deno.test("/memories export shows the memories, or writes them to a new file in the export folder", async () => {
  const written: [string, string][] = [];
  const { chat, sent, screen } = session({
    exportDir: "/exports",
    writeFile: (path, text) => {
      written.push([path, text]);
      return Promise.resolve();
    },
  });
  chat.submit("/memories export");
  assert.deepEqual(sent.at(-1), {
    type: "export_memories",
    format: "markdown",
    ref: "ref-1",
  });
  const markdown = "# What the assistant knows about you\n\n- Likes tea\n";
  chat.onEvent({
    type: "export",
    format: "markdown",
    text: markdown,
    ref: "ref-1",
  });
  assert.ok(screen().endsWith(markdown), screen());
  assert.equal(chat.ready, true);
  chat.submit("/memories export mine.JSON");
  assert.deepEqual(sent.at(-1), {
    type: "export_memories",
    format: "json",
    ref: "ref-2",
  });
  chat.onEvent({ type: "export", format: "json", text: "{}\n", ref: "ref-2" });
  await chat.whenReady();
  assert.deepEqual(written, [["/exports/mine.JSON", "{}\n"]]);
  assert.match(screen(), /wrote the memories to \/exports\/mine\.JSON\n$/);
});

Deno.test("a memories export that cannot be written says why, without the conversation export's way round", async () => {
  const { chat, screen } = session({
    exportDir: "/exports",
    writeFile: () => Promise.reject(new Deno.errors.NotCapable("x")),
  });
  chat.submit("/memories export /etc/mine.md");
  chat.onEvent({ type: "export", format: "markdown", text: "x", ref: "ref-1" });
  await chat.whenReady();
  assert.match(
    screen(),
    /error: chat may not write \/etc\/mine\.md: give a name without a folder to write in \/exports\n$/,
  );
});

Deno.test("the model's remember reads as the fact it keeps, and y allows it", () => {
  const { chat, sent, screen } = session({ editor: true });
  chat.onEvent({ type: "state", state: "confirm", tool: "remember" });
  chat.onEvent({
    type: "confirm",
    call: "c1",
    tool: "remember",
    args: { text: "Plays the\ncello" },
  });
  assert.match(screen(), /remember "Plays the cello"\? \[y\/N\] $/);
  chat.onKey({ name: "text", text: "y" });
  assert.deepEqual(sent.at(-1), { type: "approve", call: "c1", allow: true });
  chat.onEvent({ type: "approved", call: "c1", allow: true });
  assert.match(screen(), /\[y\/N\] allowed\n$/);
  // Arguments of another shape are shown as they came.
  chat.onEvent({
    type: "confirm",
    call: "c2",
    tool: "remember",
    args: { fact: 3 },
  });
  assert.match(screen(), /run remember \{"fact": 3\}\? \[y\/N\] $/);
});

Deno.test("/help names the memory commands and what a proposal asks, and /remember lines stay out of the input history", () => {
  const text = helpLines(100).map((line) => line.text).join("\n");
  assert.match(text, /^\/memories +what the assistant remembers of you/m);
  assert.match(text, /^\/memories export \[file\]\n +show them as Markdown/m);
  assert.match(text, /^\/remember text +keep a fact about you/m);
  assert.match(text, /^\/forget N +forget memory N \(after a y\)/m);
  assert.match(text, /remember "fact"\? \[y\/N\/e\]: y keeps it/);
  assert.match(text, /^\/search words +.*\(by meaning\) marks a hit/m);
  assert.match(text, /The prompt reads indexing N%/);
  const kept: string[] = [];
  const { chat } = session({
    editor: true,
    inputLog: { add: (line) => kept.push(line) },
  });
  // Each line is kept (or not) as Enter takes it, answered or not.
  for (const line of ["/remember I take insulin", "/memories", "Hi"]) {
    chat.onKey({ name: "text", text: line });
    chat.onKey({ name: "enter" });
  }
  assert.deepEqual(kept, ["/memories", "Hi"]);
});

import assert from "node:assert/strict";
import { parseSlash } from "../../src/clients/chat_commands.ts";
import { helpLines } from "../../src/clients/chat_help.ts";
import { playTurn, session } from "./chat_fixture.ts";

Deno.test("/edit puts the last question on the line; Enter sends it as edit, Ctrl-C cancels", () => {
  const { chat, sent, editor } = session({
    editor: true,
    turns: [{ user: "Old question", reply: "Old.", tools: [] }],
  });
  chat.submit("/edit");
  assert.equal(editor!.line, "Old question");
  assert.deepEqual(sent, []);
  // Ctrl-C at the prompt while editing cancels the edit, and does not leave.
  chat.interrupt();
  assert.equal(chat.ended, false);
  assert.equal(editor!.line, "");
  chat.submit("A new question");
  assert.deepEqual(sent.at(-1), {
    type: "ask",
    text: "A new question",
    ref: "ref-1",
  });
  playTurn(chat, "A new question", "ref-1", "New.");
  // The last question is now the one just answered.
  chat.submit("/edit");
  assert.equal(editor!.line, "A new question");
  for (const key of " rather".split("")) {
    chat.onKey({ name: "text", text: key });
  }
  chat.onKey({ name: "enter" });
  assert.deepEqual(sent.at(-1), {
    type: "edit",
    text: "A new question rather",
    ref: "ref-2",
  });
  assert.equal(chat.ready, false);
  playTurn(chat, "A new question rather", "ref-2", "Newer.", {
    replaces: true,
  });
  assert.equal(chat.ready, true);
});

Deno.test("/edit with text, /retry, /rename, /private and their usage lines", () => {
  const { chat, sent, screen } = session();
  chat.submit("/edit");
  assert.match(screen(), /usage: \/edit new question/);
  chat.submit("/edit Better words");
  assert.deepEqual(sent.at(-1), {
    type: "edit",
    text: "Better words",
    ref: "ref-1",
  });
  chat.onEvent({
    type: "error",
    code: "nothing_to_retry",
    message: "nothing to retry",
    ref: "ref-1",
  });
  assert.equal(chat.ready, true);
  chat.submit("/retry");
  assert.deepEqual(sent.at(-1), { type: "retry", ref: "ref-2" });
  chat.onEvent({
    type: "error",
    code: "nothing_to_retry",
    message: "nothing to retry",
    ref: "ref-2",
  });
  chat.submit("/rename 4 Trip to   Lisbon");
  assert.deepEqual(sent.at(-1), {
    type: "rename",
    id: 4,
    title: "Trip to Lisbon",
    ref: "ref-3",
  });
  assert.equal(chat.ready, false);
  chat.onEvent({
    type: "renamed",
    id: 4,
    title: "Trip to Lisbon",
    ref: "ref-3",
  });
  assert.equal(chat.ready, true);
  assert.match(screen(), /#4 is now called "Trip to Lisbon"/);
  chat.submit("/rename x");
  assert.match(screen(), /usage: \/rename N title/);
  chat.submit("/private");
  assert.deepEqual(sent.at(-1), { type: "new", private: true, ref: "ref-4" });
  chat.onEvent({
    type: "conversation",
    id: null,
    turns: [],
    private: true,
    ref: "ref-4",
  });
  assert.match(screen(), /── private conversation · not saved ──/);
  assert.equal(chat.ready, true);
});

Deno.test("/export shows a conversation, or writes it to a new file (JSON by the extension)", async () => {
  const written: [string, string][] = [];
  const wrote = Promise.withResolvers<void>();
  const { chat, sent, screen } = session({
    exportDir: "/exports",
    writeFile: (path, text) => {
      written.push([path, text]);
      wrote.resolve();
      return Promise.resolve();
    },
  });
  chat.submit("/export 2");
  assert.deepEqual(sent.at(-1), {
    type: "export",
    id: 2,
    format: "markdown",
    ref: "ref-1",
  });
  chat.onEvent({
    type: "export",
    id: 2,
    format: "markdown",
    text: "# Title\n\n> q\n\nA\x1b[2Jreply\n",
    ref: "ref-1",
  });
  assert.ok(screen().includes("# Title\n\n> q\n\nA[2Jreply\n"), screen());
  assert.equal(chat.ready, true);

  chat.submit("/export 2 trip.json");
  assert.deepEqual(sent.at(-1), {
    type: "export",
    id: 2,
    format: "json",
    ref: "ref-2",
  });
  chat.onEvent({
    type: "export",
    id: 2,
    format: "json",
    text: "{}\n",
    ref: "ref-2",
  });
  // The prompt waits for the file.
  assert.equal(chat.ready, false);
  await wrote.promise;
  await chat.whenReady();
  assert.deepEqual(written, [["/exports/trip.json", "{}\n"]]);
  assert.match(screen(), /wrote #2 to \/exports\/trip\.json/);
});

Deno.test("/export says why a file cannot be written", async () => {
  for (
    const [error, message] of [
      [new Deno.errors.AlreadyExists("x"), /already exists: give another/],
      [
        new Deno.errors.NotCapable("x"),
        /start it with deno task chat, which lets it write in its export folder, or run deno task -q export 1 > file/,
      ],
    ] as const
  ) {
    const { chat, screen } = session({
      writeFile: () => Promise.reject(error),
    });
    chat.submit("/export 1 /tmp/out.md");
    chat.onEvent({
      type: "export",
      id: 1,
      format: "markdown",
      text: "# x\n",
      ref: "ref-1",
    });
    await chat.whenReady();
    assert.match(screen(), message);
  }
});

Deno.test("each /command reads into what it sends, or how it is typed", () => {
  assert.deepEqual(parseSlash("/list"), {
    kind: "request",
    wait: { kind: "list" },
    command: { type: "list", limit: 20 },
  });
  assert.deepEqual(parseSlash("/list 0"), {
    kind: "usage",
    text: "usage: /list [N]",
  });
  // Deleting asks first.
  assert.deepEqual(parseSlash("/delete 7"), { kind: "delete", id: 7 });
  assert.deepEqual(parseSlash(`/attach a.txt "my notes.md" b\\ c.png`), {
    kind: "attach",
    paths: ["a.txt", "my notes.md", "b c.png"],
  });
  assert.deepEqual(parseSlash("/attach"), { kind: "attach", paths: [] });
  assert.deepEqual(parseSlash(`/attach "open`), {
    kind: "usage",
    text: "usage: /attach PATH… (a quote is not closed)",
  });
  assert.deepEqual(parseSlash("/detach"), { kind: "detach" });
  assert.deepEqual(parseSlash("/export 2 Trip.JSON"), {
    kind: "request",
    wait: { kind: "export", file: "Trip.JSON" },
    command: { type: "export", id: 2, format: "json" },
  });
  assert.deepEqual(parseSlash("/search  two   words"), {
    kind: "request",
    wait: { kind: "search" },
    command: { type: "search", q: "two words", limit: 20 },
  });
  assert.deepEqual(parseSlash("/edit"), { kind: "edit" });
  assert.deepEqual(parseSlash("/dance now"), {
    kind: "unknown",
    name: "/dance",
  });
});

Deno.test("/help takes two columns where they fit, and puts each description under its command where not", () => {
  const wide = helpLines(100);
  assert.ok(
    wide.some((line) => line.text.startsWith("/new              start")),
  );
  const narrow = helpLines(40);
  const at = narrow.findIndex((line) => line.text === "/new");
  assert.notEqual(at, -1);
  assert.deepEqual(narrow[at + 1], {
    text: "    start a new conversation",
    indent: "    ",
  });
  for (const command of ["/new", "/private", "/open N", "/quit leaves"]) {
    assert.ok(
      narrow.some((line) => line.text.includes(command)),
      `${command} in /help`,
    );
  }
});

Deno.test("/help names /summary and /talk, and the lines they explain", () => {
  const text = helpLines(100).map((line) => line.text).join("\n");
  assert.match(text, /^\/summary +the summary of the earlier turns/m);
  assert.match(text, /^\/talk +start or stop listening/m);
  assert.match(text, /tokens\/s · prompt R read, C reused/);
  assert.deepEqual(parseSlash("/talk"), { kind: "talk" });
  assert.deepEqual(parseSlash("/summary"), { kind: "summary" });
});

Deno.test("/summary of a conversation with no turn, or a private one not yet summarised, asks nothing", () => {
  const empty = session();
  empty.chat.submit("/summary");
  assert.deepEqual(empty.sent, []);
  assert.match(empty.screen(), /no summary: the model is sent/);
  const secret = session({
    turns: [{ user: "Q", reply: "A", tools: [] }],
    hello: { id: null, private: true },
  });
  secret.chat.submit("/summary");
  assert.deepEqual(secret.sent, []);
  assert.match(secret.screen(), /no summary seen yet/);
  // Its summary comes as an event with a null id.
  secret.chat.onEvent({
    type: "summary",
    id: null,
    text: "Kept here.",
    turns: 3,
  });
  secret.chat.submit("/summary");
  assert.match(
    secret.screen(),
    /summary of the 3 earlier turns:\nKept here\.\n/,
  );
});

Deno.test("/help names /attach, /detach, what /delete and /list do now, and what becomes of lines typed during a reply", () => {
  const text = helpLines(100).map((line) => line.text).join("\n");
  assert.match(text, /^\/attach \[PATH…\] +send files with the next question/m);
  assert.match(text, /^\/detach +drop the attached files/m);
  assert.match(text, /^\/delete N +delete conversation N \(after a y\)/m);
  assert.match(text, /^\/list \[N\] .*\* marks the one shown/m);
  assert.match(text, /^\/export N \[file\] .*in the export folder/m);
  assert.match(
    text,
    /Lines typed while a reply streams wait: each Enter queues one/,
  );
  assert.match(
    text,
    /When the daemon goes away chat waits for it to come back/,
  );
});

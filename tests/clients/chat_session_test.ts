import assert from "node:assert/strict";
import { Renderer } from "../../src/clients/chat_render.ts";
import { ChatSession, type WriteFile } from "../../src/clients/chat_session.ts";
import type { DaemonClient } from "../../src/clients/client.ts";
import { LineEditor } from "../../src/clients/line_editor.ts";
import type { Command, Event, TurnView } from "../../src/protocol/protocol.ts";

interface Options {
  editor?: boolean;
  turns?: TurnView[];
  writeFile?: WriteFile;
  exportDir?: string;
}

/** A session over a stand-in connection that records what it sends and shows. */
function session(options: Options = {}) {
  const sent: Command[] = [];
  let refs = 0;
  let screen = "";
  const client = {
    hello: {
      type: "hello",
      state: "idle",
      model: null,
      ctx_used: null,
      ctx_max: null,
      id: options.turns ? 1 : null,
      turns: options.turns ?? [],
      pending: null,
    },
    nextRef: () => `ref-${++refs}`,
    send: (command: Command) => {
      sent.push(command);
      return Promise.resolve();
    },
  } as unknown as DaemonClient;
  const editor = options.editor ? new LineEditor() : null;
  const chat = new ChatSession({
    client,
    renderer: new Renderer({
      colors: false,
      think: true,
      clearOnSwitch: false,
    }),
    editor,
    out: (text) => screen += text,
    err: () => {},
    prompt: "> ",
    columns: () => 80,
    ...(options.writeFile ? { writeFile: options.writeFile } : {}),
    ...(options.exportDir ? { exportDir: options.exportDir } : {}),
  });
  return { chat, sent, editor, screen: () => screen };
}

/** Plays a whole turn of the daemon's, with the ref of the command that started it. */
function playTurn(
  chat: ChatSession,
  text: string,
  ref: string | undefined,
  reply: string,
  extra: { replaces?: true } = {},
): void {
  const refs = ref === undefined ? {} : { ref };
  chat.onEvent({ type: "user", text, ...extra, ...refs });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: reply });
  chat.onEvent({ type: "done", id: 1, stopped: false, ...extra, ...refs });
  chat.onEvent({ type: "state", state: "idle" });
}

Deno.test("chat waits for the turn of its own question by its ref, even behind the same question from elsewhere", () => {
  const { chat, sent } = session();
  assert.equal(chat.ready, true);
  chat.submit("Mine?");
  assert.deepEqual(sent, [{ type: "ask", text: "Mine?", ref: "ref-1" }]);
  const events: Event[] = [
    // Another client's identical question, then its stop by ours.
    { type: "user", text: "Mine?", ref: "theirs" },
    { type: "state", state: "thinking" },
    { type: "done", id: null, stopped: true, ref: "theirs" },
    { type: "state", state: "idle" },
  ];
  for (const event of events) chat.onEvent(event);
  assert.equal(chat.ready, false, "our question is still to come");
  chat.onEvent({ type: "user", text: "Mine?", ref: "ref-1" });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: "Yours." });
  assert.equal(chat.ready, false);
  chat.onEvent({ type: "done", id: 1, stopped: false, ref: "ref-1" });
  chat.onEvent({ type: "state", state: "idle" });
  assert.equal(chat.ready, true);
});

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
      [new Deno.errors.NotCapable("x"), /start it with --export-dir DIR/],
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

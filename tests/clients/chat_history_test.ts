import assert from "node:assert/strict";
import { join } from "node:path";
import { openHistory } from "../../src/clients/chat_history.ts";
import { LineEditor } from "../../src/clients/line_editor.ts";
import { session } from "./chat_fixture.ts";
import { tempHome } from "../support/client_harness.ts";

function type(chat: ReturnType<typeof session>["chat"], line: string) {
  for (const char of line) chat.onKey({ name: "text", text: char });
  chat.onKey({ name: "enter" });
}

Deno.test("typed lines are kept for the next run, in a file only the user may read, a private conversation's left out", async () => {
  await using home = await tempHome();
  const dir = join(home.path, "state", "chat");
  const first = await openHistory(dir);
  assert.deepEqual(first.lines, []);
  const { chat } = session({ editor: true, inputLog: first.log! });
  type(chat, "Public question");
  chat.onEvent({ type: "user", text: "Public question", ref: "ref-1" });
  chat.onEvent({ type: "done", id: 1, stopped: false, ref: "ref-1" });
  chat.onEvent({ type: "state", state: "idle" });
  chat.onEvent({ type: "conversation", id: null, turns: [], private: true });
  type(chat, "A secret");
  chat.onEvent({ type: "conversation", id: 1, turns: [], summary: null });
  type(chat, "/list");
  type(chat, "/list");

  const file = join(dir, "history");
  assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
  const next = await openHistory(dir);
  assert.deepEqual(next.lines, ["Public question", "/list"]);
  assert.doesNotMatch(await Deno.readTextFile(file), /secret/);
  // The next run's editor recalls them with Up.
  const editor = new LineEditor({ history: next.lines });
  editor.apply({ name: "up" });
  assert.equal(editor.line, "/list");
  editor.apply({ name: "up" });
  assert.equal(editor.line, "Public question");
});

Deno.test("the history keeps the newest lines, and a file grown long is written again short", async () => {
  await using home = await tempHome();
  const dir = join(home.path, "chat");
  await Deno.mkdir(dir);
  const file = join(dir, "history");
  const lines = Array.from({ length: 25 }, (_, i) => `line ${i}\nwith a break`);
  await Deno.writeTextFile(
    file,
    lines.map((line) => JSON.stringify(line) + "\n").join("") + '"torn',
    { mode: 0o644 },
  );
  const opened = await openHistory(dir, 10);
  assert.deepEqual(opened.lines, lines.slice(-10));
  assert.equal(
    (await Deno.readTextFile(file)).split("\n").filter(Boolean).length,
    10,
  );
  assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
});

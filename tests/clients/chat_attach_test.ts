import assert from "node:assert/strict";
import { join } from "node:path";
import { playTurn, promptShown, session } from "./chat_fixture.ts";
import { tempHome } from "../support/client_harness.ts";
import { PNG_1PX } from "./files_fixture.ts";
import { mimeOf } from "../../src/clients/attachments.ts";
import type { Command } from "../../src/protocol/protocol.ts";

/** The files a sent question carries, as name, type and size. */
function carried(command: Command | undefined) {
  const files = command && "files" in command ? command.files ?? [] : [];
  return files.map((file) => [file.name, file.mime, file.data.length]);
}

Deno.test("/attach queues files for the next question, the prompt counts them, the question takes them all", async () => {
  await using home = await tempHome();
  await Deno.writeTextFile(join(home.path, "notes.txt"), "buy milk\n");
  await Deno.writeFile(join(home.path, "dot.png"), PNG_1PX);
  const { chat, sent, screen } = session({
    editor: true,
    files: { cwd: home.path, home: null },
  });
  chat.submit("/attach notes.txt dot.png");
  assert.equal(chat.ready, false, "the prompt waits while they are read");
  await chat.whenReady();
  assert.match(
    screen(),
    /attached notes\.txt \(9 bytes, text\/plain\)\nattached dot\.png \(\d+ bytes, image\/png\)\n/,
  );
  assert.equal(promptShown(screen()), "2 files> ");
  chat.submit("/attach");
  assert.match(
    screen(),
    /for the next question: notes\.txt \(9 bytes, text\/plain\), dot\.png/,
  );
  assert.deepEqual(sent, [], "nothing goes before the question");
  chat.submit("What are these?");
  assert.deepEqual(carried(sent.at(-1)), [
    ["notes.txt", "text/plain", 9],
    ["dot.png", "image/png", PNG_1PX.length],
  ]);
  playTurn(chat, "What are these?", "ref-2", "A list and a dot.");
  assert.equal(promptShown(screen()), "> ", "the queue emptied");
  chat.submit("And now?");
  assert.deepEqual(carried(sent.at(-1)), []);
});

Deno.test("/attach names a path it cannot take and why, and keeps the others; /detach drops them", async () => {
  await using home = await tempHome();
  await Deno.writeTextFile(join(home.path, "ok.md"), "# fine\n");
  await Deno.writeFile(
    join(home.path, "huge.log"),
    new Uint8Array(900 * 1024).fill(0x61),
  );
  const { chat, screen } = session({
    editor: true,
    files: { cwd: home.path, home: null },
  });
  chat.submit("/attach missing.txt ok.md huge.log .");
  await chat.whenReady();
  const shown = screen();
  assert.match(shown, /attached ok\.md \(7 bytes, text\/markdown\)/);
  assert.match(shown, /error: cannot read missing\.txt: no such file\n/);
  assert.match(
    shown,
    /error: huge\.log is 900 KB; one question carries at most about 750 KB\n/,
  );
  assert.match(shown, /error: cannot read \.: it is a directory\n/);
  assert.equal(promptShown(shown), "1 file> ");
  chat.submit("/detach");
  assert.match(screen(), /detached 1 file\n/);
  assert.equal(promptShown(screen()), "> ");
});

Deno.test("a question too long with its files is not sent: it stays on the line and the files stay attached", async () => {
  await using home = await tempHome();
  for (const name of ["a.txt", "b.txt"]) {
    await Deno.writeFile(
      join(home.path, name),
      new Uint8Array(380 * 1024).fill(0x62),
    );
  }
  const { chat, sent, screen, editor } = session({
    editor: true,
    files: { cwd: home.path, home: null },
  });
  chat.submit("/attach a.txt b.txt");
  await chat.whenReady();
  const question = "why? ".repeat(4000);
  chat.submit(question);
  assert.deepEqual(sent, []);
  assert.match(
    screen(),
    /error: not sent: the files are 760 KB together; one question carries at most about 750 KB, less the question's own 20 KB\n/,
  );
  assert.equal(editor!.line, question.trim());
  assert.equal(promptShown(screen()).startsWith("2 files> "), true);
  // Shorter, it goes with both files.
  editor!.clear();
  chat.submit("Why?");
  assert.equal(carried(sent.at(-1)).length, 2);
});

Deno.test("/delete asks first: y deletes, anything else keeps the conversation", () => {
  const { chat, sent, screen } = session({ editor: true });
  chat.submit("/list");
  chat.onEvent({
    type: "conversations",
    items: [{ id: 3, title: "Trip", updated: 0 }],
    ref: "ref-1",
  });
  chat.submit("/delete 3");
  assert.ok(
    screen().endsWith('delete conversation #3 "Trip"? [y/N] '),
    JSON.stringify(screen()),
  );
  assert.equal(sent.length, 1, "nothing deleted yet");
  chat.onKey({ name: "text", text: "n" });
  assert.match(screen(), /\? \[y\/N\] no: #3 stays\n/);
  assert.equal(sent.length, 1);
  chat.submit("/delete 3");
  chat.onKey({ name: "text", text: "y" });
  assert.deepEqual(sent.at(-1), { type: "delete", id: 3, ref: "ref-2" });
  // Piped, the next line answers.
  const piped = session();
  piped.chat.submit("/delete 4");
  piped.chat.submit("yes");
  assert.deepEqual(piped.sent, [{ type: "delete", id: 4, ref: "ref-1" }]);
  const kept = session();
  kept.chat.submit("/delete 4");
  kept.chat.submit("/list");
  assert.deepEqual(kept.sent, [], "any other line keeps it");
});

Deno.test("lines entered while a reply streams each wait, then run in order once it ends", () => {
  const { chat, sent, screen } = session({ editor: true });
  chat.submit("First?");
  chat.onEvent({ type: "user", text: "First?", ref: "ref-1" });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: "Streaming" });
  for (const line of ["/list", "Second?"]) {
    for (const char of line) chat.onKey({ name: "text", text: char });
    chat.onKey({ name: "enter" });
  }
  assert.equal(sent.length, 1, "nothing more goes during the reply");
  chat.onEvent({ type: "done", id: 1, stopped: false, ref: "ref-1" });
  chat.onEvent({ type: "state", state: "idle" });
  assert.deepEqual(sent.at(-1), { type: "list", limit: 20, ref: "ref-2" });
  chat.onEvent({ type: "conversations", items: [], ref: "ref-2" });
  assert.deepEqual(sent.at(-1), { type: "ask", text: "Second?", ref: "ref-3" });
  assert.match(screen(), /Streaming\n\n> \/list\nno conversations yet\n/);
});

Deno.test("a file's type comes from its name, a picture's from its bytes", () => {
  assert.equal(mimeOf("a.TXT"), "text/plain");
  assert.equal(mimeOf("main.rs"), "text/plain");
  assert.equal(mimeOf("data.json"), "application/json");
  assert.equal(mimeOf("paper.pdf"), "application/pdf");
  assert.equal(mimeOf("photo.jpeg"), "image/jpeg");
  assert.equal(mimeOf("Makefile"), "application/octet-stream");
  assert.equal(mimeOf("blob.bin"), "application/octet-stream");
  assert.equal(mimeOf("renamed.jpg", PNG_1PX), "image/png");
  assert.equal(mimeOf("no-extension", PNG_1PX), "image/png");
});

Deno.test("a file name with an escape sequence and a line break is shown on one line, without the escape", async () => {
  await using home = await tempHome();
  const name = "evil\x1b[2J\nname.txt";
  await Deno.writeTextFile(join(home.path, name), "fine\n");
  const { chat, sent, screen } = session({
    editor: true,
    files: { cwd: home.path, home: null },
  });
  chat.submit(`/attach "${name}" "gone\x1b]0;x\x07\n.txt"`);
  await chat.whenReady();
  chat.submit("/attach");
  const shown = screen();
  // The prompt's own sequences aside, none of the names' reaches the terminal.
  for (const sequence of ["\x1b[2J", "\x1b]0;", "\x07"]) {
    assert.equal(shown.includes(sequence), false, JSON.stringify(sequence));
  }
  assert.match(shown, /attached evil\[2J name\.txt \(5 bytes, text\/plain\)\n/);
  assert.match(shown, /for the next question: evil\[2J name\.txt \(5 bytes/);
  assert.match(shown, /error: cannot read gone\]0;x \.txt: no such file\n/);
  chat.submit("Read it");
  // The daemon is sent the name as it is: it is shown, never a path there.
  assert.deepEqual(carried(sent.at(-1)), [[name, "text/plain", 5]]);
});

/** Files with a question: `files` on ask and edit, checked and decoded, and the `file` command. */
import assert from "node:assert/strict";
import { parseCommand } from "../../src/protocol/commands.ts";

const b64 = (text: string) => new TextEncoder().encode(text).toBase64();
const note = { name: "notes.txt", mime: "text/plain", data: b64("hello") };

function refusal(value: unknown): string {
  const parsed = parseCommand(value);
  assert.equal(parsed.ok, false, JSON.stringify(value).slice(0, 200));
  if (parsed.ok) throw new Error("accepted");
  assert.equal(parsed.code, "bad_file");
  return parsed.message;
}

Deno.test("an ask carries its files decoded; a type is kept lower case", () => {
  const parsed = parseCommand({
    type: "ask",
    text: "Read this",
    files: [{ ...note, mime: "Text/Plain" }],
  });
  assert.ok(parsed.ok && parsed.command?.type === "ask");
  assert.deepEqual(parsed.command.files, [{
    name: "notes.txt",
    mime: "text/plain",
    data: new TextEncoder().encode("hello"),
  }]);
});

Deno.test("blank text with files is asked; blank text without any is ignored", () => {
  const files = parseCommand({ type: "ask", text: "  ", files: [note] });
  assert.ok(files.ok && files.command?.type === "ask");
  assert.equal(files.command.files?.length, 1);
  assert.deepEqual(parseCommand({ type: "ask", text: " ", files: [] }), {
    ok: true,
    command: null,
  });
  // An edit's empty list is kept: it drops the replaced question's files.
  const edit = parseCommand({ type: "edit", text: "Again", files: [] });
  assert.ok(edit.ok && edit.command?.type === "edit");
  assert.deepEqual(edit.command.files, []);
  const keep = parseCommand({ type: "edit", text: "Again" });
  assert.ok(keep.ok && keep.command?.type === "edit");
  assert.equal("files" in keep.command, false);
});

Deno.test("files that are not an array of at most 8 objects are refused, naming the problem", () => {
  assert.match(refusal({ type: "ask", text: "x", files: note }), /array/);
  assert.match(
    refusal({ type: "ask", text: "x", files: Array(9).fill(note) }),
    /at most 8 files go with one question, not 9/,
  );
  assert.match(refusal({ type: "edit", text: "x", files: [3] }), /file 1/);
});

Deno.test("a name of 0 or 256 characters, a missing type, bad base64 and an empty file are refused", () => {
  const ask = (file: Record<string, unknown>) => ({
    type: "ask",
    text: "x",
    files: [note, { ...note, ...file }],
  });
  assert.match(refusal(ask({ name: "" })), /file 2 needs a name of 1 to 255/);
  assert.match(
    refusal(ask({ name: "n".repeat(256) })),
    /file 2 needs a name of 1 to 255/,
  );
  // 255 characters as JavaScript counts them is the most.
  assert.ok(parseCommand(ask({ name: "n".repeat(255) })).ok);
  assert.match(refusal(ask({ mime: "" })), /notes\.txt: mime must be/);
  assert.match(refusal(ask({ mime: 3 })), /mime must be/);
  assert.match(refusal(ask({ data: "not base64!" })), /not valid base64/);
  assert.match(refusal(ask({ data: 42 })), /bytes in base64/);
  assert.match(refusal(ask({ data: "" })), /notes\.txt is empty/);
});

Deno.test("file names a stored file by conversation, turn and index; anything else is bad id", () => {
  assert.deepEqual(
    parseCommand({ type: "file", conversation: 3, turn: 0, index: 1 }),
    {
      ok: true,
      command: { type: "file", conversation: 3, turn: 0, index: 1 },
    },
  );
  for (
    const bad of [
      { conversation: "3", turn: 0, index: 0 },
      { conversation: 3, turn: -1, index: 0 },
      { conversation: 3, turn: 0, index: 0.5 },
      { conversation: 3, turn: 0 },
    ]
  ) {
    const parsed = parseCommand({ type: "file", ...bad });
    assert.equal(parsed.ok ? "ok" : parsed.code, "bad_id", JSON.stringify(bad));
  }
});

import assert from "node:assert/strict";
import type { Key } from "../../src/clients/key_stream.ts";
import { LineEditor, textWidth } from "../../src/clients/line_editor.ts";

function type(editor: LineEditor, ...input: Key[]) {
  return input.map((key) => editor.apply(key)).at(-1);
}

const text = (value: string): Key => ({ name: "text", text: value });
const key = (name: Exclude<Key["name"], "text">): Key => ({ name }) as Key;

Deno.test("LineEditor inserts at the cursor and moves by graphemes", () => {
  const editor = new LineEditor();
  type(editor, text("héllo wörld"), key("home"), key("right"), text("_"));
  assert.equal(editor.line, "h_éllo wörld");
  type(editor, key("end"), key("backspace"), key("left"), key("delete"));
  assert.equal(editor.line, "h_éllo wör");
  // A family emoji is one grapheme of several code points.
  type(editor, key("end"), text("👨‍👩‍👧"), key("left"), text("!"));
  assert.equal(editor.line, "h_éllo wör!👨‍👩‍👧");
});

Deno.test("LineEditor kill commands: Ctrl-U to the start, Ctrl-K to the end, Ctrl-W a word", () => {
  const editor = new LineEditor();
  type(editor, text("one two three"), key("word-left"), key("kill-end"));
  assert.equal(editor.line, "one two ");
  type(editor, key("kill-word"));
  assert.equal(editor.line, "one ");
  type(editor, text("four five"), key("word-left"), key("kill-start"));
  assert.equal(editor.line, "five");
  assert.equal(editor.cursor, 0);
});

Deno.test("LineEditor submits, keeps history and walks it with up and down", () => {
  const editor = new LineEditor();
  assert.deepEqual(type(editor, text("first"), key("enter")), {
    kind: "submit",
    line: "first",
  });
  type(editor, text("second"), key("enter"));
  type(editor, text("draft"));
  type(editor, key("up"));
  assert.equal(editor.line, "second");
  type(editor, key("up"));
  assert.equal(editor.line, "first");
  assert.deepEqual(type(editor, key("up")), { kind: "unchanged" });
  type(editor, key("down"), key("down"));
  assert.equal(editor.line, "draft");
  assert.deepEqual(editor.history, ["first", "second"]);
});

Deno.test("LineEditor: Ctrl-D on an empty line is end of input, else deletes forward", () => {
  const editor = new LineEditor();
  assert.deepEqual(type(editor, key("eof")), { kind: "eof" });
  type(editor, text("ab"), key("home"), key("eof"));
  assert.equal(editor.line, "b");
  assert.deepEqual(type(editor, key("interrupt")), { kind: "interrupt" });
});

Deno.test("LineEditor.render scrolls a long line so the cursor stays on screen", () => {
  const editor = new LineEditor();
  type(editor, text("abcdefghijklmnopqrstuvwxyz"));
  // 20 columns: prompt 2, one column kept free, 17 for text.
  const drawn = editor.render("> ", 20);
  assert.equal(drawn, "\r> jklmnopqrstuvwxyz\x1b[K\r\x1b[19C");
  type(editor, key("home"));
  assert.equal(editor.render("> ", 20), "\r> abcdefghijklmnopq\x1b[K\r\x1b[2C");
});

Deno.test("textWidth counts wide characters twice and ignores colour codes", () => {
  assert.equal(textWidth("\x1b[1m>\x1b[0m "), 2);
  assert.equal(textWidth("日本"), 4);
  assert.equal(textWidth("e\u0301"), 1);
});

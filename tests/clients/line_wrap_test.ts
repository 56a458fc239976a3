import assert from "node:assert/strict";
import { packParts, wrapLine } from "../../src/clients/line_wrap.ts";
import { textWidth } from "../../src/clients/terminal_text.ts";

Deno.test("lines break between words, continuations take the indent, a paragraph's own indent stays", () => {
  assert.deepEqual(
    wrapLine("one two three four five six", 10, "  "),
    ["one two", "  three", "  four", "  five six"],
  );
  assert.deepEqual(wrapLine("    #12  a title", 13, "        "), [
    "    #12  a",
    "        title",
  ]);
  assert.deepEqual(wrapLine("a\n  b c", 4, "  "), ["a", "  b", "  c"]);
  // Spaces at a break go; spaces between words that stay together stay.
  assert.deepEqual(wrapLine("ab  cd   ef", 6), ["ab  cd", "ef"]);
  assert.deepEqual(wrapLine("short", Infinity), ["short"]);
  // A trailing space stays where it fits: the answer to a question follows it.
  assert.deepEqual(wrapLine("run it? [y/N] ", 20), ["run it? [y/N] "]);
});

Deno.test("a word wider than the line is cut where the line is full, by characters", () => {
  assert.deepEqual(wrapLine("see https://example.com/a/long/path", 12), [
    "see",
    "https://exam",
    "ple.com/a/lo",
    "ng/path",
  ]);
  // Wide characters take two columns each and are never split.
  const lines = wrapLine("日本語のテキスト", 5);
  assert.deepEqual(lines, ["日本", "語の", "テキ", "スト"]);
});

Deno.test("a style carries over a break and ends at each line's end", () => {
  const dim = "\x1b[2m";
  const reset = "\x1b[0m";
  const lines = wrapLine(`${dim}one two three${reset} four`, 10);
  assert.deepEqual(lines, [
    `${dim}one two${reset}`,
    `${dim}three${reset} four`,
  ]);
  for (const line of lines) {
    assert.ok(textWidth(line) <= 10);
  }
});

Deno.test("parts joined by a separator break only between parts", () => {
  const parts = [
    "desktop-assistant",
    "backend up",
    "tiny",
    "/help for commands",
  ];
  assert.deepEqual(packParts(parts, 80), [
    "desktop-assistant · backend up · tiny · /help for commands",
  ]);
  assert.deepEqual(packParts(parts, 40), [
    "desktop-assistant · backend up · tiny",
    "/help for commands",
  ]);
  assert.deepEqual(packParts(parts, 12), [
    "desktop-assi",
    "stant",
    "backend up",
    "tiny",
    "/help for",
    "commands",
  ]);
});

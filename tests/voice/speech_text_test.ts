import assert from "node:assert/strict";
import {
  CODE_NOTE,
  SpeechText,
  SpokenMarkdown,
  spokenWord,
  TABLE_NOTE,
} from "../../src/voice/speech_text.ts";

/** The spoken text of `markdown` fed in `pieces` (default: whole). */
function spoken(markdown: string, pieces = [markdown]): string {
  const converter = new SpokenMarkdown();
  let out = "";
  for (const piece of pieces) out += converter.push(piece);
  return out + converter.flush();
}

/** The same, fed one character at a time and as tokens with leading spaces (it must not depend on the split), without its last line end. */
function spokenAnyHow(markdown: string): string {
  const whole = spoken(markdown);
  assert.equal(
    spoken(markdown, [...markdown]),
    whole,
    "one character at a time",
  );
  assert.equal(
    spoken(markdown, markdown.match(/\s*\S+|\s+/g) ?? []),
    whole,
    "token by token",
  );
  return whole.trimEnd();
}

Deno.test("emphasis, headings and inline code lose their marks", () => {
  assert.equal(
    spokenAnyHow("## Getting *started*\n\nRun **`deno task start`** now."),
    "Getting started.\nRun deno task start now.",
  );
  assert.equal(
    spokenAnyHow("Use _this_ and __that__, not snake_case."),
    "Use this and that, not snake_case.",
  );
});

Deno.test("a link is spoken as its text; a bare URL is not read out", () => {
  assert.equal(
    spokenAnyHow(
      "See [the manual](https://deno.land/manual) and ![a cat](cat.png).",
    ),
    "See the manual and a cat.",
  );
  assert.equal(
    spokenAnyHow("More at https://example.com/a?b=c, or <https://x.org>."),
    "More at a link, or a link.",
  );
  const text = spokenAnyHow("Go to www.example.com/path today");
  assert.ok(!/example|www|http|\/\//.test(text), text);
});

Deno.test("no *, #, backtick or URL survives a reply full of Markdown", () => {
  const reply = [
    "# Title",
    "Some **bold**, *italic*, `code` and ~~struck~~ words.",
    "* a bullet with [a link](http://a.b/c)",
    "+ another",
    "### Sub *heading*",
    "***",
    "Done at https://example.org.",
  ].join("\n");
  const text = spokenAnyHow(reply);
  assert.ok(!/[*#`]|https?:|~~/.test(text), text);
  assert.match(text, /Title\./);
  assert.match(text, /a bullet with a link\./);
});

Deno.test("list items end as sentences; numbered ones keep their number", () => {
  assert.equal(
    spokenAnyHow("Steps:\n1. Install Deno\n2) Run it\n- then rest\n- [x] done"),
    "Steps:\n1: Install Deno.\n2: Run it.\nthen rest.\nx done.",
  );
});

Deno.test("a paragraph's lines join; a blank line or a block ends it with a period", () => {
  assert.equal(
    spokenAnyHow("A paragraph\nthat wraps\n\nAnother one\n## Next"),
    "A paragraph that wraps.\nAnother one.\nNext.",
  );
});

Deno.test("a fenced code block is replaced by one short note", () => {
  const text = spokenAnyHow(
    'Here:\n\n```ts\nconst url = "https://x.y"; // *not* spoken\n```\n\nThat is all.',
  );
  assert.equal(text, `Here:\n${CODE_NOTE}\nThat is all.`);
  assert.equal(
    spokenAnyHow("~~~\ncode\n~~~\nafter"),
    `${CODE_NOTE}\nafter.`,
  );
});

Deno.test("a code block still open at the reply's end says only the note", () => {
  assert.equal(
    spokenAnyHow("Look\n```py\nprint(1)\n"),
    `Look.\n${CODE_NOTE}`,
  );
});

Deno.test("a table is replaced by one short note", () => {
  const text = spokenAnyHow(
    "Compare:\n\n| name | value |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n\nSo a wins.",
  );
  assert.equal(text, `Compare:\n${TABLE_NOTE}\nSo a wins.`);
});

Deno.test("a quote is spoken as its text", () => {
  assert.equal(
    spokenAnyHow("> Quoted words here.\n\nMine."),
    "Quoted words here.\nMine.",
  );
});

Deno.test("a word is emitted only once the whitespace after it arrives", () => {
  const converter = new SpokenMarkdown();
  assert.equal(converter.push("Hello wor"), "Hello");
  assert.equal(converter.push("ld. And"), " world. ");
  assert.equal(converter.flush(), "And.\n");
});

Deno.test("spokenWord drops syntax-only words and escapes", () => {
  assert.equal(spokenWord("---"), "");
  assert.equal(spokenWord("|"), "");
  assert.equal(spokenWord("\\*literal\\*"), "literal");
  assert.equal(spokenWord("<br>line"), "line");
  assert.equal(spokenWord("3.14"), "3.14");
});

Deno.test("SpeechText is a stream stage", async () => {
  const out = await Array.fromAsync(
    ReadableStream.from(["**Hi** the", "re.\n", "```\nx\n```\n"]).pipeThrough(
      new SpeechText(),
    ),
  );
  assert.equal(out.join(""), `Hi there.\n${CODE_NOTE}\n`);
});

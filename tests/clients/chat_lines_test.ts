import assert from "node:assert/strict";
import {
  formatArgs,
  hitText,
  meterText,
  modelName,
  resultLines,
  styler,
  timingsText,
} from "../../src/clients/chat_lines.ts";

Deno.test("a call's arguments show as compact JSON, escape sequences removed, long ones cut", () => {
  assert.equal(formatArgs({ place: "Paris" }), '{"place": "Paris"}');
  assert.equal(
    formatArgs({ a: [1, true, null], b: { c: "x" } }),
    '{"a": [1, true, null], "b": {"c": "x"}}',
  );
  assert.equal(formatArgs({ t: "\x1b[2Jhi" }), '{"t": "\\u001b[2Jhi"}');
  const long = formatArgs({ text: "y".repeat(1000) });
  assert.equal(long.length, 400);
  assert.ok(long.endsWith("…"));
});

Deno.test("a model is named by its file's name without .gguf", () => {
  assert.equal(modelName("/srv/models/Qwen3-8B.Q4.gguf"), "Qwen3-8B.Q4");
  assert.equal(modelName("tiny"), "tiny");
});

Deno.test("search hits are marked from text and marks, so a reply's own **bold** is no match", () => {
  const mark = (m: string) => `<${m}>`;
  const hit = {
    id: 3,
    title: "Rome",
    snippet: "a **città** of **bold** claims",
    text: "a città of **bold** claims",
    marks: [[2, 7]] as [number, number][],
  };
  assert.equal(hitText(hit, mark), "a <città> of **bold** claims");
  // Without marks, the snippet's markers say where the matches are.
  assert.equal(
    hitText({ id: 3, title: "Rome", snippet: hit.snippet }, mark),
    "a <città> of <bold> claims",
  );
  // Marks that do not fit the text are not trusted: the snippet is.
  for (const marks of [[[5, 2]], [[0, 99]], [[4, 6], [2, 5]], [[1.5, 3]]]) {
    assert.equal(
      hitText({ ...hit, marks: marks as [number, number][] }, mark),
      "a <città> of <bold> claims",
      JSON.stringify(marks),
    );
  }
  // UTF-16 offsets: an emoji before the match counts two.
  assert.equal(
    hitText({
      id: 1,
      title: "t",
      snippet: "",
      text: "😀 ab\ncd  ef",
      marks: [[3, 5], [10, 12]],
    }, mark),
    "😀 <ab> cd <ef>",
  );
  // In colour the match is bold yellow; without colours the snippet shows as sent.
  const [, colored] = resultLines([hit], styler(true), true);
  assert.equal(
    colored!.text,
    "        a \x1b[1m\x1b[33mcittà\x1b[0m of **bold** claims",
  );
  const [, plain] = resultLines([hit], styler(false), false);
  assert.equal(plain!.text, "        a **città** of **bold** claims");
});

Deno.test("the meter counts the turns the summary covers; timings give the speed and the prompt", () => {
  assert.equal(meterText(900, 4096, 2, 2), null);
  assert.equal(
    meterText(3900, 4096, 6, 14),
    "context 3,900/4,096 · 6 of 14 turns",
  );
  assert.equal(
    meterText(3900, null, 6, 14, 8),
    "context 3,900 · 6 of 14 turns · 8 in the summary",
  );
  assert.equal(
    timingsText({
      prompt_n: 35,
      cache_n: 1480,
      predicted_n: 60,
      prompt_ms: 700,
      predicted_ms: 5000,
    }),
    "12 tokens/s · prompt 35 read, 1,480 reused",
  );
  assert.equal(
    timingsText({
      prompt_n: 3,
      cache_n: 0,
      predicted_n: 9,
      prompt_ms: 1,
      predicted_ms: 1000,
    }),
    "9.0 tokens/s · prompt 3 read, 0 reused",
  );
  // Nothing generated: no speed to give.
  assert.equal(
    timingsText({
      prompt_n: 3,
      cache_n: 0,
      predicted_n: 0,
      prompt_ms: 1,
      predicted_ms: 0,
    }),
    "prompt 3 read, 0 reused",
  );
});

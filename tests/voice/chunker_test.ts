import assert from "node:assert/strict";
import {
  ChunkCutter,
  CLAUSE_AFTER,
  SPACE_AFTER,
  SpeechChunker,
} from "../../src/voice/chunker.ts";

/** Every chunk of `text` fed in `pieces` (default: one character at a time), the end included. */
function chunks(text: string, pieces?: string[]): string[] {
  const cutter = new ChunkCutter();
  const out: string[] = [];
  for (const piece of pieces ?? [...text]) out.push(...cutter.push(piece));
  return [...out, ...cutter.flush()];
}

Deno.test("a sentence ends at . ! ? or … before whitespace", () => {
  assert.deepEqual(chunks("One. Two! Three? Four… Five"), [
    "One.",
    "Two!",
    "Three?",
    "Four…",
    "Five",
  ]);
});

Deno.test("a chunk goes out as soon as the whitespace after its sentence arrives", () => {
  const cutter = new ChunkCutter();
  assert.deepEqual(cutter.push("It is done."), []);
  assert.deepEqual(cutter.push(" "), ["It is done."]);
  assert.deepEqual(cutter.push("Next"), []);
  assert.deepEqual(cutter.flush(), ["Next"]);
});

Deno.test("a number such as 3.14 is not a sentence end, even split across pieces", () => {
  assert.deepEqual(chunks("Pi is about 3.14 today. Yes"), [
    "Pi is about 3.14 today.",
    "Yes",
  ]);
  assert.deepEqual(
    chunks("Pi is about 3.14 today. Yes", ["Pi is about 3.", "14 today. Yes"]),
    ["Pi is about 3.14 today.", "Yes"],
  );
});

Deno.test("no sentence ends after a short abbreviation", () => {
  assert.deepEqual(
    chunks("Use a tool, e.g. a hammer. Then i.e. stop. Ask Dr. Smith now."),
    ["Use a tool, e.g. a hammer.", "Then i.e. stop.", "Ask Dr. Smith now."],
  );
  assert.deepEqual(chunks("Mr. and Mrs. Jones met J. Doe. Done"), [
    "Mr. and Mrs. Jones met J. Doe.",
    "Done",
  ]);
  assert.deepEqual(chunks("(e.g. this) and that. End"), [
    "(e.g. this) and that.",
    "End",
  ]);
});

Deno.test("closing quotes and brackets stay with their sentence", () => {
  assert.deepEqual(chunks('He said "stop." Then (it ended.) Fine'), [
    'He said "stop."',
    "Then (it ended.)",
    "Fine",
  ]);
});

Deno.test("an ellipsis of dots and a run of marks end one sentence", () => {
  assert.deepEqual(chunks("Well... maybe?! Sure"), [
    "Well...",
    "maybe?!",
    "Sure",
  ]);
});

Deno.test("a clause break cuts only once 120 characters wait", () => {
  const short = "First part, second part; third part: and the end";
  assert.deepEqual(chunks(short), [short]);
  const clause = "word ".repeat(25).trim(); // 124 characters
  const long = `${clause}, and more words follow here`;
  assert.ok(clause.length + 1 >= CLAUSE_AFTER);
  assert.deepEqual(chunks(long), [`${clause},`, "and more words follow here"]);
});

Deno.test("the clause break cut is the last one among the waiting text", () => {
  const text = `${"a".repeat(50)}, ${"b".repeat(50)}; ${"c".repeat(30)} tail`;
  assert.deepEqual(chunks(text), [
    `${"a".repeat(50)}, ${"b".repeat(50)};`,
    `${"c".repeat(30)} tail`,
  ]);
});

Deno.test("with no punctuation a space cuts once 220 characters wait", () => {
  const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
  const out = chunks(words);
  assert.ok(out.length >= 2, `cut into ${out.length}`);
  assert.equal(out.join(" "), words, "no word lost or split");
  for (const chunk of out.slice(0, -1)) {
    assert.ok(chunk.length >= SPACE_AFTER - 10, `chunk of ${chunk.length}`);
    assert.ok(chunk.length <= SPACE_AFTER, `chunk of ${chunk.length}`);
  }
});

Deno.test("the rest goes out at the reply's end, and nothing unspeakable does", () => {
  assert.deepEqual(chunks("No end mark"), ["No end mark"]);
  assert.deepEqual(chunks("Done. . — "), ["Done."]);
  assert.deepEqual(chunks(""), []);
});

Deno.test("SpeechChunker streams chunks as a stage", async () => {
  const pieces = ["Hello", " there.", " How are", " you? Fine", " then"];
  const readable = ReadableStream.from(pieces).pipeThrough(
    new SpeechChunker(),
  );
  assert.deepEqual(await Array.fromAsync(readable), [
    "Hello there.",
    "How are you?",
    "Fine then",
  ]);
});

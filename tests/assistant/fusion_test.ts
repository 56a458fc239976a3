/** Words and meaning as one list: reciprocal rank fusion, each item tagged with how it was found. */
import assert from "node:assert/strict";
import { fuse, snippetOf } from "../../src/assistant/fusion.ts";
import type { SearchHit } from "../../src/protocol/protocol.ts";

const hit = (id: number): SearchHit => ({
  id,
  title: `T${id}`,
  snippet: `**w${id}**`,
  text: `w${id}`,
  marks: [[0, 2]],
});
const near = (id: number) => ({
  id,
  title: `T${id}`,
  text: `Meaning ${id}`,
  score: 0.9,
});

Deno.test("a conversation found both ways ranks above ones found one way at the same places", () => {
  const fused = fuse([hit(1), hit(2), hit(3)], [near(3), near(4)], 10);
  // 2 and 4 are both second in their lists: a tie keeps words first.
  assert.deepEqual(fused.map((h) => [h.id, h.by]), [
    [3, "both"],
    [1, "words"],
    [2, "words"],
    [4, "meaning"],
  ]);
  // A word hit keeps its snippet and marks; a meaning-only one shows its turn, unmarked.
  assert.deepEqual(fused[0]!.marks, [[0, 2]]);
  assert.deepEqual(fused[3], {
    id: 4,
    title: "T4",
    snippet: "Meaning 4",
    text: "Meaning 4",
    marks: [],
    by: "meaning",
  });
  assert.equal(fuse([hit(1), hit(2)], [near(5)], 2).length, 2, "the limit");
  assert.deepEqual(fuse([], [], 5), []);
});

Deno.test("a meaning-only snippet is the turn's text cut on a word", () => {
  assert.equal(snippetOf("  short\n text "), "short text");
  const long = snippetOf("word ".repeat(100));
  assert.ok(long.length <= 161 && long.endsWith("word…"), long);
});

/** Search matches as offsets into the snippet's text: never confused with the text's own characters. */
import assert from "node:assert/strict";
import { type SearchHit, Store } from "../../src/store/store.ts";
import { clock, turn } from "./fixtures.ts";

/** The text of each mark of a hit. */
function marked(hit: SearchHit): string[] {
  return hit.marks.map(([start, end]) => hit.text.slice(start, end));
}

Deno.test("store: a match is marked by offsets into the text, never mistaken for the reply's own bold", () => {
  using store = new Store(":memory:", { now: clock() });
  const reply =
    "Use **`sorted()`** for a new list; `list.sort()` sorts in place.";
  const id = store.saveTurn(null, turn("How do I order a list?", reply));
  const [hit] = store.search("sorted");
  assert.ok(hit);
  assert.equal(hit.id, id);
  // The reply's own asterisks are in the text as written, and no marker.
  assert.ok(hit.text.includes("**`sorted()`**"), hit.text);
  assert.deepEqual(marked(hit), ["sorted"]);
  const [[start, end] = [0, 0]] = hit.marks;
  assert.equal(hit.text.slice(start - 3, end + 5), "**`sorted()`**");
  // The snippet is as it always was: matches between `**`.
  assert.equal(hit.snippet.replaceAll("**sorted**", "sorted"), hit.text);
  assert.ok(hit.snippet.includes("**`**sorted**()`**"), hit.snippet);

  // A prefix marks whole words, each one; a phrase is one mark.
  assert.deepEqual(marked(store.search("sort")[0]!), [
    "sorted",
    "sort",
    "sorts",
  ]);
  assert.deepEqual(marked(store.search("a new list")[0]!), ["a new list"]);
});

Deno.test("store: marks are UTF-16 offsets, whatever characters the text holds", () => {
  using store = new Store(":memory:", { now: clock() });
  // Characters a marker might have been: none of them is taken for one.
  const reply =
    "😀 \uFFFD \uE000 \uFDD0 ** \u0001 \u00FF\u00FE then the città, 😀 città.";
  store.saveTurn(null, turn("Characters", reply));
  const [hit] = store.search("citta");
  assert.ok(hit);
  assert.equal(hit.text, reply);
  assert.deepEqual(marked(hit), ["città", "città"]);
  assert.deepEqual(hit.marks, [
    [reply.indexOf("città"), reply.indexOf("città") + 5],
    [reply.lastIndexOf("città"), reply.lastIndexOf("città") + 5],
  ]);
  // Cut around the match: the ellipsis is text, and the marks follow it.
  const words = Array.from({ length: 80 }, (_, i) => `😀word${i}`);
  words[40] = "needle";
  store.saveTurn(null, turn("A long one", words.join(" ")));
  const [cut] = store.search("needle");
  assert.ok(cut);
  assert.match(cut.text, /^….*needle.*…$/);
  assert.deepEqual(marked(cut), ["needle"]);
  assert.equal(cut.snippet, cut.text.replace("needle", "**needle**"));
});

Deno.test("store: marks hold on the newest-first path too", () => {
  // rankCap 1: two matches take the path that lists the newest first.
  using store = new Store(":memory:", { now: clock(), rankCap: 1 });
  store.saveTurn(null, turn("about **bold** kiwi", "Kiwi **is** bold."));
  store.saveTurn(null, turn("**kiwi** again", "**Kiwi**!"));
  const hits = store.search("kiwi");
  assert.equal(hits.length, 2);
  for (const hit of hits) {
    assert.ok(hit.marks.length > 0, hit.text);
    for (const mark of marked(hit)) assert.equal(mark.toLowerCase(), "kiwi");
    assert.ok(hit.text.includes("**"), hit.text);
  }
});

/** Default titles: the first six words of the first question, never longer than a title may be. */
import assert from "node:assert/strict";
import { MAX_TITLE_CHARS } from "../../src/protocol/protocol.ts";
import { Store } from "../../src/store/store.ts";
import { titleOf } from "../../src/store/title.ts";
import { clock, turn } from "./fixtures.ts";

const points = (text: string) => Array.from(text).length;

Deno.test("title: the first six words, whitespace runs made single spaces", () => {
  assert.equal(
    titleOf("  What   is the\tweather\nlike in Rome today?"),
    "What is the weather like in",
  );
  assert.equal(titleOf("Hello"), "Hello");
  assert.equal(titleOf(" \n "), "");
});

Deno.test("title: a huge first word makes a title of at most 200 characters, and the list stays small", () => {
  const word = "a".repeat(300_000);
  assert.equal(titleOf(word), "a".repeat(MAX_TITLE_CHARS));
  using store = new Store(":memory:", { now: clock() });
  const id = store.saveTurn(null, turn(`${word} and more`, "Long."));
  const [item] = store.list();
  assert.equal(item?.id, id);
  assert.equal(item?.title, "a".repeat(MAX_TITLE_CHARS));
  assert.ok(JSON.stringify(store.list()).length < 1000);
  // The question itself is kept whole.
  assert.equal(store.open(id)?.turns[0]?.user.length, word.length + 9);
});

Deno.test("title: the cut counts code points and never splits a surrogate pair", () => {
  // 😀 is two UTF-16 units: 300 of them are 600 units, 300 code points.
  const title = titleOf("😀".repeat(300));
  assert.equal(title, "😀".repeat(MAX_TITLE_CHARS));
  assert.equal(title.length, 2 * MAX_TITLE_CHARS);
  assert.ok(title.isWellFormed());
  // A pair straddling the 200th code point is left out whole.
  const straddling = titleOf(`${"b".repeat(199)}😀😀`);
  assert.equal(straddling, `${"b".repeat(199)}😀`);
  assert.equal(points(straddling), MAX_TITLE_CHARS);
  // Words under the limit together stay whole; a cut that lands on a space
  // leaves no trailing space.
  const words = `${"c".repeat(150)} ${"d".repeat(49)} ${"e".repeat(100)}`;
  assert.equal(titleOf(words), `${"c".repeat(150)} ${"d".repeat(49)}`);
});

Deno.test("title: a replaced first turn's long question still moves the title it gave", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = store.saveTurn(null, turn("x".repeat(5000), "?"));
  assert.equal(
    store.replaceLastTurn(id, turn("y".repeat(5000), "!")),
    "y".repeat(MAX_TITLE_CHARS),
  );
  assert.equal(store.list()[0]?.title, "y".repeat(MAX_TITLE_CHARS));
});

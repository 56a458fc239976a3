/** Learning whether llama-server shifts a model's prompt cache. */
import assert from "node:assert/strict";
import { CacheBook } from "../../src/assistant/cache_book.ts";

function facts() {
  const kept = new Map<string, boolean>();
  return {
    kept,
    cacheShift: (model: string) =>
      kept.has(model) ? { shifts: kept.get(model)! } : null,
    setCacheShift: (model: string, shifts: boolean) => {
      kept.set(model, shifts);
    },
  };
}

const SHIFTED = { fixed: 200, kept: 800, cacheN: 980, reuse: 256 };
const REREAD = { fixed: 200, kept: 800, cacheN: 210, reuse: 256 };

Deno.test("two moved windows in a row whose kept turns were reused mean the cache shifts; reread from the first turn, it cannot", () => {
  const store = facts();
  const book = new CacheBook(store);
  assert.equal(book.shifts("a"), null);
  assert.equal(book.observe("a", SHIFTED), null);
  assert.equal(book.observe("a", SHIFTED), true);
  assert.equal(book.observe("b", REREAD), null);
  assert.equal(book.observe("b", REREAD), false);
  assert.deepEqual([...store.kept], [["a", true], ["b", false]]);
  // Kept in the file: a new book reads it back.
  assert.equal(new CacheBook(store).shifts("b"), false);
});

Deno.test("kept turns shorter than the shortest run n_cache_reuse reuses tell nothing", () => {
  const store = facts();
  const book = new CacheBook(store);
  book.observe("a", REREAD);
  book.observe("a", REREAD);
  // Any server reads such turns again.
  assert.equal(
    book.observe("a", { fixed: 200, kept: 100, cacheN: 900, reuse: 256 }),
    null,
  );
  assert.equal(book.shifts("a"), false);
});

Deno.test("a cache that held nothing of the request (a restart of the server) does not flip a finding on its own", () => {
  const book = new CacheBook(facts());
  book.observe("m", SHIFTED);
  book.observe("m", SHIFTED);
  assert.equal(
    book.observe("m", { fixed: 200, kept: 800, cacheN: 0, reuse: 256 }),
    null,
  );
  assert.equal(book.observe("m", SHIFTED), true);
  assert.equal(book.shifts("m"), true);
});

Deno.test("one stray sample never flips a finding: a saved prompt of another conversation says little", () => {
  const book = new CacheBook(facts());
  book.observe("a", SHIFTED);
  book.observe("a", SHIFTED);
  // One request served from another conversation's saved prompt...
  assert.equal(book.observe("a", REREAD), null);
  assert.equal(book.shifts("a"), true);
  // ...then the usual again: the finding stands, and the stray is forgotten.
  assert.equal(book.observe("a", SHIFTED), true);
  assert.equal(book.observe("a", REREAD), null);
  assert.equal(book.shifts("a"), true);
});

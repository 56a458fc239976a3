/** A conversation's summary: stored beside it, carried by open and record, left alone by every other write, gone with it. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Store, type StoredSummary } from "../../src/store/store.ts";
import {
  clock,
  count,
  peek,
  settle,
  tempDir,
  turn,
  walrusConversation,
} from "./fixtures.ts";

const SUMMARY: StoredSummary = {
  text: "The user asked about walruses; tusks came up.",
  turns: 2,
  tokens: 12,
};

Deno.test("summary: set, read, carried by open and record, replaced, removed", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = walrusConversation(store, 4);
  assert.equal(store.summary(id), null);
  assert.equal(store.open(id)?.summary, null);
  assert.equal(store.record(id)?.summary, null);

  assert.equal(store.setSummary(id, SUMMARY), true);
  assert.deepEqual(store.summary(id), SUMMARY);
  const opened = store.open(id);
  assert.deepEqual(opened?.summary, SUMMARY);
  // The turns it covers stay stored and shown.
  assert.equal(opened?.turns.length, 4);
  assert.deepEqual(store.record(id)?.summary, SUMMARY);

  const wider = {
    text: "Walruses, tusks and blubber.",
    turns: 3,
    tokens: null,
  };
  assert.equal(store.setSummary(id, wider), true);
  assert.deepEqual(store.summary(id), wider);
  assert.equal(store.setSummary(id, null), true);
  assert.equal(store.summary(id), null);
  assert.equal(store.open(id)?.summary, null);
  // Removing none is no error.
  assert.equal(store.setSummary(id, null), true);
});

Deno.test("summary: saves, a replaced last turn, a rename and a turn's size leave it as it is", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = walrusConversation(store, 3);
  const other = store.saveTurn(null, turn("another question", "Other."));
  assert.equal(store.setSummary(id, SUMMARY), true);
  // The summary is no activity: the list keeps its order.
  assert.deepEqual(store.list().map((item) => item.id), [other, id]);

  store.saveTurn(id, turn("walrus 3", "Blubber 3."));
  assert.deepEqual(store.summary(id), SUMMARY);
  assert.equal(store.replaceLastTurn(id, turn("walrus again", "Tusks.")), null);
  assert.deepEqual(store.summary(id), SUMMARY);
  assert.equal(store.rename(id, "Walruses"), true);
  const last = store.lastTurnId(id);
  assert.ok(last !== null);
  assert.equal(store.setTurnTokens(last, 99), true);
  assert.deepEqual(store.summary(id), SUMMARY);
  // Another conversation's writes do not reach it either, nor it theirs.
  store.saveTurn(other, turn("more", "More."));
  assert.deepEqual(store.summary(id), SUMMARY);
  assert.equal(store.summary(other), null);
});

Deno.test("summary: a retry of the only turn keeps the summary of it", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = store.saveTurn(null, turn("first question", "First."));
  const one = { text: "A first question.", turns: 1, tokens: 4 };
  assert.equal(store.setSummary(id, one), true);
  store.replaceLastTurn(id, turn("first question", "Again."));
  assert.deepEqual(store.open(id)?.summary, one);
});

Deno.test("summary: it survives reopening and goes with its conversation", () => {
  using temp = tempDir();
  const path = join(temp.dir, "history.db");
  let id: number;
  let kept: number;
  {
    using store = new Store(path, { now: clock() });
    id = walrusConversation(store, 3);
    kept = walrusConversation(store, 2);
    assert.equal(store.setSummary(id, SUMMARY), true);
    assert.equal(store.setSummary(kept, { ...SUMMARY, turns: 1 }), true);
  }
  using store = new Store(path, { now: clock() });
  assert.deepEqual(store.summary(id), SUMMARY);

  assert.equal(store.delete(id), true);
  // Gone for every read at once, before upkeep removes the rows.
  assert.equal(store.summary(id), null);
  assert.equal(store.open(id), null);
  assert.equal(store.record(id), null);
  assert.equal(store.setSummary(id, SUMMARY), false);
  settle(store);
  const rows = (conv: number) =>
    peek(
      path,
      (db) =>
        count(db, "SELECT count(*) AS n FROM summaries WHERE conv = ?", conv),
    );
  assert.equal(rows(id), 0);
  assert.equal(rows(kept), 1);
  assert.deepEqual(store.summary(kept), { ...SUMMARY, turns: 1 });
  assert.deepEqual(store.integrityCheck(), []);
});

Deno.test("summary: a malformed one, or one covering turns not stored, is refused and nothing changes", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = walrusConversation(store, 2);
  assert.equal(store.setSummary(id, SUMMARY), true);
  const refused: [unknown, ErrorConstructor][] = [
    [{ ...SUMMARY, turns: 0 }, RangeError],
    [{ ...SUMMARY, turns: 1.5 }, RangeError],
    [{ ...SUMMARY, turns: 3 }, RangeError],
    [{ ...SUMMARY, tokens: -1 }, RangeError],
    [{ ...SUMMARY, tokens: 2.5 }, RangeError],
    [{ ...SUMMARY, text: 7 }, TypeError],
    [{ turns: 1, tokens: 1 }, TypeError],
  ];
  for (const [summary, kind] of refused) {
    assert.throws(
      () => store.setSummary(id, summary as StoredSummary),
      kind,
      JSON.stringify(summary),
    );
  }
  assert.throws(
    () => store.setSummary(id, { ...SUMMARY, turns: 3 }),
    /covers 3 turns of conversation \d+, which has 2/,
  );
  assert.deepEqual(store.summary(id), SUMMARY);
  // A missing conversation is an answer, not an error.
  assert.equal(store.setSummary(9999, SUMMARY), false);
  assert.equal(store.summary(9999), null);
});

/** The store's side of conversation control: replacing the last turn, renaming, and the record `export` writes. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { Store, titleOf } from "../../src/store/store.ts";
import { clock, SINCE_7, turn } from "./fixtures.ts";

Deno.test("replaceLastTurn swaps the last turn in place: open, search and the index follow", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = store.saveTurn(null, turn("first question", "First reply."));
  store.saveTurn(id, turn("second question", "A wrong reply."));
  assert.equal(
    store.replaceLastTurn(id, turn("second question", "A better reply.")),
    null,
  );
  const opened = store.open(id);
  assert.deepEqual(opened?.turns.map((t) => [t.user, t.reply]), [
    ["first question", "First reply."],
    ["second question", "A better reply."],
  ]);
  assert.equal(opened?.messages[1]?.[1]?.content, "A better reply.");
  assert.deepEqual(store.search("wrong"), []);
  assert.deepEqual(store.search("better").map((hit) => hit.id), [id]);
  assert.deepEqual(store.integrityCheck(), []);
  // The title came from the first question and stays.
  assert.equal(store.list()[0]?.title, "first question");
});

Deno.test("replaceLastTurn drops the replaced turn's vector in the same transaction; the other turns keep theirs", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = store.saveTurn(null, turn("first question", "First reply."));
  store.saveTurn(id, turn("second question", "A wrong reply."));
  const [first, second] = [1, 2];
  const model = { name: "embedder", dim: 2 };
  const data = new Uint8Array([0, 0, 0, 0, 1, 2]);
  assert.equal(
    store.vectors.putAll(model.name, [
      { turn: first, dim: 2, data },
      { turn: second, dim: 2, data },
    ]),
    2,
  );
  store.replaceLastTurn(id, turn("second question", "A better reply."));
  assert.deepEqual(store.vectors.progress(model), { done: 1, total: 2 });
  assert.deepEqual(
    store.vectors.pendingOf([first, second], model).map((t) => t.text),
    ["second question\n\nA better reply."],
  );
});

Deno.test("replacing the only turn moves a title that came from its question, never one the user gave", () => {
  using store = new Store(":memory:", { now: clock() });
  const a = store.saveTurn(null, turn("waht is teh capitel", "?"));
  assert.equal(
    store.replaceLastTurn(a, turn("what is the capital of France", "Paris.")),
    titleOf("what is the capital of France"),
  );
  const b = store.saveTurn(null, turn("a question", "A reply."));
  assert.equal(store.rename(b, "My own title"), true);
  assert.equal(store.replaceLastTurn(b, turn("another question", "R.")), null);
  const titles = new Map(store.list().map((item) => [item.id, item.title]));
  assert.equal(titles.get(a), "what is the capital of France");
  assert.equal(titles.get(b), "My own title");
});

Deno.test("replaceLastTurn and rename refuse a conversation that is gone, and change nothing", () => {
  using store = new Store(":memory:", { now: clock() });
  assert.throws(
    () => store.replaceLastTurn(42, turn("q", "r")),
    /no such conversation/,
  );
  const id = store.saveTurn(null, turn("kept question", "Kept reply."));
  assert.equal(store.delete(id), true);
  assert.throws(
    () => store.replaceLastTurn(id, turn("q", "r")),
    /no such conversation/,
  );
  const other = store.saveTurn(null, turn("other", "Other."));
  const before = store.list();
  assert.equal(store.rename(id, "late"), false);
  assert.equal(store.rename(999, "nothing"), false);
  assert.deepEqual(store.list(), before);
  assert.equal(store.open(other)?.turns.length, 1);
});

Deno.test("rename sets the title without moving the conversation in the list", () => {
  using store = new Store(":memory:", { now: clock() });
  const older = store.saveTurn(null, turn("older", "1"));
  const newer = store.saveTurn(null, turn("newer", "2"));
  const before = store.list();
  assert.equal(store.rename(older, "Renamed"), true);
  const after = store.list();
  assert.deepEqual(after.map((item) => item.id), [newer, older]);
  assert.deepEqual(
    after.map((item) => item.updated),
    before.map((i) => i.updated),
  );
  assert.equal(after[1]?.title, "Renamed");
});

Deno.test("record holds the dates and each turn's time, the tools included", () => {
  const now = clock(1_800_000_000);
  using store = new Store(":memory:", { now });
  const id = store.saveTurn(null, turn("q1", "r1"));
  store.saveTurn(id, turn("q2", "r2", ["date", "weather"]));
  store.replaceLastTurn(id, turn("q2 again", "r2 again", ["date"]));
  const record = store.record(id);
  // Each reading of the clock is a minute on: 1,800,000,060, +120, +180.
  assert.deepEqual(record, {
    id,
    title: "q1",
    created: 1_800_000_060,
    updated: 1_800_000_180,
    summary: null,
    turns: [
      { user: "q1", reply: "r1", tools: [], at: 1_800_000_060 },
      {
        user: "q2 again",
        reply: "r2 again",
        tools: ["date"],
        at: 1_800_000_180,
      },
    ],
  });
  assert.equal(store.record(id + 1), null);
  store.delete(id);
  assert.equal(store.record(id), null);
});

Deno.test("turns saved before turns had a time take their conversation's updated of then", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    let id: number;
    {
      using store = new Store(path, { now: clock(1_700_000_000) });
      id = store.saveTurn(null, turn("old one", "Old."));
      store.saveTurn(id, turn("old two", "Older."));
    }
    // Back to version 4, before turn times (and the token counts and
    // summaries that came after them).
    const raw = new DatabaseSync(path);
    raw.exec(`DROP TABLE summaries;
              ALTER TABLE turns DROP COLUMN at;
              ALTER TABLE conversations DROP COLUMN legacy_at;
              ALTER TABLE turns DROP COLUMN tokens;
              ${SINCE_7}
              PRAGMA user_version = 4;`);
    raw.close();
    using store = new Store(path, { now: clock(1_900_000_000) });
    store.saveTurn(id, turn("new three", "New."));
    const record = store.record(id);
    assert.deepEqual(record?.turns.map((t) => t.at), [
      1_700_000_120,
      1_700_000_120,
      1_900_000_060,
    ]);
    assert.equal(record?.updated, 1_900_000_060);
    assert.deepEqual(store.integrityCheck(), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

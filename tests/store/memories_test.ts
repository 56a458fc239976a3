/** The memories in the history file: the block of memories each conversation keeps from its first save, and a memory's source named after it was kept. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { migrate, SCHEMA_VERSION } from "../../src/store/schema.ts";
import { Store } from "../../src/store/store.ts";
import { clock, settle, tempDir, turn } from "./fixtures.ts";

const BLOCK = {
  text: "\n\nWhat you know about the user:\n- Likes tea",
  count: 1,
};

Deno.test("a new conversation keeps the memory block its first turn was saved with; later saves and a retry leave it", () => {
  using store = new Store(":memory:", { now: clock() });
  const id = store.saveTurn(null, turn("tea?", "Tea."), { memory: BLOCK });
  assert.deepEqual(store.open(id)?.memory, BLOCK);
  // Only a conversation's first save keeps one.
  store.saveTurn(id, turn("more?", "More."), {
    memory: { text: "other", count: 3 },
  });
  store.replaceLastTurn(id, turn("again?", "Again."));
  assert.deepEqual(store.open(id)?.memory, BLOCK);
  // None carried is kept as such, apart from none kept at all.
  const none = store.saveTurn(null, turn("hi", "Hi."), {
    memory: { text: "", count: 0 },
  });
  assert.deepEqual(store.open(none)?.memory, { text: "", count: 0 });
  const unkept = store.saveTurn(null, turn("hello", "Hello."));
  assert.equal(store.open(unkept)?.memory, null);
  assert.equal(store.memories.block(999), null);
});

Deno.test("a file of schema version 10 gains the memory block: its conversations keep none and open as before", () => {
  using temp = tempDir();
  const path = join(temp.dir, "history.db");
  const raw = new DatabaseSync(path);
  raw.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON");
  migrate(raw, path, 10);
  raw.exec(
    `INSERT INTO conversations(title, created, updated) VALUES ('old', 1, 1);
     INSERT INTO turns(conv, seq, user, reply, tools, messages, at)
       VALUES (1, 1, 'old question', 'old reply', '[]', '[]', 1);`,
  );
  raw.close();
  assert.equal(SCHEMA_VERSION, 11);
  using store = new Store(path, { now: clock() });
  const opened = store.open(1);
  assert.equal(opened?.turns[0]?.user, "old question");
  assert.equal(opened?.memory, null);
  const id = store.saveTurn(null, turn("new", "New."), { memory: BLOCK });
  assert.deepEqual(store.open(id)?.memory, BLOCK);
  assert.deepEqual(store.integrityCheck(), []);
});

Deno.test("a memory's source is named after it was kept, its date unchanged; none once its conversation is deleted", () => {
  let now = 1_700_000_000_000;
  using store = new Store(":memory:", { now: () => (now += 60_000) });
  const memory = store.memories.add("Likes tea");
  const [kept] = store.memories.list();
  assert.equal(kept?.source, null);
  const id = store.saveTurn(null, turn("tea?", "Tea."));
  assert.equal(store.memories.setSource(memory, { id, turn: 0 }), true);
  const [sourced] = store.memories.list();
  assert.deepEqual(sourced?.source, { id, turn: 0 });
  assert.equal(sourced?.updated, kept?.updated);
  assert.equal(store.memories.setSource(999, { id, turn: 0 }), false);
  store.delete(id);
  assert.equal(store.memories.list()[0]?.source, null);
  settle(store);
  assert.equal(store.memories.list()[0]?.source, null);
});

Deno.test("memories are listed by when they last changed: a rewritten one comes first", () => {
  let now = 1_700_000_000_000;
  using store = new Store(":memory:", { now: () => (now += 60_000) });
  const tea = store.memories.add("Likes tea");
  const units = store.memories.add("Prefers metric units");
  assert.deepEqual(store.memories.list().map((m) => m.id), [units, tea]);
  assert.equal(store.memories.rewrite(tea, "Likes green tea"), true);
  const [first, second] = store.memories.list();
  assert.deepEqual([first?.id, first?.text], [tea, "Likes green tea"]);
  assert.equal(second?.id, units);
  assert.ok(first!.updated > first!.created, "its change is dated");
});

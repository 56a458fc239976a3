/** Stored rows read back: a damaged column never hides its turn. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { Store } from "../../src/store/store.ts";
import { turn } from "./fixtures.ts";

Deno.test("store: a turn with unreadable stored JSON still opens", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path);
    const id = store.saveTurn(null, turn("question", "answer", ["date"]));
    const raw = new DatabaseSync(path);
    raw.exec("UPDATE turns SET tools = 'oops', messages = '{'");
    raw.close();
    const opened = store.open(id);
    assert.deepEqual(opened?.turns, [
      { user: "question", reply: "answer", tools: [] },
    ]);
    assert.deepEqual(opened?.messages, [[
      { role: "user", content: "question" },
      { role: "assistant", content: "answer" },
    ]]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** The schema: files of every earlier version migrate keeping their rows, a newer one is refused, the checks find damage. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { AssistantError } from "../../src/base/errors.ts";
import { migrate, SCHEMA_VERSION } from "../../src/store/schema.ts";
import { Store } from "../../src/store/store.ts";
import { clock, count, peek, settle, SINCE_7, turn } from "./fixtures.ts";

Deno.test("store: a schema version 2 file migrates, keeping its conversations", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    let id: number;
    {
      using store = new Store(path, { now: clock() });
      id = store.saveTurn(null, turn("an old question", "An old reply."));
    }
    // Back to version 2: no deleted_conversations, FTS5's default automerge,
    // no turn times, no token counts, no summaries.
    const raw = new DatabaseSync(path);
    raw.exec(`DROP TABLE summaries;
              DROP TABLE deleted_conversations;
              INSERT INTO turns_fts(turns_fts, rank) VALUES ('automerge', 4);
              ALTER TABLE turns DROP COLUMN at;
              ALTER TABLE conversations DROP COLUMN legacy_at;
              ALTER TABLE turns DROP COLUMN tokens;
              ${SINCE_7}
              PRAGMA user_version = 2;`);
    raw.close();

    using store = new Store(path, { now: clock() });
    peek(path, (db) => {
      assert.equal(
        db.prepare("PRAGMA user_version").get()?.user_version,
        SCHEMA_VERSION,
      );
      assert.equal(
        db.prepare("SELECT v FROM turns_fts_config WHERE k = 'automerge'").get()
          ?.v,
        0,
      );
    });
    assert.deepEqual(store.search("old").map((h) => h.id), [id]);
    const other = store.saveTurn(null, turn("a new question", "New."));
    assert.equal(store.delete(id), true);
    assert.deepEqual(store.list().map((i) => i.id), [other]);
    settle(store);
    assert.deepEqual(store.search("old"), []);
    assert.deepEqual(store.integrityCheck(), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a file made at schema version 3 migrates to ids that never come back, keeping every row", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    // The file as the daemon made it at version 3, with data in every table.
    const raw = new DatabaseSync(path);
    raw.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON");
    migrate(raw, path, 3);
    raw.exec(`
      INSERT INTO conversations(id, title, created, updated) VALUES
        (1, 'kept one', 100, 100), (2, 'kept two', 200, 200),
        (3, 'being deleted', 300, 300), (4, 'gone already', 400, 400);
      INSERT INTO turns(conv, seq, user, reply, tools, messages) VALUES
        (1, 1, 'apricot question', 'apricot reply', '[]', '[]'),
        (2, 1, 'banana question', 'banana reply', '[]', '[]'),
        (2, 2, 'banana again', 'more banana', '["date"]', '[]'),
        (3, 1, 'cherry question', 'cherry reply', '[]', '[]');
      INSERT INTO deleted_conversations(id) VALUES (3);
      DELETE FROM conversations WHERE id = 4;`);
    raw.close();

    using store = new Store(path, { now: clock(1000) });
    peek(path, (db) => {
      assert.equal(
        db.prepare("PRAGMA user_version").get()?.user_version,
        SCHEMA_VERSION,
      );
      const table = db.prepare(
        "SELECT sql FROM sqlite_schema WHERE name = 'conversations'",
      ).get();
      assert.match(String(table?.sql), /AUTOINCREMENT/);
      assert.deepEqual(
        db.prepare("PRAGMA index_list(conversations)").all()
          .map((row) => row.name),
        ["conversations_updated"],
      );
      // turns and deleted_conversations still cascade from conversations.
      for (const child of ["turns", "deleted_conversations"]) {
        const keys = db.prepare(`PRAGMA foreign_key_list(${child})`).all();
        assert.deepEqual(
          keys.map((key) => [key.table, key.on_delete]),
          [["conversations", "CASCADE"]],
          child,
        );
      }
    });
    assert.deepEqual(store.integrityCheck(), []);
    assert.deepEqual(store.list(), [
      { id: 2, title: "kept two", updated: 200 },
      { id: 1, title: "kept one", updated: 100 },
    ]);
    assert.deepEqual(store.open(2)?.turns, [
      { user: "banana question", reply: "banana reply", tools: [] },
      { user: "banana again", reply: "more banana", tools: ["date"] },
    ]);
    assert.deepEqual(store.search("apricot").map((hit) => hit.id), [1]);
    // The delete in flight at the old version finishes, its turns with it.
    settle(store);
    assert.equal(
      peek(path, (db) => count(db, "SELECT count(*) AS n FROM turns")),
      3,
    );
    assert.deepEqual(store.search("cherry"), []);

    // From here on, a deleted id is never given again.
    const fresh = store.saveTurn(null, turn("durian question", "durian"));
    assert.ok(fresh >= 4, `id ${fresh}`);
    assert.equal(store.delete(fresh), true);
    settle(store);
    const after = store.saveTurn(null, turn("elderberry question", "e"));
    assert.ok(after > fresh, `id ${after} after deleting ${fresh}`);
    assert.deepEqual(store.integrityCheck(), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: turns keep their token counts; turns saved before the counts open with none", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    let id: number;
    {
      using store = new Store(path, { now: clock() });
      id = store.saveTurn(null, turn("an old question", "An old reply."));
    }
    // The file as schema version 5, before the counts, left it.
    const raw = new DatabaseSync(path);
    raw.exec(`DROP TABLE summaries;
              ALTER TABLE turns DROP COLUMN tokens;
              ${SINCE_7}
              PRAGMA user_version = 5;`);
    raw.close();

    using store = new Store(path, { now: clock() });
    store.saveTurn(id, { ...turn("a new question", "New."), tokens: 42 });
    const opened = store.open(id);
    assert.deepEqual(opened?.tokens, [null, 42]);
    // A retry's turn brings its own size.
    store.replaceLastTurn(id, {
      ...turn("a new question", "Again."),
      tokens: 7,
    });
    assert.deepEqual(store.open(id)?.tokens, [null, 7]);
    assert.deepEqual(opened?.turns.map((t) => t.user), [
      "an old question",
      "a new question",
    ]);
    assert.deepEqual(store.integrityCheck(), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: integrityCheck reports an index that disagrees with its table", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path);
    store.saveTurn(null, turn("kept question", "kept reply"));
    assert.deepEqual(store.integrityCheck(), []);
    const raw = new DatabaseSync(path);
    try {
      // A change made behind the triggers' back.
      raw.exec("DROP TRIGGER turns_au");
      raw.exec("UPDATE turns SET reply = 'something else entirely'");
    } finally {
      raw.close();
    }
    const problems = store.integrityCheck();
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? "", /full-text index/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a database from a newer schema is refused with a clear error", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    new Store(path).close();
    const raw = new DatabaseSync(path);
    raw.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    assert.throws(
      () => new Store(path),
      (e) =>
        e instanceof AssistantError && /upgrade the daemon/.test(e.message),
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a file made at schema version 6 gains summaries, and its huge default titles are cut", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    // The file as the daemon made it at version 6, with data in every table.
    const huge = `${"w".repeat(300_000)} and more`;
    const raw = new DatabaseSync(path);
    raw.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON");
    migrate(raw, path, 6);
    const conversation = raw.prepare(
      `INSERT INTO conversations(title, created, updated, legacy_at)
       VALUES (?, ?, ?, ?)`,
    );
    conversation.run("kept title", 100, 100, null);
    conversation.run(huge.split(" ")[0]!, 200, 200, null);
    conversation.run("being deleted", 300, 300, null);
    conversation.run("😀".repeat(300), 150, 150, null);
    raw.prepare(
      `INSERT INTO turns(conv, seq, user, reply, tools, messages, at, tokens)
       VALUES (?, 1, ?, ?, '[]', '[]', ?, ?)`,
    ).run(1, "apricot question", "apricot reply", 100, 30);
    raw.prepare(
      `INSERT INTO turns(conv, seq, user, reply, tools, messages, at, tokens)
       VALUES (2, 1, ?, 'long', '[]', '[]', 200, NULL),
              (3, 1, 'cherry question', 'cherry', '[]', '[]', 300, 5),
              (4, 1, ?, 'smiles', '[]', '[]', 150, 5)`,
    ).run(huge, "😀".repeat(300));
    raw.exec("INSERT INTO deleted_conversations(id) VALUES (3)");
    raw.close();

    using store = new Store(path, { now: clock(1000) });
    peek(path, (db) => {
      assert.equal(
        db.prepare("PRAGMA user_version").get()?.user_version,
        SCHEMA_VERSION,
      );
      const keys = db.prepare("PRAGMA foreign_key_list(summaries)").all();
      assert.deepEqual(
        keys.map((key) => [key.table, key.on_delete]),
        [["conversations", "CASCADE"]],
      );
    });
    assert.deepEqual(store.integrityCheck(), []);
    // Default titles as they are made now (code points, no pair split);
    // the question itself is whole.
    assert.deepEqual(store.list(), [
      { id: 2, title: "w".repeat(200), updated: 200 },
      { id: 4, title: "😀".repeat(200), updated: 150 },
      { id: 1, title: "kept title", updated: 100 },
    ]);
    assert.equal(store.open(2)?.turns[0]?.user, huge);
    assert.deepEqual(store.open(1)?.tokens, [30]);
    assert.equal(store.open(1)?.summary, null);
    assert.deepEqual(store.search("apricot").map((hit) => hit.id), [1]);

    // A retry of that first turn still moves the title it gave.
    assert.equal(
      store.replaceLastTurn(2, turn(`${"v".repeat(300)} again`, "Short.")),
      "v".repeat(200),
    );
    const summary = { text: "Apricots.", turns: 1, tokens: 3 };
    assert.equal(store.setSummary(1, summary), true);
    assert.deepEqual(store.open(1)?.summary, summary);
    // The delete in flight at the old version finishes.
    settle(store);
    assert.equal(
      peek(path, (db) => count(db, "SELECT count(*) AS n FROM conversations")),
      3,
    );
    assert.deepEqual(store.integrityCheck(), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

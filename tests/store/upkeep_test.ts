/** Upkeep: deleted conversations drained, the WAL checkpointed, index segments merged, all between other work. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { AssistantError } from "../../src/base/errors.ts";
import { Store } from "../../src/store/store.ts";
import {
  clock,
  count,
  eventually,
  peek,
  rawIntegrity,
  settle,
  turn,
  turnsLeft,
  walrusConversation,
} from "./fixtures.ts";

/** FTS5 index segments in the file. */
function segments(db: DatabaseSync): number {
  return count(db, "SELECT count(DISTINCT segid) AS n FROM turns_fts_idx");
}

/** FTS5 index segments of the files' text. */
function fileSegments(db: DatabaseSync): number {
  return count(db, "SELECT count(DISTINCT segid) AS n FROM files_fts_idx");
}

Deno.test("store: a deleted conversation is never found, before or after upkeep removes its rows", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, { now: clock() });
    const gone = store.saveTurn(null, turn("tell me about otters", "Otters!"));
    store.saveTurn(gone, turn("and beavers?", "Beavers build dams."));
    const kept = store.saveTurn(null, turn("otters again", "Still otters."));
    assert.equal(store.search("otters").length, 2);

    const gonePhase = (phase: string) => {
      assert.deepEqual(store.search("otters").map((h) => h.id), [kept], phase);
      assert.deepEqual(store.search("beavers"), [], phase);
      assert.deepEqual(store.search("otters", 1).map((h) => h.id), [kept]);
      assert.equal(store.open(gone), null, phase);
      assert.equal(store.exists(gone), false, phase);
      assert.deepEqual(store.list().map((i) => i.id), [kept], phase);
      assert.equal(store.delete(gone), false, phase);
      assert.throws(
        () => store.saveTurn(gone, turn("late beavers", "lost")),
        (e) =>
          e instanceof AssistantError && e.message === "no such conversation",
      );
      // Both checks pass at every step: turns and index agree throughout.
      assert.deepEqual(store.integrityCheck(), [], phase);
      assert.deepEqual(peek(path, rawIntegrity), [], phase);
    };

    assert.equal(store.delete(gone), true);
    // The delete itself only marked it: the rows wait for upkeep.
    assert.equal(turnsLeft(path, gone), 2);
    gonePhase("before upkeep");

    settle(store);
    peek(path, (db) => {
      assert.equal(
        count(db, "SELECT count(*) AS n FROM turns WHERE conv = ?", gone),
        0,
      );
      assert.equal(
        count(db, "SELECT count(*) AS n FROM conversations WHERE id = ?", gone),
        0,
      );
      assert.equal(
        count(db, "SELECT count(*) AS n FROM deleted_conversations"),
        0,
      );
      // The index itself, not only the content table, lost the words.
      assert.equal(
        count(
          db,
          "SELECT count(*) AS n FROM turns_fts WHERE turns_fts MATCH 'beavers'",
        ),
        0,
      );
    });
    gonePhase("after upkeep");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a deleted conversation with a damaged turn is still removed to the end", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, { now: clock() });
    const long = walrusConversation(store, 100);
    // As an outside writer or a damaged file could leave it.
    peek(path, (db) => db.exec("UPDATE turns SET seq = NULL WHERE seq = 50"));
    assert.equal(store.delete(long), true);
    let steps = 0;
    while (store.maintain()) {
      assert.ok(++steps < 50, "the drain ends");
    }
    assert.equal(turnsLeft(path, long), 0);
    peek(path, (db) =>
      assert.equal(
        count(db, "SELECT count(*) AS n FROM conversations WHERE id = ?", long),
        0,
      ));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: upkeep removes a long deleted conversation by itself, a batch at a time", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, { now: clock() });
    const kept = store.saveTurn(null, turn("a walrus question", "Tusks."));
    const long = walrusConversation(store, 150);
    assert.equal(store.delete(long), true);
    const left = () => turnsLeft(path, long);
    // One step removes one batch, not the whole conversation.
    assert.equal(store.maintain(), true);
    const after = left();
    assert.ok(after > 0 && after < 150, `${after} turns left`);
    // The store's own timer does the rest.
    await eventually(() => {
      // Never found while its rows go.
      assert.deepEqual(store.search("walrus").map((h) => h.id), [kept]);
      assert.deepEqual(store.search("blubber"), []);
      return left() === 0;
    }, "upkeep removed the deleted conversation");
    peek(path, (db) => {
      assert.equal(
        count(db, "SELECT count(*) AS n FROM deleted_conversations"),
        0,
      );
      assert.deepEqual(rawIntegrity(db), []);
    });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: upkeep never waits on another connection's lock and tries again later", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, { now: clock() });
    const gone = store.saveTurn(null, turn("a locked question", "Reply."));
    assert.equal(store.delete(gone), true);
    const other = new DatabaseSync(path);
    try {
      other.exec("BEGIN IMMEDIATE");
      const started = performance.now();
      assert.equal(store.maintain(), false);
      // Not the five seconds a save would wait for the lock.
      assert.ok(performance.now() - started < 1000);
      assert.equal(store.exists(gone), false);
      other.exec("COMMIT");
    } finally {
      other.close();
    }
    await eventually(
      () =>
        peek(
          path,
          (db) =>
            count(
              db,
              "SELECT count(*) AS n FROM conversations WHERE id = ?",
              gone,
            ),
        ) === 0,
      "upkeep tried again and finished the delete",
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: upkeep checkpoints the WAL into the database file by itself", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, { now: clock() });
    for (let i = 0; i < 20; i++) {
      store.saveTurn(null, turn(`question ${i}`, `reply ${i}`));
    }
    // The database file alone, read without its WAL, holds every save.
    const alone = join(dir, "alone.db");
    await eventually(() => {
      Deno.copyFileSync(path, alone);
      try {
        return peek(
          alone,
          (db) => count(db, "SELECT count(*) AS n FROM turns"),
        ) === 20;
      } catch {
        // Copied in the middle of a checkpoint: the next poll tells.
        return false;
      } finally {
        // Closing the copy removed its own -wal and -shm.
        Deno.removeSync(alone);
      }
    }, "the saves reached the database file");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: the WAL stays short under constant saves, and without upkeep a save checkpoints", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const walBytes = (path: string) => Deno.statSync(`${path}-wal`).size;
    const framesNow = (path: string) =>
      peek(
        path,
        (db) => Number(db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get()?.log),
      );

    // A loop that never yields: upkeep cannot run, only the saves' own
    // safety net checkpoints (past 500 commits), so the WAL restarts once.
    const stuck = join(dir, "stuck.db");
    let unbounded: number;
    {
      using store = new Store(stuck, { now: clock() });
      for (let i = 0; i < 600; i++) {
        store.saveTurn(null, turn(`question ${i}`, `reply ${i}`));
      }
      const fileFrames = walBytes(stuck) / (4096 + 24);
      const frames = framesNow(stuck);
      assert.ok(
        frames > 0 && frames * 3 < fileFrames,
        `${frames} frames in a WAL of ${fileFrames}`,
      );
      // What 300 saves write to a WAL nothing checkpoints.
      unbounded = walBytes(stuck) * 300 / 500;
    }

    // Saves with the event loop turning between them, as in the daemon:
    // upkeep checkpoints every few saves and the WAL restarts each time.
    const busy = join(dir, "busy.db");
    {
      using store = new Store(busy, { now: clock() });
      const started = walBytes(busy);
      for (let i = 0; i < 300; i++) {
        store.saveTurn(null, turn(`question ${i}`, `reply ${i}`));
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      assert.ok(
        walBytes(busy) - started < unbounded / 4,
        `WAL of ${walBytes(busy)} bytes against ${unbounded} unchecked`,
      );
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: FTS5 automerge is off and upkeep keeps the index segments few", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, { now: clock() });
    assert.equal(
      peek(
        path,
        (db) =>
          db.prepare("SELECT v FROM turns_fts_config WHERE k = 'automerge'")
            .get()
            ?.v,
      ),
      0,
    );
    // Without upkeep each commit leaves a segment of its own.
    for (let i = 0; i < 12; i++) {
      store.saveTurn(null, turn(`question ${i} about words`, `reply ${i}`));
    }
    assert.equal(peek(path, segments), 12);
    settle(store);
    assert.ok(peek(path, segments) <= 4, `${peek(path, segments)} segments`);

    // With upkeep after every save, as the daemon runs it, they stay few.
    let most = 0;
    for (let i = 0; i < 300; i++) {
      store.saveTurn(null, turn(`question ${i} about words`, `reply ${i}`));
      settle(store);
      most = Math.max(most, peek(path, segments));
    }
    assert.ok(most <= 10, `${most} segments at most`);
    assert.deepEqual(store.integrityCheck(), []);
    assert.equal(store.search("words").length, 50);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: the files' index merges in upkeep too, never inside a commit", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, { now: clock() });
    assert.equal(
      peek(
        path,
        (db) =>
          db.prepare("SELECT v FROM files_fts_config WHERE k = 'automerge'")
            .get()
            ?.v,
      ),
      0,
    );
    const noted = (i: number) => ({
      ...turn(`question ${i}`, `reply ${i}`),
      files: [{
        name: `notes ${i}.txt`,
        mime: "text/plain",
        bytes: 20,
        kind: "text" as const,
        text: `walrus notes number ${i}`,
        data: null,
      }],
    });
    // Without upkeep each commit leaves a segment of its own.
    for (let i = 0; i < 12; i++) store.saveTurn(null, noted(i));
    assert.equal(peek(path, fileSegments), 12);
    settle(store);
    assert.ok(peek(path, fileSegments) <= 4, `${peek(path, fileSegments)}`);

    let most = 0;
    for (let i = 0; i < 300; i++) {
      store.saveTurn(null, noted(i));
      settle(store);
      most = Math.max(most, peek(path, fileSegments));
    }
    assert.ok(most <= 10, `${most} segments at most`);
    assert.deepEqual(store.integrityCheck(), []);
    assert.equal(store.search("walrus").length, 50);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: upkeep waits while a reply streams, and not past its limit", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    let replying = true;
    let consulted = Promise.withResolvers<void>();
    const busy = () => {
      consulted.resolve();
      return replying;
    };
    using store = new Store(path, { now: clock(), busy });
    const long = walrusConversation(store, 150);
    assert.equal(store.delete(long), true);
    const left = () => turnsLeft(path, long);
    // The timer fired, found a reply streaming and did nothing. (The store's
    // timer does not keep the process alive: this one does, meanwhile.)
    const alive = setTimeout(() => {}, 10_000);
    try {
      await consulted.promise;
      consulted = Promise.withResolvers<void>();
      await consulted.promise;
    } finally {
      clearTimeout(alive);
    }
    assert.equal(left(), 150);
    replying = false;
    await eventually(() => left() === 0, "upkeep ran once the reply ended");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: under replies that never pause, upkeep still runs after its limit", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using store = new Store(path, {
      now: clock(),
      busy: () => true,
      upkeepDeferMs: 200,
    });
    const long = walrusConversation(store, 100);
    assert.equal(store.delete(long), true);
    await eventually(
      () => turnsLeft(path, long) === 0,
      "upkeep ran despite the replies",
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

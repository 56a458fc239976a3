import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { AssistantError } from "../../src/base/errors.ts";
import { setLogSink } from "../../src/base/log.ts";
import { Store, type StoredTurn } from "../../src/store/store.ts";
import {
  integrityProblems,
  migrate,
  SCHEMA_VERSION,
} from "../../src/store/schema.ts";

function turn(user: string, reply: string, tools: string[] = []): StoredTurn {
  return {
    user,
    reply,
    tools,
    messages: [
      { role: "user", content: `[2026-01-01 10:00] ${user}` },
      { role: "assistant", content: reply },
    ],
  };
}

/** A clock that moves one minute per call, so `updated` orders saves. */
function clock(startSeconds = 1_700_000_000): () => number {
  let t = startSeconds * 1000;
  return () => (t += 60_000);
}

function mode(path: string): number {
  return (Deno.statSync(path).mode ?? 0) & 0o777;
}

/** Where a store may live: a real temporary file, and SQLite's in-memory one. */
const places: { name: string; path: () => string; cleanup: () => void }[] = [
  (() => {
    let dir = "";
    return {
      name: "file",
      path: () => {
        dir = Deno.makeTempDirSync();
        return join(dir, "data", "history.db");
      },
      cleanup: () => Deno.removeSync(dir, { recursive: true }),
    };
  })(),
  { name: ":memory:", path: () => ":memory:", cleanup: () => {} },
];

for (const place of places) {
  Deno.test(`store (${place.name}): two conversations are listed newest first and open turn for turn`, () => {
    try {
      using store = new Store(place.path(), { now: clock() });
      const first = store.saveTurn(
        null,
        turn("  What   is the\tweather like in Rome today?", "Sunny, 24 °C.", [
          "weather",
        ]),
      );
      const second = store.saveTurn(null, turn("Tell me a joke", "No."));
      assert.equal(
        store.saveTurn(first, turn("And tomorrow?", "Rain.")),
        first,
      );
      assert.notEqual(first, second);

      const items = store.list();
      assert.deepEqual(items.map((i) => i.id), [first, second]);
      assert.deepEqual(items.map((i) => i.title), [
        "What is the weather like in",
        "Tell me a joke",
      ]);
      assert.equal(items[0]?.updated, 1_700_000_000 + 180);
      assert.deepEqual(store.list(1).map((i) => i.id), [first]);

      const opened = store.open(first);
      assert.deepEqual(opened?.turns, [
        {
          user: "  What   is the\tweather like in Rome today?",
          reply: "Sunny, 24 °C.",
          tools: ["weather"],
        },
        { user: "And tomorrow?", reply: "Rain.", tools: [] },
      ]);
      assert.deepEqual(opened?.messages, [
        turn("  What   is the\tweather like in Rome today?", "Sunny, 24 °C.")
          .messages,
        turn("And tomorrow?", "Rain.").messages,
      ]);
      assert.deepEqual(store.open(second)?.turns.length, 1);
      assert.equal(store.open(9999), null);
      assert.equal(store.exists(second), true);
      assert.equal(store.exists(9999), false);
    } finally {
      place.cleanup();
    }
  });

  Deno.test(`store (${place.name}): equal update times list the newer conversation first`, () => {
    try {
      using store = new Store(place.path(), { now: () => 1_000_000 });
      const a = store.saveTurn(null, turn("one", "1"));
      const b = store.saveTurn(null, turn("two", "2"));
      assert.deepEqual(store.list().map((i) => i.id), [b, a]);
      assert.equal(store.list()[0]?.updated, 1000);
    } finally {
      place.cleanup();
    }
  });

  Deno.test(`store (${place.name}): a turn for a deleted conversation is refused and nothing is saved`, () => {
    try {
      using store = new Store(place.path(), { now: clock() });
      const id = store.saveTurn(null, turn("first question", "answer"));
      assert.equal(store.delete(id), true);
      assert.equal(store.delete(id), false);
      assert.throws(
        () => store.saveTurn(id, turn("late reply", "lost")),
        (e) =>
          e instanceof AssistantError && e.message === "no such conversation",
      );
      assert.deepEqual(store.list(), []);
      assert.deepEqual(store.search("late"), []);
      // The connection is usable after the rollback.
      const next = store.saveTurn(null, turn("again", "fine"));
      assert.deepEqual(store.list().map((i) => i.id), [next]);
    } finally {
      place.cleanup();
    }
  });

  Deno.test(`store (${place.name}): search folds accents, completes half-typed words and marks matches`, () => {
    try {
      using store = new Store(place.path(), { now: clock() });
      const rome = store.saveTurn(
        null,
        turn("Com'è la città di Roma?", "Bella e antica."),
      );
      const why = store.saveTurn(
        null,
        turn("Perché il cielo è blu?", "Per la diffusione di Rayleigh."),
      );
      const code = store.saveTurn(
        null,
        turn("How do I reverse a list?", "Use the reversed builtin."),
      );

      const citta = store.search("citta");
      assert.deepEqual(citta.map((h) => h.id), [rome]);
      assert.equal(citta[0]?.title, "Com'è la città di Roma?");
      assert.match(citta[0]?.snippet ?? "", /\*\*città\*\*/);
      assert.deepEqual(store.search("perche").map((h) => h.id), [why]);
      assert.deepEqual(store.search("PERCHÉ").map((h) => h.id), [why]);
      assert.deepEqual(store.search("diffus").map((h) => h.id), [why]);
      assert.deepEqual(store.search("revers").map((h) => h.id), [code]);
      assert.match(store.search("revers")[0]?.snippet ?? "", /\*\*reverse\*\*/);
      assert.deepEqual(store.search("reverse a li").map((h) => h.id), [code]);
      assert.deepEqual(store.search("list reverse"), []);
      assert.deepEqual(store.search(""), []);
      assert.deepEqual(store.search("   \n"), []);
      assert.deepEqual(store.search("zebra"), []);
    } finally {
      place.cleanup();
    }
  });
}

Deno.test("store: search returns one row per conversation, questions weighted above replies", () => {
  using store = new Store(":memory:", { now: clock() });
  const inQuestion = store.saveTurn(
    null,
    turn("Which volcano erupted in 79?", "Vesuvius did, burying Pompeii."),
  );
  const inReply = store.saveTurn(
    null,
    turn("Tell me about Naples", "It lies under a volcano, Vesuvius."),
  );
  // Several matching turns in one conversation still make one result.
  store.saveTurn(inReply, turn("More?", "Another volcano: Campi Flegrei."));
  store.saveTurn(inReply, turn("More?", "Yes, a volcano again."));

  const hits = store.search("volcano");
  assert.deepEqual(hits.map((h) => h.id), [inQuestion, inReply]);
  assert.match(hits[0]?.snippet ?? "", /\*\*volcano\*\*/);
  assert.deepEqual(store.search("volcano", 1).map((h) => h.id), [inQuestion]);
});

Deno.test("store: a long pasted passage finds its turn", () => {
  using store = new Store(":memory:");
  const passage = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
  const id = store.saveTurn(null, turn("Summarize this", `Quote: ${passage}.`));
  store.saveTurn(null, turn("Other", "w0 w1 w2 w3 and then something else"));
  assert.deepEqual(store.search(passage).map((h) => h.id), [id]);
  // Every word counts, however long the query: a different ending finds nothing.
  assert.deepEqual(store.search(`"${passage}" OR x`), []);
  assert.deepEqual(store.search(`${passage.replace("w39", "ten")}`), []);
});

Deno.test("store: a snippet is cut around the match with an ellipsis", () => {
  using store = new Store(":memory:");
  const words = Array.from({ length: 80 }, (_, i) => `word${i}`);
  words[40] = "needle";
  store.saveTurn(null, turn("A long one", words.join(" ")));
  const [hit] = store.search("needle");
  assert.ok(hit);
  assert.match(hit.snippet, /^….*\*\*needle\*\*.*…$/);
  assert.ok(hit.snippet.split(" ").length <= 12);
});

/** Folds and splits text the way unicode61 with remove_diacritics does, for plain Latin text. */
function tokens(text: string): string[] {
  return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase()
    .match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Whether `text` holds the query's tokens as one phrase, the last one as a prefix. */
function literally(text: string, q: string): boolean {
  const want = tokens(q);
  const have = tokens(text);
  if (want.length === 0) return false;
  const last = want.length - 1;
  for (let i = 0; i + last < have.length; i++) {
    if (
      want.every((w, j) =>
        j === last ? have[i + j]?.startsWith(w) : have[i + j] === w
      )
    ) return true;
  }
  return false;
}

const HOSTILE_CORPUS: [string, string][] = [
  ["secret plans for user", "the answer is near the end"],
  ["apples or pears", "apples and pears, not plums"],
  ["a or b", "literally the words a or b"],
  ["NEAR the station", "turn left near the bridge"],
  ["reply: hello", "user: greetings, see x"],
  ["star * power", 'quote " inside'],
  ["minus -x", "caret ^start and (paren)"],
];

const HOSTILE_QUERIES = [
  '"',
  '""',
  '"""',
  "*",
  "**",
  "NEAR(",
  "NEAR(apples pears)",
  "NEAR(apples pears, 2)",
  "apples OR pears",
  "a OR b",
  "apples AND pears",
  "apples NOT plums",
  "-x",
  "minus -x",
  "^start",
  "^the",
  "user:",
  "user: secret",
  "reply:hello",
  "{user reply}: answer",
  ")",
  "(",
  "(paren",
  '"unbalanced',
  'unbalanced"',
  'pears" OR "plums',
  "the*",
  "+",
  ":",
  "\0",
  "near\0the",
  "\uD800",
  "...",
  "—",
  "😀",
];

Deno.test("store: FTS syntax in a query never raises and matches only the literal text", () => {
  using store = new Store(":memory:", { now: clock() });
  const ids = HOSTILE_CORPUS.map(([u, r]) => store.saveTurn(null, turn(u, r)));
  for (const q of HOSTILE_QUERIES) {
    const expected = ids.filter((_, i) => {
      const [u, r] = HOSTILE_CORPUS[i] ?? ["", ""];
      return literally(u, q) || literally(r, q);
    });
    const found = store.search(q).map((h) => h.id).sort((a, b) => a - b);
    assert.deepEqual(found, expected, `query ${JSON.stringify(q)}`);
  }
  // "a OR b" as syntax would match every turn holding an "a" word.
  assert.equal(store.search("a OR b").length, 1);
});

Deno.test("store: random strings of FTS syntax never raise and never widen the match", () => {
  using store = new Store(":memory:", { now: clock() });
  const ids = HOSTILE_CORPUS.map(([u, r]) => store.saveTurn(null, turn(u, r)));
  const pieces = [
    '"',
    "*",
    "(",
    ")",
    ":",
    "^",
    "-",
    "+",
    "{",
    "}",
    ",",
    " ",
    " OR ",
    " AND ",
    " NOT ",
    "NEAR",
    "user",
    "reply",
    "apples",
    "pears",
    "a",
    "the",
    "x",
  ];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  for (let n = 0; n < 500; n++) {
    let q = "";
    const length = 1 + (next() % 8);
    for (let i = 0; i < length; i++) q += pieces[next() % pieces.length];
    const found = store.search(q).map((h) => h.id);
    for (const id of found) {
      const [u, r] = HOSTILE_CORPUS[ids.indexOf(id)] ?? ["", ""];
      assert.ok(
        literally(u, q) || literally(r, q),
        `query ${JSON.stringify(q)} matched conversation ${id}`,
      );
    }
  }
});

/** Runs the store's upkeep until it reports nothing left, as its timer would. */
function settle(store: Store): void {
  while (store.maintain());
}

/** Resolves once `done()` holds, polling; rejects after `ms`. */
async function eventually(
  done: () => boolean,
  what: string,
  ms = 10_000,
): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done()) {
    if (performance.now() > deadline) {
      throw new Error(`Timed out waiting until ${what}.`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Runs `read` on a connection of its own to the file, as a second process would. */
function peek<T>(path: string, read: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    return read(db);
  } finally {
    db.close();
  }
}

function count(db: DatabaseSync, sql: string, ...args: number[]): number {
  return Number(db.prepare(sql).get(...args)?.n);
}

/** Saves one conversation of `turns` walrus turns; returns its id. */
function walrusConversation(store: Store, turns: number): number {
  const id = store.saveTurn(null, turn("walrus 0", "Blubber 0."));
  for (let i = 1; i < turns; i++) {
    store.saveTurn(id, turn(`walrus ${i}`, `Blubber ${i}.`));
  }
  return id;
}

/** The turns of conversation `conv` still in the file, read on a connection of its own. */
function turnsLeft(path: string, conv: number): number {
  return peek(
    path,
    (db) => count(db, "SELECT count(*) AS n FROM turns WHERE conv = ?", conv),
  );
}

/** FTS5 index segments in the file. */
function segments(db: DatabaseSync): number {
  return count(db, "SELECT count(DISTINCT segid) AS n FROM turns_fts_idx");
}

/** The problems SQLite's and FTS5's checks find, from a connection of its own. */
function rawIntegrity(db: DatabaseSync): string[] {
  return integrityProblems(db, { fullText: true });
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

Deno.test("store: a deleted conversation is not found when a query matches too many turns to rank", () => {
  // rankCap 2: five matches take the newest-first path of the search.
  using store = new Store(":memory:", { now: clock(), rankCap: 2 });
  const kept = store.saveTurn(null, turn("otter kept", "Stays."));
  const gone = walrusConversation(store, 4);
  for (let i = 0; i < 4; i++) store.saveTurn(gone, turn(`otter ${i}`, "Gone."));
  assert.deepEqual(store.search("otter").map((h) => h.id), [gone, kept]);
  assert.equal(store.delete(gone), true);
  assert.deepEqual(store.search("otter").map((h) => h.id), [kept]);
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

Deno.test("store: a delete cut short by SIGKILL leaves a sound file and the next open finishes it", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    const script = join(dir, "delete_then_die.ts");
    // Saves, deletes, then runs upkeep one slow step at a time until killed.
    Deno.writeTextFileSync(
      script,
      `import { Store } from ${
        JSON.stringify(
          new URL("../../src/store/store.ts", import.meta.url).href,
        )
      };
// Its own upkeep timer never gets a turn: only the steps below run.
const store = new Store(${JSON.stringify(path)}, {
  busy: () => true,
  upkeepDeferMs: 1e9,
});
const turn = (user, reply) => ({ user, reply, tools: [], messages: [] });
store.saveTurn(null, turn("the kept narwhal", "Stays."));
const doomed = store.saveTurn(null, turn("narwhal 0", "Tusk 0."));
for (let i = 1; i < 200; i++) store.saveTurn(doomed, turn("narwhal " + i, "Tusk " + i + "."));
store.delete(doomed);
console.log(doomed);
for (;;) {
  store.maintain();
  console.log("step");
  await new Promise((resolve) => setTimeout(resolve, 1000));
}
`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--quiet", script],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream())
      .getReader();
    let text = "";
    while (!text.includes("step\n")) {
      const { value, done } = await lines.read();
      if (done) break;
      text += value;
    }
    child.kill("SIGKILL");
    await child.status;
    await lines.cancel();
    const doomed = Number(text.split("\n")[0]);

    // The kill came between two steps: some turns are gone, some are left.
    peek(path, (db) => {
      const left = count(
        db,
        "SELECT count(*) AS n FROM turns WHERE conv = ?",
        doomed,
      );
      assert.ok(left > 0 && left < 200, `${left} turns left`);
      assert.deepEqual(rawIntegrity(db), []);
      assert.equal(
        count(
          db,
          `SELECT count(*) AS n FROM conversations c
           WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.conv = c.id)`,
        ),
        0,
      );
    });
    using store = new Store(path);
    assert.deepEqual(store.list().map((i) => i.title), ["the kept narwhal"]);
    assert.deepEqual(store.search("narwhal").map((h) => h.id), [1]);
    assert.deepEqual(store.search("tusk"), []);
    await eventually(
      () =>
        peek(
          path,
          (db) =>
            count(db, "SELECT count(*) AS n FROM turns WHERE conv = ?", doomed),
        ) === 0,
      "the reopened store finished the delete",
    );
    peek(path, (db) => assert.deepEqual(rawIntegrity(db), []));
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
    // no turn times, no token counts.
    const raw = new DatabaseSync(path);
    raw.exec(`DROP TABLE deleted_conversations;
              INSERT INTO turns_fts(turns_fts, rank) VALUES ('automerge', 4);
              ALTER TABLE turns DROP COLUMN at;
              ALTER TABLE conversations DROP COLUMN legacy_at;
              ALTER TABLE turns DROP COLUMN tokens;
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

Deno.test("store: a conversation id never comes back after a delete", () => {
  const dir = Deno.makeTempDirSync();
  try {
    using store = new Store(join(dir, "history.db"), { now: clock() });
    const first = store.saveTurn(null, turn("first question", "one"));
    const newest = store.saveTurn(null, turn("newest question", "two"));
    assert.equal(store.delete(newest), true);
    settle(store);
    // A client holding the old list must not open or delete a stranger.
    const next = store.saveTurn(null, turn("next question", "three"));
    assert.ok(next > newest, `id ${next} after deleting ${newest}`);
    assert.equal(store.open(newest), null);
    assert.deepEqual(store.list().map((item) => item.id), [next, first]);
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
    // The file as the schema before the counts left it.
    const raw = new DatabaseSync(path);
    raw.exec(`ALTER TABLE turns DROP COLUMN tokens;
              PRAGMA user_version = ${SCHEMA_VERSION - 1};`);
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

Deno.test("store: modes are enforced on every open, data survives reopening, the journal is WAL", () => {
  const root = Deno.makeTempDirSync();
  try {
    const dir = join(root, "nested", "desktop-assistant");
    const path = join(dir, "history.db");
    let id: number;
    {
      using store = new Store(path, { now: clock() });
      id = store.saveTurn(null, turn("remember the milk", "Noted."));
      assert.equal(mode(dir), 0o700);
      assert.equal(mode(path), 0o600);
      assert.equal(mode(`${path}-wal`), 0o600);
      assert.equal(mode(`${path}-shm`), 0o600);
      assert.equal(store.path, path);
    }
    // Loosened by hand (or by a backup tool), then reopened.
    Deno.chmodSync(dir, 0o755);
    Deno.chmodSync(path, 0o644);
    Deno.writeFileSync(`${path}-wal`, new Uint8Array());
    Deno.chmodSync(`${path}-wal`, 0o666);
    {
      using store = new Store(path);
      assert.equal(mode(dir), 0o700);
      assert.equal(mode(path), 0o600);
      assert.equal(mode(`${path}-wal`), 0o600);
      assert.equal(mode(`${path}-shm`), 0o600);
      assert.deepEqual(store.open(id)?.turns, [
        { user: "remember the milk", reply: "Noted.", tools: [] },
      ]);
      assert.deepEqual(store.search("milk").map((h) => h.id), [id]);

      const raw = new DatabaseSync(path, { readOnly: true });
      try {
        assert.equal(
          raw.prepare("PRAGMA journal_mode").get()?.journal_mode,
          "wal",
        );
        assert.equal(
          raw.prepare("PRAGMA user_version").get()?.user_version,
          SCHEMA_VERSION,
        );
      } finally {
        raw.close();
      }
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("store: a symlink at the database path is refused and its target untouched", () => {
  const root = Deno.makeTempDirSync();
  try {
    const target = join(root, "elsewhere.db");
    Deno.writeTextFileSync(target, "not yours");
    Deno.chmodSync(target, 0o644);
    const dir = join(root, "data");
    Deno.mkdirSync(dir);
    const path = join(dir, "history.db");
    Deno.symlinkSync(target, path);

    assert.throws(
      () => new Store(path),
      (e) => e instanceof AssistantError && /symbolic link/.test(e.message),
    );
    assert.equal(Deno.readTextFileSync(target), "not yours");
    assert.equal(mode(target), 0o644);
    assert.equal(Deno.lstatSync(path).isSymlink, true);

    // A dangling link is refused too, and nothing is created at its target.
    const missing = join(root, "missing.db");
    Deno.removeSync(path);
    Deno.symlinkSync(missing, path);
    assert.throws(() => new Store(path), AssistantError);
    assert.throws(() => Deno.lstatSync(missing), Deno.errors.NotFound);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("store: a symlink at the -wal path is refused before SQLite follows it", () => {
  const root = Deno.makeTempDirSync();
  try {
    const target = join(root, "victim");
    Deno.writeTextFileSync(target, "keep me");
    const path = join(root, "history.db");
    Deno.symlinkSync(target, `${path}-wal`);
    assert.throws(
      () => new Store(path),
      (e) => e instanceof AssistantError && e.message.includes("-wal"),
    );
    assert.equal(Deno.readTextFileSync(target), "keep me");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("store: a file that is not a database is refused and left alone", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    Deno.writeTextFileSync(
      path,
      "these are my notes, not a database\n".repeat(200),
    );
    assert.throws(
      () => new Store(path),
      (e) => e instanceof AssistantError && /move it aside/.test(e.message),
    );
    assert.match(Deno.readTextFileSync(path), /^these are my notes/);
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

Deno.test("store: bounded search ranks by bm25 under the cap and lists the newest past it", () => {
  // The oldest conversation is the best match (the word twice in its
  // question); twenty weaker ones follow (the word once, in ever longer
  // replies), then one asking about it, then one more reply.
  const build = (rankCap: number) => {
    const store = new Store(":memory:", { now: clock(), rankCap });
    const best = store.saveTurn(null, turn("kiwi kiwi", "A fruit."));
    const weak: number[] = [];
    for (let i = 0; i < 20; i++) {
      weak.push(
        store.saveTurn(
          null,
          turn(`question ${i}`, `a long reply ${"filler ".repeat(i)} kiwi`),
        ),
      );
    }
    const asked = store.saveTurn(null, turn("Is a kiwi a bird?", "Also."));
    const latest = store.saveTurn(
      null,
      turn("fruit salad", `${"filler ".repeat(30)} kiwi`),
    );
    return { store, best, weak, asked, latest };
  };

  {
    // 23 matches under a cap of 23: bm25 over the whole history.
    const { store, best, weak, asked, latest } = build(23);
    using _ = store;
    const hits = store.search("kiwi", 50).map((h) => h.id);
    assert.equal(hits.length, 23);
    assert.deepEqual(hits.slice(0, 2), [best, asked]);
    // Among the replies, shorter ones rank higher.
    assert.deepEqual(hits.filter((id) => weak.includes(id)), weak);
    assert.equal(hits.at(-1), latest);
    assert.deepEqual(store.search("kiwi", 3).map((h) => h.id), [
      best,
      asked,
      weak[0],
    ]);
  }
  {
    // 23 matches over a cap of 22: the newest matching conversations.
    const { store, best, weak, asked, latest } = build(22);
    using _ = store;
    const hits = store.search("kiwi", 10).map((h) => h.id);
    assert.deepEqual(hits, [latest, asked, ...weak.slice(12).reverse()]);
    assert.ok(!hits.includes(best));
    assert.equal(store.search("kiwi", 50).length, 23);
    assert.equal(store.search("kiwi", 50).at(-1)?.id, best);
    // A query narrow enough to fall under the cap is ranked again.
    assert.deepEqual(store.search("kiwi kiwi").map((h) => h.id), [best]);
    assert.match(store.search("kiwi", 1)[0]?.snippet ?? "", /\*\*kiwi\*\*/);
  }
});

Deno.test("store: a query slow to count is listed newest first", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    {
      using store = new Store(path, { now: clock() });
      store.saveTurn(null, turn("green tea, green tea", "Gold."));
      store.saveTurn(null, turn("coffee", "Black."));
      store.saveTurn(null, turn("some green tea again", "Yes."));
    }
    // A zero budget: every query counts as slow.
    using slow = new Store(path, { budgetMs: 0 });
    assert.deepEqual(slow.search("green tea", 10).map((h) => h.id), [3, 1]);
    using quick = new Store(path, { budgetMs: 60_000 });
    assert.deepEqual(quick.search("green tea", 10).map((h) => h.id), [1, 3]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a phrase whose count runs out of time searches the newest turns only", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    using cut = new Store(path, { now: clock(), budgetMs: 0 });
    const old = cut.saveTurn(null, turn("green tea, green tea", "Gold."));
    const filler = cut.saveTurn(null, turn("filler", "nothing"));
    // More turns than the first range a phrase is counted in.
    const raw = new DatabaseSync(path);
    raw.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n
                                    WHERE i < 16400)
              INSERT INTO turns(conv, seq, user, reply, tools, messages)
              SELECT ${filler}, i + 1, 'filler', 'nothing', '[]', '[]' FROM n`);
    raw.close();
    const recent = cut.saveTurn(null, turn("some green tea again", "Yes."));

    assert.deepEqual(cut.search("green tea", 10).map((h) => h.id), [recent]);
    // A single word is never cut short.
    assert.deepEqual(cut.search("green", 10).map((h) => h.id), [recent, old]);
    using full = new Store(path, { budgetMs: 60_000 });
    assert.deepEqual(full.search("green tea", 10).map((h) => h.id), [
      old,
      recent,
    ]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: a long conversation past the cap does not hide the others", () => {
  using store = new Store(":memory:", { now: clock(), rankCap: 4 });
  const other = store.saveTurn(null, turn("lemon tart", "Bake it."));
  const long = store.saveTurn(null, turn("lemon", "Lemons."));
  for (let i = 0; i < 10; i++) store.saveTurn(long, turn("lemon", "More."));
  const hits = store.search("lemon", 5).map((h) => h.id);
  assert.deepEqual([...hits].sort((a, b) => a - b), [other, long]);
});

Deno.test("store: close is idempotent and the file reopens", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    const store = new Store(path);
    store.saveTurn(null, turn("hello", "hi"));
    store.close();
    store.close();
    using again = new Store(path);
    assert.equal(again.list().length, 1);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("store: nothing of a conversation reaches the log", () => {
  const lines: string[] = [];
  const previous = setLogSink({ write: (line) => lines.push(line) });
  const dir = Deno.makeTempDirSync();
  try {
    const path = join(dir, "history.db");
    {
      using store = new Store(path);
      const id = store.saveTurn(
        null,
        turn("my secret diagnosis", "private reply"),
      );
      store.search("secret");
      store.search('secret" NEAR(');
      store.open(id);
      const raw = new DatabaseSync(path);
      raw.exec("UPDATE turns SET messages = 'private {'");
      raw.close();
      store.open(id);
      store.delete(id);
    }
    assert.ok(lines.length > 0);
    for (const line of lines) {
      assert.doesNotMatch(line, /secret|diagnosis|private/);
    }
  } finally {
    setLogSink(previous);
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

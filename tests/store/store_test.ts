/** The store itself: saves, the list, opening, ids, a crash in the middle of a delete, closing, and the log. */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { AssistantError } from "../../src/base/errors.ts";
import { setLogSink } from "../../src/base/log.ts";
import { Store } from "../../src/store/store.ts";
import {
  clock,
  count,
  eventually,
  peek,
  places,
  rawIntegrity,
  settle,
  turn,
} from "./fixtures.ts";

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
}

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
      store.setSummary(id, { text: "a secret summary", turns: 1, tokens: 3 });
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

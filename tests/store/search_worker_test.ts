import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Store, type StoredTurn } from "../../src/store/store.ts";
import { SearchWorker } from "../../src/store/search_worker.ts";
import { Assistant } from "../../src/assistant/assistant.ts";
import { AssistantError } from "../../src/base/errors.ts";
import { type LogSink, setLogSink } from "../../src/base/log.ts";
import { Server } from "../../src/server/server.ts";
import { SocketClient } from "../support/socket_client.ts";
import { TURN_CONFIG } from "../support/turn_config.ts";
import { encodeVector } from "../../src/store/vector_codec.ts";

function turn(user: string, reply: string): StoredTurn {
  return {
    user,
    reply,
    tools: [],
    messages: [{ role: "user", content: user }, {
      role: "assistant",
      content: reply,
    }],
  };
}

function tempHistory(): { dir: string; path: string } & Disposable {
  const dir = Deno.makeTempDirSync();
  return {
    dir,
    path: join(dir, "history.db"),
    [Symbol.dispose]: () => Deno.removeSync(dir, { recursive: true }),
  };
}

Deno.test("search worker: answers like the store, reading beside the writer", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  await using worker = new SearchWorker(tmp.path);

  const rome = store.saveTurn(null, turn("La città di Roma", "Bella."));
  assert.deepEqual(
    await worker.search("citta", 50),
    store.search("citta", 50),
  );
  assert.deepEqual((await worker.search("citta", 50)).map((h) => h.id), [
    rome,
  ]);

  // Each commit of the writer is visible to the next search.
  const ids: number[] = [];
  for (let i = 0; i < 20; i++) {
    ids.push(store.saveTurn(null, turn(`walrus number w${i}x`, "Blubber.")));
    const hits = await worker.search(`w${i}x`, 5);
    assert.deepEqual(hits.map((h) => h.id), [ids[i]]);
  }
  const all = await worker.search("walrus", 50);
  assert.deepEqual(all, store.search("walrus", 50));
  assert.equal(all.length, 20);
  assert.match(all[0]?.snippet ?? "", /\*\*walrus\*\*/);
});

Deno.test("search worker: marks matches by offsets into the text, as the store does", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  await using worker = new SearchWorker(tmp.path);
  const id = store.saveTurn(
    null,
    turn("Ordering", "Use **`sorted()`** for a new list; 😀 sorted again."),
  );
  const hits = await worker.search("sorted", 5);
  assert.deepEqual(hits, store.search("sorted", 5));
  const [hit] = hits;
  assert.equal(hit?.id, id);
  assert.equal(
    hit?.text,
    "Use **`sorted()`** for a new list; 😀 sorted again.",
  );
  assert.deepEqual(
    hit?.marks.map(([start, end]) => hit.text.slice(start, end)),
    ["sorted", "sorted"],
  );
  assert.equal(hit?.marks[1]?.[0], hit?.text.lastIndexOf("sorted"));
  assert.equal(
    hit?.snippet,
    "Use **`**sorted**()`** for a new list; 😀 **sorted** again.",
  );
});

Deno.test("search worker: reads while a write transaction is open, without seeing it", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  store.saveTurn(null, turn("committed narwhal", "Yes."));
  await using worker = new SearchWorker(tmp.path);

  const writer = new DatabaseSync(tmp.path);
  try {
    writer.exec("BEGIN IMMEDIATE");
    writer.exec(
      "INSERT INTO conversations(title, created, updated) VALUES ('x', 0, 0)",
    );
    writer.exec(
      `INSERT INTO turns(conv, seq, user, reply, tools, messages)
       VALUES (last_insert_rowid(), 1, 'pending narwhal', '', '[]', '[]')`,
    );
    const during = await worker.search("narwhal", 50);
    assert.equal(during.length, 1);
    assert.match(during[0]?.snippet ?? "", /committed/);
    writer.exec("COMMIT");
  } finally {
    writer.close();
  }
  assert.equal((await worker.search("narwhal", 50)).length, 2);
});

Deno.test("search worker: a deleted conversation is not found, while or after its rows go", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  const kept = store.saveTurn(null, turn("the kept capybara", "Calm."));
  const gone = store.saveTurn(null, turn("capybara 0", "Rodent 0."));
  for (let i = 1; i < 100; i++) {
    store.saveTurn(gone, turn(`capybara ${i}`, `Rodent ${i}.`));
  }
  await using worker = new SearchWorker(tmp.path);
  assert.equal((await worker.search("capybara", 50)).length, 2);
  assert.equal(store.delete(gone), true);
  // Searched while upkeep removes the rows in steps, and once it is done.
  for (let round = 0; round < 20; round++) {
    assert.deepEqual(
      (await worker.search("capybara", 50)).map((h) => h.id),
      [kept],
    );
    assert.deepEqual(await worker.search("rodent", 50), []);
    assert.deepEqual(await worker.search("capybara 42", 50), []);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  while (store.maintain());
  assert.deepEqual((await worker.search("capybara", 50)).map((h) => h.id), [
    kept,
  ]);
});

Deno.test("search worker: concurrent searches each get their own answer", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  const ids = ["alpha", "bravo", "charlie", "delta"].map((w) =>
    store.saveTurn(null, turn(`${w} question`, `${w} answer`))
  );
  await using worker = new SearchWorker(tmp.path);
  const answers = await Promise.all(
    ["alpha", "bravo", "charlie", "delta", "question", '"'].map((q) =>
      worker.search(q, 50)
    ),
  );
  assert.deepEqual(answers.slice(0, 4).map((a) => a.map((h) => h.id)), [
    [ids[0]],
    [ids[1]],
    [ids[2]],
    [ids[3]],
  ]);
  assert.equal(answers[4]?.length, 4);
  assert.deepEqual(answers[5], []);
});

Deno.test("search worker: the rank cap applies in the worker too", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  const ids: number[] = [];
  for (let i = 0; i < 12; i++) {
    ids.push(store.saveTurn(null, turn(`mango ${i}`, "fruit")));
  }
  await using capped = new SearchWorker(tmp.path, { rankCap: 3 });
  const hits = (await capped.search("mango", 2)).map((h) => h.id);
  assert.equal(hits.length, 2);
  assert.ok(hits.every((id) => ids.slice(-3).includes(id)));
  assert.deepEqual(await capped.search("mango", 50), store.search("mango", 50));
});

Deno.test("search worker: a failed search rejects with the error, and close ends it", async () => {
  using tmp = tempHistory();
  const worker = new SearchWorker(join(tmp.dir, "missing", "history.db"));
  await assert.rejects(worker.search("anything", 5), /unable to open/);
  await worker.close();
  await worker.close();
  await assert.rejects(worker.search("anything", 5), /closed/);

  // A SQLite file without the history schema: the statements cannot prepare.
  const other = join(tmp.dir, "other.db");
  const raw = new DatabaseSync(other);
  raw.exec("CREATE TABLE unrelated(x)");
  raw.close();
  await using broken = new SearchWorker(other);
  await assert.rejects(broken.search("anything", 5), /no such table/);
});

/** A history of `count` turns, ten a conversation, each with a vector of 8 dimensions of model "m": turn t's is t's bits. */
function vectorHistory(path: string, count: number): Store {
  const store = new Store(path);
  let id: number | null = null;
  for (let i = 0; i < count; i++) {
    id = store.saveTurn(
      i % 10 === 0 ? null : id,
      turn(`Question ${i}`, "Answer"),
    );
  }
  store.vectors.putAll(
    "m",
    Array.from({ length: count }, (_, i) => ({
      turn: i + 1,
      dim: 8,
      data: encodeVector(vectorOf(i + 1)),
    })),
  );
  return store;
}

function vectorOf(turn: number): Float32Array {
  return Float32Array.from({ length: 8 }, (_, d) => (turn >> d & 1) - 0.5);
}

Deno.test("search worker: reads the vectors a slice at a time, answering words meanwhile and meaning once they are read", async () => {
  using tmp = tempHistory();
  using _store = vectorHistory(tmp.path, 1000);
  // One chunk of rows a slice: the reading takes many turns of the loop.
  await using worker = new SearchWorker(tmp.path, {
    vectors: true,
    sliceMs: 0,
  });
  const order: string[] = [];
  const near = worker.nearest(vectorOf(77), "m", 1, null).then((hits) => {
    order.push("meaning");
    return hits;
  });
  const words = worker.search("Question", 1).then((hits) => {
    order.push("words");
    return hits;
  });
  assert.equal((await words).length, 1);
  assert.ok(Math.abs((await near)[0]!.score - 1) < 1e-6);
  assert.deepEqual(order, ["words", "meaning"]);
});

Deno.test("search worker: a saved turn's vector under an id it knew is read anew when named", async () => {
  using tmp = tempHistory();
  using store = vectorHistory(tmp.path, 40);
  await using worker = new SearchWorker(tmp.path, { vectors: true });
  assert.equal((await worker.nearest(vectorOf(40), "m", 1, null))[0]?.id, 4);
  // The newest conversation deleted to its rows, and its newest turn's id
  // given to a turn of a new one.
  assert.ok(store.delete(4));
  while (store.maintain()) { /* upkeep to the end */ }
  const conv = store.saveTurn(null, turn("Another question", "Yes"));
  assert.equal(store.lastTurnId(conv), 31);
  store.vectors.putAll("m", [{
    turn: 31,
    dim: 8,
    data: encodeVector(vectorOf(200)),
  }]);
  worker.refreshTurns([31]);
  const [hit] = await worker.nearest(vectorOf(200), "m", 1, null);
  assert.deepEqual([hit?.id, hit?.text], [conv, "Another question\nYes"]);
  // The old conversation left out no longer hides it.
  const others = await worker.nearest(vectorOf(200), "m", 1, 3);
  assert.equal(others[0]?.id, conv);
});

Deno.test("search worker: terminate ends it at once, failing what it held", async () => {
  using tmp = tempHistory();
  using _store = vectorHistory(tmp.path, 10);
  const worker = new SearchWorker(tmp.path, { vectors: true });
  const held = worker.search("Question", 1);
  worker.terminate();
  await assert.rejects(held, /closed/);
  await assert.rejects(worker.search("Question", 1), /closed/);
  await worker.close();
});

Deno.test("search worker: needs no permission beyond read of the database directory", async () => {
  using tmp = tempHistory();
  {
    using store = new Store(tmp.path);
    store.saveTurn(null, turn("permission probe", "granted"));
  }
  // The store closed, as the daemon keeps it open: reopen it for -wal/-shm.
  using store = new Store(tmp.path);
  const scriptDir = Deno.makeTempDirSync();
  try {
    const script = join(scriptDir, "probe.ts");
    const workerModule = new URL(
      "../../src/store/search_worker.ts",
      import.meta.url,
    );
    Deno.writeTextFileSync(
      script,
      `import { SearchWorker } from ${JSON.stringify(workerModule.href)};
await using worker = new SearchWorker(Deno.args[0]);
const hits = await worker.search("probe", 5);
await Deno.stdout.write(new TextEncoder().encode(JSON.stringify(hits)));
`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-config",
        "--no-lock",
        `--allow-read=${tmp.dir}`,
        pathToFileURL(script).href,
        tmp.path,
      ],
      cwd: scriptDir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const hits = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.deepEqual(hits, store.search("probe", 5));
    assert.equal(hits.length, 1);
  } finally {
    Deno.removeSync(scriptDir, { recursive: true });
  }
});

/**
 * A spawn hook whose first worker dies of an uncaught error at its first
 * search (its message carrying the query, as a real one might); later ones
 * are the real worker.
 */
function crashingFirst(): {
  spawn: (url: string) => Worker;
  count: () => number;
} {
  let spawned = 0;
  const crash = URL.createObjectURL(
    new Blob(
      [
        `self.onmessage = ({ data }) => {
          if (data.type === "search") throw new Error("secret " + data.q);
        };`,
      ],
      { type: "application/javascript" },
    ),
  );
  return {
    spawn: (url) => {
      spawned++;
      const worker = new Worker(spawned === 1 ? crash : url, {
        type: "module",
      });
      if (spawned === 1) URL.revokeObjectURL(crash);
      return worker;
    },
    count: () => spawned,
  };
}

/** Keeps log lines in memory for the test's duration. */
function captureLog(): { lines: string[] } & Disposable {
  const lines: string[] = [];
  const previous: LogSink = setLogSink({ write: (line) => lines.push(line) });
  return { lines, [Symbol.dispose]: () => setLogSink(previous) };
}

Deno.test("search worker: after an uncaught error it respawns; the failed search names nothing of the worker's", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  const id = store.saveTurn(null, turn("quokka question", "Smiles."));
  using log = captureLog();
  const hook = crashingFirst();
  await using worker = new SearchWorker(tmp.path, { spawn: hook.spawn });

  const failed = await worker.search("quokka", 5).then(
    () => assert.fail("the crashed search answered"),
    (error: unknown) => error,
  );
  assert.ok(failed instanceof Error && !(failed instanceof AssistantError));
  assert.doesNotMatch(String(failed), /secret|quokka/);
  assert.ok(
    log.lines.some((line) => / error search worker crashed /.test(line)),
  );
  assert.ok(!log.lines.some((line) => /secret|quokka/.test(line)), "logged");

  assert.deepEqual((await worker.search("quokka", 5)).map((h) => h.id), [id]);
  assert.equal(hook.count(), 2);
  assert.deepEqual(await worker.search("quokka", 5), store.search("quokka", 5));
  assert.equal(hook.count(), 2, "a working worker is kept");
});

Deno.test("search worker: through the socket, a crash is answered search failed and the next search works", async () => {
  using tmp = tempHistory();
  using store = new Store(tmp.path);
  const id = store.saveTurn(null, turn("wombat question", "Burrows."));
  using _log = captureLog();
  await using worker = new SearchWorker(tmp.path, {
    spawn: crashingFirst().spawn,
  });
  let server: Server | null = null;
  using assistant = new Assistant({
    store,
    llm: {
      chooseModel: () => Promise.reject(new Error("no model here")),
      chat: () => Promise.reject(new Error("no model here")),
    },
    tools: [],
    searcher: worker,
    emit: (event) => server?.broadcast(event),
    config: TURN_CONFIG,
  });
  await using listening = await Server.listen({
    path: join(tmp.dir, "s.sock"),
    brain: assistant,
    maxClients: 4,
  });
  server = listening;
  await using client = await SocketClient.connect(join(tmp.dir, "s.sock"));
  await client.next("hello");
  await client.send({ type: "search", q: "wombat" });
  assert.deepEqual(await client.next(), {
    type: "error",
    code: "command_failed",
    message: "search failed",
  });
  await client.send({ type: "search", q: "wombat" });
  const results = await client.next("results");
  assert.deepEqual(results.items.map((item) => item.id), [id]);
});

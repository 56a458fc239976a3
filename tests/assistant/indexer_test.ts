/**
 * The turns' vectors, made in the background: a backlog worked through
 * newest first with `indexing` reported, a saved turn's made quietly when
 * it is named (a new id, an id used again, a turn replaced), a question
 * never kept waiting, a text too long for the server never stopping the
 * work, a failing server tried again later (a failing history not taken
 * for it), a new model's or dimension's vectors made anew, and a deleted
 * turn's vector gone with it.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { Indexer } from "../../src/assistant/indexer.ts";
import { setLogSink } from "../../src/base/log.ts";
import { Embedder } from "../../src/llm/embeddings.ts";
import type { Event } from "../../src/protocol/protocol.ts";
import { Store } from "../../src/store/store.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { settle, tempDir, turn } from "../store/fixtures.ts";

const encode = (vector: Float32Array) => new Uint8Array(vector.buffer.slice(0));

type Kept = { turn: number; model: string; dim: number; data: Uint8Array };

function vectorsIn(path: string): Kept[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare(
      "SELECT turn, model, dim, data FROM vectors ORDER BY turn",
    ).all() as unknown as Kept[];
  } finally {
    db.close();
  }
}

/** The vector the fake makes of a text, as the indexer keeps it. */
async function vectorOf(llm: FakeLlm, text: string): Promise<Uint8Array> {
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const { vectors } = await embedder.embed([text], AbortSignal.timeout(5000));
  return encode(vectors[0]!);
}

/** An indexer over a history of `turns` turns, with its events, what it told, and a clock for its retries. */
async function setup(turns: number, busy = () => false) {
  const dir = tempDir();
  const path = join(dir.dir, "history.db");
  const store = new Store(path);
  let id: number | null = null;
  for (let i = 0; i < turns; i++) {
    id = store.saveTurn(id, turn(`Question ${i}`, `Answer ${i}`));
  }
  const llm = await FakeLlm.start({
    models: [{ id: "embedder-a", embeddings: true }],
  });
  const events: Event[] = [];
  const told = { done: 0, wrote: [] as number[][] };
  const clock = new ManualClock();
  const indexer = new Indexer({
    embedder: new Embedder({ url: llm.url, model: "", stallMs: 5000 }),
    vectors: store.vectors,
    encode,
    busy,
    publish: (event) => events.push(event),
    retryMs: 5000,
    timer: clock,
    now: clock.now,
    done: () => told.done++,
    wrote: (turns) => told.wrote.push(turns),
  });
  return {
    path,
    store,
    llm,
    events,
    told,
    clock,
    indexer,
    conversation: id!,
    async [Symbol.asyncDispose]() {
      indexer[Symbol.dispose]();
      await indexer.settled();
      store.close();
      await llm.stop();
      dir[Symbol.dispose]();
    },
  };
}

Deno.test("a backlog is worked through newest first in batches, and its end is reported with done equal to total", async () => {
  await using t = await setup(40);
  t.indexer.kick();
  await t.indexer.settled();
  const kept = vectorsIn(t.path);
  assert.equal(kept.length, 40);
  assert.ok(kept.every((v) => v.model === "embedder-a" && v.dim === 64));
  const batches = t.llm.requests.filter((r) => r.path === "/v1/embeddings")
    .map((r) => (r.body as { input: string[] }).input);
  assert.deepEqual(batches[0], ["ping"], "the model is learnt first");
  assert.match(batches[1]![0]!, /^Question 39\n\nAnswer 39$/, "newest first");
  assert.ok(batches.slice(1).every((input) => input.length <= 16));
  const reports = t.events.filter((e) => e.type === "indexing");
  assert.deepEqual(reports.at(-1), { type: "indexing", done: 40, total: 40 });
  assert.equal(t.indexer.progress, null);
  assert.equal(t.told.done, 1);
  assert.deepEqual(t.told.wrote, [], "a backlog names no turn");
  // Nothing left: a kick asks nothing more of the server.
  const asked = t.llm.requests.length;
  t.indexer.kick();
  await t.indexer.settled();
  assert.equal(
    t.llm.requests.filter((r) => r.path === "/v1/embeddings").length,
    batches.length,
  );
  assert.ok(t.llm.requests.length >= asked);
});

Deno.test("while a reply runs no batch starts, and a reply starting aborts the batch in flight", async () => {
  let replying = true;
  await using t = await setup(5, () => replying);
  t.indexer.kick();
  await t.indexer.settled();
  assert.equal(t.llm.requests.length, 0, "nothing while a reply runs");
  replying = false;
  const gate = Promise.withResolvers<void>();
  const started = Promise.withResolvers<void>();
  const abandoned = Promise.withResolvers<void>();
  t.llm.override("/v1/embeddings", async (request) => {
    request.signal.addEventListener("abort", () => abandoned.resolve());
    started.resolve();
    await gate.promise;
    return Response.json({ model: "x", data: [{ embedding: [1, 0] }] });
  });
  t.indexer.kick();
  await started.promise;
  t.indexer.pause();
  await t.indexer.settled();
  await abandoned.promise;
  gate.resolve();
  assert.deepEqual(vectorsIn(t.path), []);
});

Deno.test("a failing server stops the work until it answers again, tried every backend_poll", async () => {
  await using t = await setup(3);
  t.llm.override("/v1/embeddings", () => new Response("down", { status: 500 }));
  t.indexer.kick();
  await t.indexer.settled();
  assert.equal(t.indexer.up, false);
  assert.equal(t.clock.pending, 1, "a try is planned");
  // A kick meanwhile does not hammer the server.
  const tried = t.llm.requests.length;
  t.indexer.kick();
  await t.indexer.settled();
  assert.equal(t.llm.requests.length, tried);
  t.llm.override("/v1/embeddings", null);
  t.clock.advance(5000);
  await t.indexer.settled();
  assert.equal(t.indexer.up, true);
  assert.equal(vectorsIn(t.path).length, 3);
});

Deno.test("another embedding model makes every vector anew; a deleted conversation's vectors go with its turns", async () => {
  await using t = await setup(4);
  t.indexer.kick();
  await t.indexer.settled();
  t.llm.setModels([{ id: "embedder-b", embeddings: true }]);
  t.llm.override("/props", () => Response.json({ model_path: "embedder-b" }));
  // The server goes away and comes back with another model.
  t.llm.override("/v1/embeddings", () => new Response("", { status: 503 }));
  const kept = t.store.saveTurn(t.conversation, turn("One more", "Yes"));
  assert.ok(kept);
  t.indexer.kick(5);
  await t.indexer.settled();
  t.llm.override("/v1/embeddings", null);
  t.clock.advance(5000);
  await t.indexer.settled();
  const vectors = vectorsIn(t.path);
  assert.equal(vectors.length, 5);
  assert.ok(vectors.every((v) => v.model === "embedder-b"), "all made anew");
  assert.deepEqual(t.events.at(-1), { type: "indexing", done: 5, total: 5 });
  assert.ok(t.store.delete(t.conversation));
  while (t.store.maintain()) { /* upkeep to the end */ }
  assert.deepEqual(vectorsIn(t.path), []);
});

Deno.test("vectors of another dimension under the same model's name are made anew, and counted only once they are", async () => {
  await using t = await setup(4);
  t.indexer.kick();
  await t.indexer.settled();
  t.llm.override("/v1/embeddings", (_, record) => {
    const { input } = record.body as { input: string[] };
    return Response.json({
      model: "embedder-a",
      data: input.map((_, index) => ({ embedding: [1, index, 0], index })),
    });
  });
  t.store.saveTurn(t.conversation, turn("One more", "Yes"));
  t.indexer.kick(5);
  await t.indexer.settled();
  const vectors = vectorsIn(t.path);
  assert.deepEqual(vectors.map((v) => [v.model, v.dim]), [
    ["embedder-a", 3],
    ["embedder-a", 3],
    ["embedder-a", 3],
    ["embedder-a", 3],
    ["embedder-a", 3],
  ]);
  assert.deepEqual(t.events.at(-1), { type: "indexing", done: 5, total: 5 });
});

Deno.test("a turn saved after a backlog gets its vector quietly when named: no indexing, no done, no counts", async () => {
  await using t = await setup(3);
  t.indexer.kick();
  await t.indexer.settled();
  const reports = t.events.length;
  let counts = 0;
  const progress = t.store.vectors.progress.bind(t.store.vectors);
  t.store.vectors.progress = (model) => (counts++, progress(model));
  t.store.saveTurn(t.conversation, turn("A new question", "A new answer"));
  t.indexer.kick(4);
  await t.indexer.settled();
  const fresh = vectorsIn(t.path).find((v) => v.turn === 4);
  assert.deepEqual(
    fresh?.data,
    await vectorOf(t.llm, "A new question\n\nA new answer"),
  );
  assert.equal(t.events.length, reports, "no indexing event");
  assert.equal(t.told.done, 1, "only the backlog's");
  assert.deepEqual(t.told.wrote, [[4]]);
  assert.equal(counts, 0, "no count of the whole history");
  assert.equal(t.indexer.progress, null);
});

Deno.test("a turn saved under the id of a deleted one gets its own vector when named", async () => {
  await using t = await setup(2);
  // A second conversation, newest, indexed and then deleted to its rows.
  const other = t.store.saveTurn(null, turn("Deleted question", "Gone"));
  t.indexer.kick();
  await t.indexer.settled();
  assert.equal(vectorsIn(t.path).length, 3);
  assert.ok(t.store.delete(other));
  settle(t.store);
  t.store.saveTurn(t.conversation, turn("Reused question", "Its id was 3"));
  assert.equal(t.store.lastTurnId(t.conversation), 3, "the id is used again");
  t.indexer.kick(3);
  await t.indexer.settled();
  const reused = vectorsIn(t.path).find((v) => v.turn === 3);
  assert.deepEqual(
    reused?.data,
    await vectorOf(t.llm, "Reused question\n\nIts id was 3"),
  );
  assert.deepEqual(t.told.wrote, [[3]]);
});

Deno.test("a retried or edited turn gets its vector anew when named", async () => {
  await using t = await setup(2);
  t.indexer.kick();
  await t.indexer.settled();
  t.store.replaceLastTurn(t.conversation, turn("Edited question", "Again"));
  t.indexer.kick(2);
  await t.indexer.settled();
  const replaced = vectorsIn(t.path).find((v) => v.turn === 2);
  assert.deepEqual(
    replaced?.data,
    await vectorOf(t.llm, "Edited question\n\nAgain"),
  );
  assert.deepEqual(t.told.wrote, [[2]]);
});

Deno.test("a turn longer than the server's batch is indexed from its start, and never stops the work", async () => {
  await using t = await setup(20);
  // A reply of 100,000 characters, in the middle of the first batch.
  t.store.saveTurn(t.conversation, turn("Long", "word ".repeat(20_000)));
  t.store.saveTurn(t.conversation, turn("After", "the long one"));
  t.indexer.kick();
  await t.indexer.settled();
  assert.equal(t.indexer.up, true);
  assert.equal(vectorsIn(t.path).length, 22);
  assert.deepEqual(t.events.at(-1), { type: "indexing", done: 22, total: 22 });
});

Deno.test("a text the server refuses gets a vector of zeros, which no search finds, and the work goes on", async () => {
  await using t = await setup(3);
  t.llm.override("/v1/embeddings", (_, record) => {
    const { input } = record.body as { input: string[] };
    if (input.some((text) => text.startsWith("Question 1"))) {
      return Response.json({
        error: { code: 400, message: "Input content cannot be empty" },
      }, { status: 400 });
    }
    return Response.json({
      model: "embedder-a",
      data: input.map((_, index) => ({ embedding: [1, index], index })),
    });
  });
  t.indexer.kick();
  await t.indexer.settled();
  const kept = vectorsIn(t.path);
  assert.equal(kept.length, 3);
  assert.deepEqual(kept[1]!.data, new Uint8Array(8), "zeros for turn 2");
  assert.equal(t.indexer.up, true);
});

Deno.test("a failing history is told apart from a failing server: the server is not marked down", async () => {
  await using t = await setup(3);
  const logged: string[] = [];
  const before = setLogSink({ write: (line) => logged.push(line) });
  try {
    t.store.vectors.putAll = () => {
      throw new Error("database is locked");
    };
    t.indexer.kick();
    await t.indexer.settled();
  } finally {
    setLogSink(before);
  }
  assert.notEqual(t.indexer.up, false);
  assert.equal(t.clock.pending, 0, "no retry of the server planned");
  assert.ok(
    logged.some((line) => /indexing stopped: the history failed/.test(line)),
  );
  assert.ok(!logged.some((line) => /embedding server failed/.test(line)));
});

Deno.test("done never passes total: a deleted conversation's vectors, still there until upkeep, are not counted", async () => {
  await using t = await setup(3);
  const other = t.store.saveTurn(null, turn("Other", "Conversation"));
  t.indexer.kick();
  await t.indexer.settled();
  // Deleted, its rows not yet removed; a turn saved while the daemon was
  // down; then the daemon starts again.
  t.store.delete(other);
  t.store.saveTurn(t.conversation, turn("While away", "Saved"));
  t.clock.advance(1000);
  const events: Event[] = [];
  using restarted = new Indexer({
    embedder: new Embedder({ url: t.llm.url, model: "", stallMs: 5000 }),
    vectors: t.store.vectors,
    encode,
    busy: () => false,
    publish: (event) => events.push(event),
    retryMs: 5000,
    timer: t.clock,
    now: t.clock.now,
  });
  restarted.kick();
  await restarted.settled();
  assert.deepEqual(events, [
    { type: "indexing", done: 4, total: 4 },
    { type: "indexing", done: 4, total: 4 },
  ]);
});

/**
 * The turns' vectors, made in the background: a backlog worked through
 * newest first with `indexing` reported, a question never kept waiting,
 * a failing server tried again later, a new model's vectors made anew,
 * and a deleted turn's vector gone with it.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { Indexer } from "../../src/assistant/indexer.ts";
import { Embedder } from "../../src/llm/embeddings.ts";
import type { Event } from "../../src/protocol/protocol.ts";
import { Store } from "../../src/store/store.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { tempDir, turn } from "../store/fixtures.ts";

const encode = (vector: Float32Array) => new Uint8Array(vector.buffer.slice(0));

function vectorsIn(
  path: string,
): { turn: number; model: string; dim: number }[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare("SELECT turn, model, dim FROM vectors ORDER BY turn")
      .all() as unknown as { turn: number; model: string; dim: number }[];
  } finally {
    db.close();
  }
}

/** An indexer over a history of `turns` turns, with its events and a clock for its retries. */
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
  });
  return {
    path,
    store,
    llm,
    events,
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
  const kept = t.store.saveTurn(t.conversation, turn("One more", "Yes"));
  assert.ok(kept);
  t.indexer.kick();
  await t.indexer.settled();
  const vectors = vectorsIn(t.path);
  assert.equal(vectors.length, 5);
  assert.ok(vectors.every((v) => v.model === "embedder-b"), "all made anew");
  assert.ok(t.store.delete(t.conversation));
  while (t.store.maintain()) { /* upkeep to the end */ }
  assert.deepEqual(vectorsIn(t.path), []);
});

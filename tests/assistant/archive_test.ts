/**
 * The archive's search: at most the limit asked, one conversation left out
 * when asked; by words alone at once while the embedding server is known
 * down; and a hung embedding server costing a search by both ways no more
 * than a query's own bound.
 */
import assert from "node:assert/strict";
import { Archive } from "../../src/assistant/archive.ts";
import type { Conversations } from "../../src/assistant/conversations.ts";
import { Meaning } from "../../src/assistant/meaning.ts";
import { AssistantError } from "../../src/base/errors.ts";
import { Embedder } from "../../src/llm/embeddings.ts";
import type { Event, SearchHit } from "../../src/protocol/protocol.ts";
import { Store } from "../../src/store/store.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { turn } from "../store/fixtures.ts";

/** An archive over a store of eight conversations about tea; a search needs nothing of the conversations in memory. */
function archive(
  store: Store,
  meaning: ConstructorParameters<typeof Archive>[0]["meaning"] = null,
): Archive {
  for (let i = 0; i < 8; i++) store.saveTurn(null, turn(`Tea ${i}`, "Green"));
  return new Archive({
    store,
    conversations: {} as Conversations,
    searcher: undefined,
    meaning,
    titles: { cancel: () => {} },
    emit: () => {},
  });
}

function items(event: Event): SearchHit[] {
  assert.equal(event.type, "results");
  return event.type === "results" ? event.items : [];
}

Deno.test("a search leaving one conversation out gives at most the limit asked, with meaning off too", async () => {
  using store = new Store(":memory:");
  const search = archive(store);
  const found = items(await search.search("tea", 5, undefined, 3));
  assert.equal(found.length, 5);
  assert.ok(found.every((hit) => hit.id !== 3));
  // The conversation left out is one the words do not find (the one the
  // model asks in): still five.
  assert.equal(items(await search.search("tea", 5, undefined, 99)).length, 5);
  assert.equal(items(await search.search("tea", 5)).length, 5);
});

Deno.test("while the embedding server is known down, both ways answer by words at once without asking it", async () => {
  using store = new Store(":memory:");
  let asked = 0;
  const search = archive(store, {
    available: false,
    search: () => {
      asked++;
      return Promise.resolve([]);
    },
  });
  const found = items(await search.search("tea", 3));
  assert.deepEqual(found.map((hit) => hit.by), ["words", "words", "words"]);
  assert.equal(asked, 0);
});

Deno.test("a hung embedding server: both ways answer by words within the query's bound, meaning alone says embed_failed", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/embed.gguf", embeddings: true }],
  });
  const hung = Promise.withResolvers<void>();
  llm.override("/v1/embeddings", async () => {
    await hung.promise;
    return new Response("{}");
  });
  using store = new Store(":memory:");
  const meaning = new Meaning({
    // stall_timeout's bound would be minutes.
    embedder: new Embedder({ url: llm.url, model: "", stallMs: 600_000 }),
    nearest: () => Promise.resolve([]),
    signal: new AbortController().signal,
    queryMs: 200,
  });
  const search = archive(store, meaning);
  try {
    const found = items(await search.search("tea", 2, "both"));
    assert.deepEqual(found.map((hit) => hit.by), ["words", "words"]);
    const error = await search.search("tea", 2, "meaning").then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(error instanceof AssistantError);
    assert.equal(error.code, "embed_failed");
    assert.match(error.message, /did not answer in time/);
  } finally {
    hung.resolve();
  }
});

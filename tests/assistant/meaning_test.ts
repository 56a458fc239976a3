/**
 * Search by meaning through the daemon as it runs (its derived flags, the
 * embeddings endpoint's host among them): each saved turn gets its vector
 * in the background, quietly (a turn under an id a deleted one had, and a
 * retried or edited one, too); a history from before is worked through
 * with `indexing` reported, a turn too long for the embedding server's
 * batch never stopping it; a search finds a conversation by its meaning
 * and says so, however long the query; `both` falls back to words while
 * the embedding server is down or hung; and the model's search_history
 * tool reads other conversations.
 */
import assert from "node:assert/strict";
import { Embedder } from "../../src/llm/embeddings.ts";
import { encodeVector } from "../../src/store/vector_codec.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { embeddingsAnswer } from "../support/fake_llm_wire.ts";
import { isIdle, type SocketClient } from "../support/socket_client.ts";
import { eventually, peek } from "../store/fixtures.ts";

type Results = { items: { id: number; by?: string; title: string }[] };

const EMBED_MODEL = { id: "/srv/models/embed.gguf", embeddings: true };

/** Each turn's vector in the daemon's history file, by turn id. */
function vectors(daemon: Daemon): Map<number, Uint8Array> {
  return peek(daemon.paths.dbPath, (db) =>
    new Map(
      db.prepare("SELECT turn, data FROM vectors").all().map((row) => [
        Number(row.turn),
        row.data as Uint8Array,
      ]),
    ));
}

/** The vector the fake embedding server makes of a turn's text, as the daemon keeps it. */
async function vectorOf(embedder: FakeLlm, text: string): Promise<Uint8Array> {
  const client = new Embedder({ url: embedder.url, model: "", stallMs: 5000 });
  const { vectors } = await client.embed([text], AbortSignal.timeout(5000));
  return encodeVector(vectors[0]!);
}

/** The daemon's turn ids, oldest first. */
function turnIds(daemon: Daemon): number[] {
  return peek(
    daemon.paths.dbPath,
    (db) =>
      db.prepare("SELECT id FROM turns ORDER BY id").all().map((row) =>
        Number(row.id)
      ),
  );
}

async function results(client: SocketClient): Promise<Results> {
  const events = await client.until((e) =>
    e.type === "results" || e.type === "error"
  );
  const last = events.at(-1)!;
  assert.equal(last.type, "results", JSON.stringify(last));
  return last as unknown as Results;
}

async function ask(client: SocketClient, text: string): Promise<number> {
  await client.send({ type: "ask", text });
  const events = await client.until(isIdle);
  const done = events.find((e) => e.type === "done") as { id: number };
  return done.id;
}

Deno.test("turns get their vectors in the background, quietly; a search finds a conversation by meaning and tags how it was found", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: reply({ content: ["Noted."] }),
  });
  await using embedder = await FakeLlm.start({ models: [EMBED_MODEL] });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: `embed_url = "${embedder.url}"\nrecall = true\n`,
  });
  assert.ok(
    daemon.flags.some((flag) =>
      flag.startsWith("--allow-net=") &&
      flag.includes(new URL(embedder.url).host)
    ),
    "the embedding server's host is granted",
  );
  await using client = await daemon.connect();
  const hello = await client.next("hello");
  assert.equal(hello.meaning, true);
  const cats = await ask(client, "Tell me about cats");
  await client.send({ type: "new" });
  const ships = await ask(client, "How do ships float");
  // Both turns are given their vector, and no client is told of it: a
  // reply's turn is no backlog.
  await eventually(() => vectors(daemon).size === 2, "both turns have one");
  assert.deepEqual(
    vectors(daemon).get(2),
    await vectorOf(embedder, "How do ships float\n\nNoted."),
  );
  assert.ok(!client.received.some((e) => e.type === "indexing"));
  // The fake's vectors are a hash of the text: the turn's own text is
  // nearest to itself.
  await client.send({
    type: "search",
    q: "Tell me about cats\n\nNoted.",
    limit: 5,
    by: "meaning",
  });
  const byMeaning = (await client.until((e) => e.type === "results")).at(
    -1,
  ) as unknown as Results;
  assert.equal(byMeaning.items[0]?.id, cats);
  assert.ok(byMeaning.items.every((item) => item.by === "meaning"));
  assert.deepEqual(
    byMeaning.items.map((item) => item.id).sort(),
    [cats, ships].sort(),
  );
  await client.send({ type: "search", q: "ships", limit: 5 });
  const both = (await client.until((e) => e.type === "results")).at(
    -1,
  ) as unknown as Results;
  assert.equal(both.items[0]?.id, ships);
  assert.equal(both.items[0]?.by, "both");

  // The model's own search: another conversation's turn comes back to it,
  // never the one it is asked in.
  await client.send({ type: "new" });
  llm.enqueue(
    reply({
      toolCalls: [{ name: "search_history", arguments: '{"query":"cats"}' }],
    }),
    reply({ content: ["You asked about cats."] }),
  );
  await ask(client, "What did I ask about cats?");
  const chats = llm.requests.filter((r) =>
    r.path.startsWith("/v1/chat/completions")
  );
  const offered =
    (chats.at(-2)?.body as { tools?: { function: { name: string } }[] })
      .tools?.map((tool) => tool.function.name);
  assert.ok(offered?.includes("search_history"), "the tool is offered");
  const messages = (chats.at(-1)?.body as {
    messages: { role: string; content: string }[];
  }).messages;
  const result = messages.findLast((m) => m.role === "tool")?.content ?? "";
  assert.match(result, /^1\. "[^"]*cats[^"]*" \(\d{4}-\d{2}-\d{2}\): /i);
  assert.doesNotMatch(result, /What did I ask/);

  // The embedding server gone: `both` answers by words, `meaning` says why.
  await embedder.stop();
  await client.send({ type: "search", q: "ships", limit: 5 });
  const words = (await client.until((e) => e.type === "results")).at(
    -1,
  ) as unknown as Results;
  assert.deepEqual(words.items.map((i) => [i.id, i.by]), [[ships, "words"]]);
  await client.send({ type: "search", q: "ships", by: "meaning", limit: 5 });
  const refused = (await client.until((e) => e.type === "error")).at(
    -1,
  ) as { code: string };
  assert.equal(refused.code, "embed_failed");
});

Deno.test("without embed_url a search by meaning is meaning_off, and results carry no by", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  const hello = await client.next("hello");
  assert.equal(hello.meaning, false);
  await ask(client, "A question about tea");
  await client.send({ type: "search", q: "tea", by: "meaning" });
  assert.equal((await client.next("error")).code, "meaning_off");
  await client.send({ type: "search", q: "tea" });
  const results = (await client.until((e) => e.type === "results")).at(
    -1,
  ) as unknown as Results;
  assert.equal(results.items.length, 1);
  assert.equal("by" in results.items[0]!, false);
  await client.send({ type: "search", q: "tea", by: "sideways" });
  assert.equal((await client.next("error")).code, "bad_by");
});

Deno.test("a history from before is worked through with indexing reported to the end; a turn too long for the server's batch never stops it, nor a query of 100,000 characters", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: reply({ content: ["Noted."] }),
  });
  const home = await Deno.makeTempDir({ prefix: "da-test-" });
  try {
    // The history is made with search by meaning off.
    {
      await using daemon = await Daemon.start({ llmUrl: llm.url, home });
      await using client = await daemon.connect();
      await client.next("hello");
      await ask(client, "Tell me about cats");
      await client.send({ type: "new" });
      // 1,500 tokens: three times the physical batch of 512.
      await ask(client, `A long one: ${"word ".repeat(1500)}`);
    }
    await using embedder = await FakeLlm.start({ models: [EMBED_MODEL] });
    // Held until the client listens, so it sees every report.
    const listening = Promise.withResolvers<void>();
    embedder.override("/v1/embeddings", async (_, record) => {
      await listening.promise;
      const answer = embeddingsAnswer(EMBED_MODEL, record.body);
      return Response.json(answer.body, { status: answer.status });
    });
    await using daemon = await Daemon.start({
      llmUrl: llm.url,
      home,
      config: `embed_url = "${embedder.url}"\n`,
    });
    await using client = await daemon.connect();
    await client.next("hello");
    listening.resolve();
    const reports = await client.until((e) =>
      e.type === "indexing" && e.done === e.total
    );
    assert.deepEqual(reports.at(-1), { type: "indexing", done: 2, total: 2 });
    assert.equal(vectors(daemon).size, 2);
    await client.send({
      type: "search",
      q: "cats ".repeat(20_000),
      by: "meaning",
      limit: 5,
    });
    assert.equal((await results(client)).items.length, 2);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("a turn saved under the id of a deleted conversation's turn, and an edited turn, get their own vectors", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: reply({ content: ["Noted."] }),
  });
  await using embedder = await FakeLlm.start({ models: [EMBED_MODEL] });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: `embed_url = "${embedder.url}"\n`,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await ask(client, "Tell me about cats");
  await client.send({ type: "new" });
  const ships = await ask(client, "How do ships float");
  await eventually(() => vectors(daemon).size === 2, "both turns have one");
  // The newest conversation deleted; upkeep removes its turn, whose id the
  // next turn saved takes.
  await client.send({ type: "delete", id: ships });
  await eventually(() => turnIds(daemon).length === 1, "its turn is gone");
  const boats = await ask(client, "Tell me about boats");
  assert.deepEqual(turnIds(daemon), [1, 2], "the id is used again");
  const expected = await vectorOf(embedder, "Tell me about boats\n\nNoted.");
  await eventually(
    () => String(vectors(daemon).get(2)) === String(expected),
    "the turn under the id used again has its own vector",
  );
  await client.send({
    type: "search",
    q: "Tell me about boats\n\nNoted.",
    by: "meaning",
    limit: 5,
  });
  assert.equal((await results(client)).items[0]?.id, boats);
  // Edited: the turn is rewritten in place, and so is its vector.
  await client.send({ type: "edit", text: "Tell me about trains" });
  await client.until(isIdle);
  const edited = await vectorOf(
    embedder,
    "Tell me about trains\n\nNoted.",
  );
  await eventually(
    () => String(vectors(daemon).get(2)) === String(edited),
    "the edited turn has its new vector",
  );
});

Deno.test("a hung embedding server: a search by both ways answers by words within seconds", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: reply({ content: ["Noted."] }),
  });
  await using embedder = await FakeLlm.start({ models: [EMBED_MODEL] });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: `embed_url = "${embedder.url}"\n`,
  });
  // Searches by meaning wait at most a few seconds, well within this.
  await using client = await daemon.connect();
  await client.next("hello");
  const ships = await ask(client, "How do ships float");
  await eventually(() => vectors(daemon).size === 1, "the turn has one");
  const hung = Promise.withResolvers<void>();
  embedder.override("/v1/embeddings", async () => {
    await hung.promise;
    return new Response("{}");
  });
  try {
    await client.send({ type: "search", q: "ships", limit: 5 });
    const words = await results(client);
    assert.deepEqual(words.items.map((i) => [i.id, i.by]), [[ships, "words"]]);
  } finally {
    hung.resolve();
  }
});

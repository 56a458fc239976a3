/**
 * Search by meaning through the daemon as it runs (its derived flags, the
 * embeddings endpoint's host among them): the turns get their vectors in
 * the background with `indexing` reported, a search finds a conversation by
 * its meaning and says so, `both` falls back to words while the embedding
 * server is down, and the model's search_history tool reads other
 * conversations.
 */
import assert from "node:assert/strict";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { isIdle, type SocketClient } from "../support/socket_client.ts";

type Results = { items: { id: number; by?: string; title: string }[] };

async function ask(client: SocketClient, text: string): Promise<number> {
  await client.send({ type: "ask", text });
  const events = await client.until(isIdle);
  const done = events.find((e) => e.type === "done") as { id: number };
  return done.id;
}

Deno.test("turns get their vectors in the background; a search finds a conversation by meaning and tags how it was found", async () => {
  await using llm = await FakeLlm.start({
    defaultScript: reply({ content: ["Noted."] }),
  });
  await using embedder = await FakeLlm.start({
    models: [{ id: "/srv/models/embed.gguf", embeddings: true }],
  });
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
  // Both turns are given their vector: the last report says so.
  await client.until((e) =>
    e.type === "indexing" && e.done === 2 && e.total === 2
  );
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

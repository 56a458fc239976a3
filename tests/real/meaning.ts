/**
 * The tier's scenario of search by meaning, through the daemon: a history
 * of two questions made with search by meaning off, then the daemon started
 * again with `embed_url` at the server (`--embeddings --pooling mean`, the
 * tiny embedding model; the chat server is the fake, which the scenario
 * does not compare). The backlog is worked through to `indexing` with
 * `done` equal to `total`, one turn's text being denser than the daemon's
 * estimate, so the server refuses it as longer than its batch and the
 * daemon halves it; a search by meaning for the other turn's exact text
 * finds its conversation first (the same text makes the same vector, so
 * this holds with random weights); and a query of 100,000 characters is
 * answered.
 */
import assert from "node:assert/strict";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { isIdle, SocketClient } from "../support/socket_client.ts";
import { observe, report, type Scenario } from "./scenario.ts";

/** How long a client waits for any one event: generous, for a loaded machine. */
const EVENT_TIMEOUT_MS = 60_000;

const CATS = "Tell me about cats";
/** A letter and a stop, a token each: twice what the daemon's estimate allows. */
const DENSE = "x.".repeat(1000);

type Item = { id: number; by?: string };

/** A loopback proxy to `target` that holds every request until `open` is called (so the client listens before the backlog starts), and counts the server's refusals of an input too large. */
function gate(
  target: string,
): AsyncDisposable & { url: string; open(): void; tooLarge: number } {
  const opened = Promise.withResolvers<void>();
  let tooLarge = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      await opened.promise;
      const url = new URL(request.url);
      const body = request.method === "GET" ? undefined : await request.text();
      const answer = await fetch(`${target}${url.pathname}${url.search}`, {
        method: request.method,
        headers: request.headers,
        ...(body === undefined ? {} : { body }),
      });
      const bytes = await answer.arrayBuffer();
      if (/too large to process/.test(new TextDecoder().decode(bytes))) {
        tooLarge++;
      }
      return new Response(bytes, {
        status: answer.status,
        headers: answer.headers,
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    open: () => opened.resolve(),
    get tooLarge() {
      return tooLarge;
    },
    async [Symbol.asyncDispose]() {
      opened.resolve();
      await server.shutdown();
    },
  };
}

async function connect(daemon: Daemon): Promise<SocketClient> {
  const client = await SocketClient.connect(daemon.paths.socketPath, {
    timeoutMs: EVENT_TIMEOUT_MS,
  });
  await client.next("hello");
  return client;
}

async function ask(client: SocketClient, text: string): Promise<number> {
  await client.send({ type: "ask", text });
  const events = await client.until(isIdle);
  const done = events.find((event) => event.type === "done");
  assert.ok(done, JSON.stringify(events));
  return (done as unknown as { id: number }).id;
}

async function search(client: SocketClient, q: string): Promise<Item[]> {
  await client.send({ type: "search", q, by: "meaning", limit: 5 });
  const events = await client.until((event) =>
    event.type === "results" || event.type === "error"
  );
  const last = events.at(-1)!;
  assert.equal(last.type, "results", JSON.stringify(last));
  return (last as unknown as { items: Item[] }).items;
}

const meaning: Scenario = {
  name:
    "search by meaning: a history indexed to done = total, a turn too dense for the batch halved, a turn's own text finds its conversation first",
  real: { role: "embed", args: ["--embeddings", "--pooling", "mean"] },
  fake: {
    options: {
      models: [{ id: "/srv/models/tiny-embed.gguf", embeddings: true }],
    },
  },
  async run({ backend }) {
    await using chat = await FakeLlm.start({
      defaultScript: reply({ content: ["Noted."] }),
    });
    const home = await Deno.makeTempDir({ prefix: "da-real-meaning-" });
    try {
      let cats: number;
      let dense: number;
      {
        await using daemon = await Daemon.start({ llmUrl: chat.url, home });
        await using client = await connect(daemon);
        cats = await ask(client, CATS);
        await client.send({ type: "new" });
        dense = await ask(client, DENSE);
      }
      await using proxy = gate(backend.url);
      await using daemon = await Daemon.start({
        llmUrl: chat.url,
        home,
        config: `embed_url = "${proxy.url}"\n`,
      });
      await using client = await connect(daemon);
      proxy.open();
      const reports = await client.until((event) =>
        event.type === "indexing" && event.done === event.total
      );
      const last = reports.at(-1) as { done: number; total: number };
      const vectors = await vectorCount(daemon);
      const exact = await search(client, `${CATS}\n\nNoted.`);
      const long = await search(client, "cats ".repeat(20_000));
      const seen = {
        indexed: `${last.done}/${last.total}`,
        refused: proxy.tooLarge > 0,
        vectors,
        first: exact[0]?.id === cats ? "cats" : String(exact[0]?.id),
        found: exact.map((item) => item.id === dense ? "dense" : "cats"),
        by: [...new Set(exact.map((item) => item.by))],
        long: long.length,
      };
      report(
        `search by meaning, ${backend.kind} llama-server: indexing ${seen.indexed}, ` +
          `${vectors} vectors of 2 turns (${proxy.tooLarge} requests refused as too large, the dense text then halved); "${CATS}" found its conversation ${
            seen.first === "cats" ? "first" : `not first (${seen.first})`
          } of ${exact.length}; a 100,000-character query answered ${seen.long} results`,
      );
      return observe([], seen);
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
  check(seen) {
    const extra = seen.extra as {
      indexed: string;
      refused: boolean;
      vectors: number;
      first: string;
      found: string[];
      by: string[];
      long: number;
    };
    assert.equal(extra.indexed, "2/2");
    assert.equal(extra.refused, true, "the dense turn was too large at first");
    assert.equal(extra.vectors, 2, "both turns have their vector");
    assert.equal(extra.first, "cats");
    assert.deepEqual(extra.found, ["cats", "dense"]);
    assert.deepEqual(extra.by, ["meaning"]);
    assert.equal(extra.long, 2);
  },
};

/** Vectors in the daemon's history file. */
async function vectorCount(daemon: Daemon): Promise<number> {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(daemon.paths.dbPath, { readOnly: true });
  try {
    return Number(db.prepare("SELECT count(*) AS n FROM vectors").get()?.n);
  } finally {
    db.close();
  }
}

/** The scenarios of search by meaning. */
export const MEANING_SCENARIOS: Scenario[] = [meaning];

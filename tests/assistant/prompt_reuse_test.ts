/**
 * Every turn costs only its new tokens: each request asks llama-server to
 * reuse its cache across a moved window (`n_cache_reuse`), the start of each
 * request stays byte for byte the same, and where the server cannot shift a
 * model's cache the daemon learns it and moves the window in blocks.
 */
import assert from "node:assert/strict";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { FakeLlm, reply, type Script } from "../support/fake_llm.ts";
import { isIdle, type SocketClient } from "../support/socket_client.ts";

type Body = {
  messages: { role: string; content: string | null }[];
  n_cache_reuse?: number;
};

const TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname;

/** Answers each question with a reply of `words` pieces. */
function answers(words: number): Script {
  return {
    steps(context) {
      const script = reply({
        content: Array.from({ length: words }, (_, i) => ` word${i}`),
      });
      if (!("steps" in script)) throw new TypeError("a script with steps");
      return script.steps(context);
    },
  };
}

async function converse(client: SocketClient, count: number): Promise<void> {
  for (let n = 1; n <= count; n++) {
    await client.send({ type: "ask", text: `Question ${n}` });
    await client.until(isIdle);
  }
}

/** The index of the first earlier question each request carried (0-based), read from its messages. */
function windowStarts(llm: FakeLlm): number[] {
  return llm.chats.map((chat) => {
    const users = (chat.body as Body).messages.filter((m) => m.role === "user");
    const first = users[0]?.content?.match(/Question (\d+)$/)?.[1];
    return users.length === 1 ? users.length - 1 : Number(first) - 1;
  });
}

Deno.test("every chat request carries n_cache_reuse: 256 by default, the configured value, none for 0, and a [request] value wins", async () => {
  for (
    const [config, expected] of [
      ["", 256],
      ["cache_reuse = 64\n", 64],
      ["cache_reuse = 0\n", undefined],
      ["cache_reuse = 0\n[request]\nn_cache_reuse = 32\n", 32],
    ] as const
  ) {
    await using llm = await FakeLlm.start();
    await using daemon = await LocalDaemon.start({
      llmUrl: llm.url,
      config: `auto_title = true\n${config}`,
    });
    await using client = await daemon.connect();
    await client.next("hello");
    await converse(client, 2);
    // The title request too.
    if (!client.received.some((event) => event.type === "renamed")) {
      await client.until((event) => event.type === "renamed");
    }
    assert.equal(llm.chats.length, 3);
    for (const chat of llm.chats) {
      assert.equal((chat.body as Body).n_cache_reuse, expected, config);
    }
  }
});

Deno.test("each request begins as the one before did, byte for byte: the same system prompt and tools, the history replayed as sent", async () => {
  await using llm = await FakeLlm.start({ defaultScript: answers(3) });
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
    config: "compact = false\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(client, 4);
  const bodies = llm.chats.map((chat) =>
    chat.body as Body & { tools?: unknown }
  );
  for (let i = 1; i < bodies.length; i++) {
    const before = bodies[i - 1]!;
    const after = bodies[i]!;
    assert.equal(JSON.stringify(after.tools), JSON.stringify(before.tools));
    // Everything the earlier request sent comes again first, unchanged.
    assert.equal(
      JSON.stringify(after.messages.slice(0, before.messages.length)),
      JSON.stringify(before.messages),
    );
  }
  // So the server read only the new question and the last reply.
  for (const use of llm.cacheLog.slice(1)) {
    assert.ok(use.cacheN > use.promptN, JSON.stringify(use));
  }
});

Deno.test("a model whose cache cannot shift is learnt from cache_n after the window moved, kept, logged once, and its window then moves in blocks", async () => {
  const model = "/srv/models/gemma-swa.gguf";
  await using llm = await FakeLlm.start({
    models: [{ id: model, shift: false }],
    defaultScript: answers(24),
  });
  const config = "history_turns = 4\ncompact = false\ncache_reuse = 16\n";
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url, config });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(client, 14);
  assert.deepEqual(daemon.store.cacheShift(model)?.shifts, false);
  assert.equal(daemon.log.match(/model prompt cache learnt/g)?.length, 1);
  assert.match(daemon.log, /shifts=false history="moves in blocks"/);
  // It slid twice (two requests in a row taught it), then moves in blocks
  // that keep half the window, so the start holds for the next turns.
  assert.deepEqual(
    windowStarts(llm),
    [0, 0, 0, 0, 0, 1, 2, 5, 5, 5, 8, 8, 8, 11],
  );
  // Between moves each request reused the one before: the kept turns.
  const moves = new Set([5, 6, 7, 10, 13]);
  for (const [i, use] of llm.cacheLog.entries()) {
    if (i === 0 || moves.has(i)) continue;
    assert.ok(use.cacheN > use.promptN, `request ${i}: ${JSON.stringify(use)}`);
  }
});

Deno.test("a model whose cache shifts is learnt too, and its window keeps sliding a turn at a time", async () => {
  const model = "/srv/models/llama.gguf";
  await using llm = await FakeLlm.start({
    models: [{ id: model }],
    defaultScript: answers(24),
  });
  const config = "history_turns = 4\ncompact = false\ncache_reuse = 16\n";
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url, config });
  await using client = await daemon.connect();
  await client.next("hello");
  await converse(client, 8);
  assert.deepEqual(daemon.store.cacheShift(model)?.shifts, true);
  assert.deepEqual(windowStarts(llm), [0, 0, 0, 0, 0, 1, 2, 3]);
  // The slid requests read only the new question and the last reply.
  for (const use of llm.cacheLog.slice(5)) {
    assert.ok(use.shifted, JSON.stringify(use));
    assert.ok(use.cacheN > use.promptN, JSON.stringify(use));
  }
});

Deno.test("a finding kept in the history file holds after a restart: the window moves in blocks from the first move", async () => {
  const model = "/srv/models/gemma-swa.gguf";
  await using llm = await FakeLlm.start({
    models: [{ id: model, shift: false }],
    defaultScript: answers(8),
  });
  const home = await Deno.makeTempDir({ prefix: "da-test-" });
  try {
    const config = "history_turns = 4\ncompact = false\n";
    {
      await using daemon = await LocalDaemon.start({
        llmUrl: llm.url,
        config,
        home,
      });
      daemon.store.setCacheShift(model, false);
    }
    await using daemon = await LocalDaemon.start({
      llmUrl: llm.url,
      config,
      home,
    });
    await using client = await daemon.connect();
    await client.next("hello");
    await converse(client, 8);
    assert.deepEqual(windowStarts(llm), [0, 0, 0, 0, 0, 3, 3, 3]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

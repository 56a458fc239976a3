/**
 * Private conversations: several turns (a retry among them) that live in
 * the daemon's memory only. The history file, its WAL and its shared-memory
 * file are read raw, byte for byte, for any trace of their text.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { within } from "../support/client_harness.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, hold, reply } from "../support/fake_llm.ts";
import {
  isIdle,
  type SocketClient,
  withoutTimings,
} from "../support/socket_client.ts";

/** Words that appear only in the private conversation. */
const SECRETS = [
  "zanzibar-question-one",
  "quokka-answer-one",
  "xylophone-question-two",
  "marmalade-answer-two",
  "marmalade-answer-retried",
  "periwinkle-question-three",
  "tangerine-answer-three",
];

/** Every secret found in the history file or its sidecars, read as raw bytes. */
async function tracesIn(daemon: Daemon): Promise<string[]> {
  const found: string[] = [];
  for (const suffix of ["", "-wal", "-shm"]) {
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(daemon.paths.dbPath + suffix);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      throw error;
    }
    // latin1 maps each byte to one character: a byte search, whatever the encoding.
    const text = new TextDecoder("latin1").decode(bytes);
    for (const secret of SECRETS) {
      if (text.includes(secret)) found.push(`${secret} in history.db${suffix}`);
    }
  }
  return found;
}

function messagesText(body: unknown): string {
  return JSON.stringify((body as { messages: unknown }).messages);
}

async function ask(client: SocketClient, text: string) {
  await client.send({ type: "ask", text });
  return await client.until(isIdle);
}

Deno.test("a private conversation of several turns leaves no byte in the history files, nor in list or search, and is gone after new", async () => {
  await using llm = await FakeLlm.start();
  const daemon = await Daemon.start({ llmUrl: llm.url });
  try {
    await using client = await daemon.connect();
    await client.next("hello");
    // A saved conversation first, so the file has pages and a WAL to look in.
    llm.enqueue(reply({ content: ["A kept answer."] }));
    await ask(client, "A kept question");

    await client.send({ type: "new", private: true, ref: "p" });
    assert.deepEqual(await client.next("conversation"), {
      type: "conversation",
      id: null,
      turns: [],
      private: true,
      summary: null,
      memories: 0,
      ref: "p",
    });
    llm.enqueue(
      reply({ content: [SECRETS[1]!] }),
      reply({ content: [SECRETS[3]!] }),
      reply({ content: [SECRETS[4]!] }),
      reply({ content: [SECRETS[6]!] }),
    );
    const first = await ask(client, `Tell me ${SECRETS[0]}`);
    assert.deepEqual(withoutTimings(first.find((e) => e.type === "done")!), {
      type: "done",
      id: null,
      stopped: false,
    });
    await ask(client, `And ${SECRETS[2]}`);
    await client.send({ type: "retry" });
    const retried = await client.until(isIdle);
    assert.deepEqual(withoutTimings(retried.find((e) => e.type === "done")!), {
      type: "done",
      id: null,
      stopped: false,
      replaces: true,
    });
    await ask(client, `Then ${SECRETS[5]}`);
    // The model had the private conversation's history, the retried reply
    // in place of the first try.
    const last = messagesText(llm.chats.at(-1)!.body);
    for (const secret of [SECRETS[0]!, SECRETS[4]!, SECRETS[5]!]) {
      assert.ok(last.includes(secret), secret);
    }
    assert.ok(!last.includes(SECRETS[3]!));

    await using late = await daemon.connect();
    const hello = await late.next("hello");
    assert.equal(hello.private, true);
    assert.equal(hello.id, null);
    assert.deepEqual(hello.turns.map((t) => t.reply), [
      SECRETS[1],
      SECRETS[4],
      SECRETS[6],
    ]);

    await client.send({ type: "list" });
    assert.deepEqual(
      (await client.next("conversations")).items.map((i) => i.title),
      ["A kept question"],
    );
    for (const secret of SECRETS) {
      await client.send({ type: "search", q: secret });
      assert.deepEqual((await client.next("results")).items, [], secret);
    }
    assert.deepEqual(await tracesIn(daemon), []);
    // After a checkpoint by another connection, the main file too.
    const db = new DatabaseSync(daemon.paths.dbPath);
    db.exec("PRAGMA busy_timeout = 5000");
    db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get();
    db.close();
    assert.deepEqual(await tracesIn(daemon), []);

    // `new` ends it: nothing of it is shown or sent to the model again.
    await client.send({ type: "new" });
    assert.deepEqual(await client.next("conversation"), {
      type: "conversation",
      id: null,
      turns: [],
      summary: null,
      memories: 0,
    });
    llm.enqueue(reply({ content: ["Fresh."] }));
    await ask(client, "A fresh question");
    assert.equal(
      SECRETS.some((s) => messagesText(llm.chats.at(-1)!.body).includes(s)),
      false,
    );
    await using after = await daemon.connect();
    const helloAfter = await after.next("hello");
    assert.equal("private" in helloAfter, false);
    assert.equal(JSON.stringify(helloAfter).includes("zanzibar"), false);
    assert.deepEqual(await tracesIn(daemon), []);
  } finally {
    await daemon.stop("SIGKILL");
  }
  try {
    assert.deepEqual(await tracesIn(daemon), []);
    assert.equal(daemon.log.includes("zanzibar"), false);
  } finally {
    await daemon[Symbol.asyncDispose]();
  }
});

Deno.test("a private conversation's reply stops when another conversation becomes current, and saves nothing", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(reply({ content: ["Kept."] }));
  await ask(client, "Kept question");

  await client.send({ type: "new", private: true });
  await client.next("conversation");
  llm.enqueue(hold(["Secret ", "half"]));
  await client.send({ type: "ask", text: "Private question", ref: "p" });
  await client.until((e) => e.type === "token" && e.delta === "half");
  const held = llm.chats.at(-1)!;
  await client.send({ type: "open", id: 1 });
  const events = await client.until((e) => e.type === "conversation");
  assert.deepEqual(events, [
    { type: "done", id: null, stopped: true, ref: "p" },
    { type: "state", state: "idle" },
    {
      type: "conversation",
      id: 1,
      turns: [{ user: "Kept question", reply: "Kept.", tools: [] }],
      summary: null,
      memories: 0,
    },
  ]);
  await within(held.aborted, "the private reply's request to be aborted");
  await client.send({ type: "list" });
  assert.equal((await client.next("conversations")).items.length, 1);
});

Deno.test("new private needs a boolean and a private conversation gets no title", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "auto_title = true\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  await client.send({ type: "new", private: "yes" });
  assert.deepEqual(await client.next(), {
    type: "error",
    code: "bad_private",
    message: "bad private",
  });
  await client.send({ type: "new", private: true });
  await client.next("conversation");
  llm.enqueue(reply({ content: ["One."] }), reply({ content: ["Two."] }));
  await ask(client, "First private question");
  await ask(client, "Second private question");
  // The request after the first reply was the second question, not a title.
  assert.equal(llm.chats.length, 2);
  assert.match(messagesText(llm.chats[1]!.body), /Second private question/);
});

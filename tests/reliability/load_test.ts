/**
 * Load: many clients on the real daemon, one of them stalled (it never
 * reads), and a long seeded run of asks with random stops and asks during a
 * reply. Every reading client gets the same events as a reference client,
 * every reply ends exactly once, the state ends idle, the stalled client is
 * dropped without holding anyone up, and memory stays bounded.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { log } from "../../src/base/log.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { answering, FakeLlm, type Plan } from "../support/fake_llm.ts";
import { HEAVY, rssKiB, seeded } from "../fixtures/chaos.ts";
import {
  isIdle,
  type Received,
  SocketClient,
} from "../support/socket_client.ts";

const CLIENTS = HEAVY ? 128 : 64;
const ASKS = HEAVY ? 3_000 : 1_000;
/** Growth of the daemon's resident memory after warm-up that fails the test. */
const RSS_GROWTH_LIMIT_KIB = 128 * 1024;

const rng = seeded(20260803);

/** Events that answer one client's own command; the rest go to everyone. */
const isOwnAnswer = (event: Received) =>
  event.type === "hello" || event.type === "pong" ||
  event.type === "conversations" || event.type === "results" ||
  (event.type === "error" && event.turn !== true);

/** The scripted answer to one question, unique to it. */
function answerTokens(question: string): string[] {
  return Array.from(
    { length: rng.range(2, 6) },
    (_, i) =>
      `${i === 0 ? question : ""} token ${i} ${"of a short reply ".repeat(8)}`,
  );
}

/** Replies as the reference client saw them: each from its `user` to its end. */
interface Seen {
  question: string;
  text: string;
  end: "done" | "stopped" | "error" | null;
  idleAfter: boolean;
}

function replies(events: Received[]): Seen[] {
  const seen: Seen[] = [];
  let current: Seen | null = null;
  for (const event of events) {
    if (isOwnAnswer(event)) continue;
    if (event.type === "user") {
      assert.ok(
        current === null || current.end !== null,
        "a reply never ended",
      );
      current = { question: event.text, text: "", end: null, idleAfter: false };
      seen.push(current);
    } else if (event.type === "token") {
      assert.ok(current && current.end === null, "a token outside a reply");
      current.text += event.delta;
    } else if (event.type === "done" || event.type === "error") {
      assert.ok(current && current.end === null, `a second end: ${event.type}`);
      current.end = event.type === "error"
        ? "error"
        : event.stopped
        ? "stopped"
        : "done";
    } else if (isIdle(event) && current) {
      current.idleAfter = true;
    }
  }
  return seen;
}

function storedTurns(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return Number(db.prepare("SELECT count(*) AS n FROM turns").get()?.n);
  } finally {
    db.close();
  }
}

async function readToEnd(conn: Deno.UnixConn): Promise<string> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(256 * 1024);
  let text = "";
  for (;;) {
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) return text + decoder.decode();
    text += decoder.decode(buffer.subarray(0, n), { stream: true });
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  // The daemon's log is another process's output; polling it is the only way to watch it.
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test(`${CLIENTS} clients, one stalled, ${ASKS} asks with stops and interruptions (seed ${rng.seed})`, async () => {
  const plans = new Map<string, Plan>();
  await using llm = await FakeLlm.start({
    defaultScript: answering(plans, ["Let me see."]),
  });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: `max_clients = ${CLIENTS + 8}\n`,
  });
  const path = daemon.paths.socketPath;
  // Connected first, so the daemon numbers it client 1.
  await using stalled = await SocketClient.connect(path, { read: false });
  const readers: SocketClient[] = [];
  try {
    for (let i = 1; i < CLIENTS; i++) {
      const client = await SocketClient.connect(path, { timeoutMs: 30_000 });
      readers.push(client);
      await client.next("hello");
    }
    const reference = readers[0]!;
    const someone = () => rng.pick(readers);
    const pid = daemon.child.pid;
    const rss: number[] = [];
    const modes = { complete: 0, stopped: 0, interrupted: 0, other: 0 };

    for (let i = 0; i < ASKS; i++) {
      if (i % Math.floor(ASKS / 4) === Math.floor(ASKS / 8)) {
        rss.push(await rssKiB(pid));
      }
      if (rng.chance(0.05)) {
        // Commands whose answers only their sender sees, and a shared `new`.
        modes.other++;
        await someone().send(rng.pick([
          { type: "ping" },
          { type: "list", limit: 5 },
          { type: "search", q: "token" },
          { type: "new" },
        ]));
      }
      const question = `q${i}`;
      const tokens = answerTokens(question);
      plans.set(question, { tokens, tokenDelayMs: rng.pick([0, 0, 1]) });
      await someone().send({ type: "ask", text: question });
      await reference.until((e) => e.type === "user" && e.text === question);
      const roll = rng.next();
      if (roll < 0.5) {
        modes.complete++;
        await reference.until(isIdle);
        continue;
      }
      // Let a few tokens through, then stop it or ask over it.
      const wanted = rng.int(tokens.length);
      let got = 0;
      if (wanted > 0) {
        await reference.until((e) =>
          (e.type === "token" && ++got >= wanted) || isIdle(e)
        );
      }
      if (roll < 0.75) {
        modes.stopped++;
        await someone().send({ type: "stop" });
      } else {
        modes.interrupted++;
      }
    }
    const last = "the last question";
    plans.set(last, { tokens: ["The ", "end."], tokenDelayMs: 0 });
    await someone().send({ type: "ask", text: last });
    for (const client of readers) {
      await client.until((e) => e.type === "user" && e.text === last);
      await client.until(isIdle);
    }
    rss.push(await rssKiB(pid));

    // Every reading client saw exactly the reference's shared events.
    const shared = (client: SocketClient) =>
      client.received.filter((e) => !isOwnAnswer(e));
    const expected = shared(reference);
    for (const [n, client] of readers.entries()) {
      assert.deepEqual(shared(client), expected, `client ${n} differs`);
    }

    // Each reply ended once, with idle after it; the done ones hold their whole answer.
    const seen = replies(expected);
    assert.equal(seen.length, ASKS + 1);
    let done = 0;
    for (const one of seen) {
      assert.notEqual(one.end, null, `${one.question} never ended`);
      assert.notEqual(one.end, "error", `${one.question} failed`);
      assert.ok(one.idleAfter, `no idle after ${one.question}`);
      const whole = plans.get(one.question)!.tokens.join("");
      if (one.end === "done") {
        done++;
        assert.equal(one.text, whole);
      } else {
        assert.ok(whole.startsWith(one.text), `${one.question} is garbled`);
      }
    }
    assert.ok(isIdle(expected.at(-1)!), "the run ends idle");
    assert.equal(storedTurns(daemon.paths.dbPath), done);

    // A newcomer finds nothing stuck.
    await using late = await SocketClient.connect(path);
    const hello = await late.next("hello");
    assert.equal(hello.state, "idle");
    assert.equal(hello.pending, null);

    // The stalled client was dropped, and only it.
    const bytes = expected.reduce(
      (sum, e) => sum + JSON.stringify(e).length,
      0,
    );
    assert.ok(bytes > 512 * 1024, `only ${bytes} bytes went out`);
    await until(
      () => /client dropped client=1 reason=(stall|backlog)/.test(daemon.log),
      "the stalled client to be dropped",
    );
    assert.equal(daemon.log.match(/client dropped/g)?.length, 1);
    // What it was sent before the drop is a prefix of what everyone saw.
    const held = await readToEnd(stalled.conn);
    const lines = held.split("\n").slice(0, -1).map((line) => JSON.parse(line));
    assert.equal(lines[0]?.type, "hello");
    assert.ok(lines.length > 1 && lines.length < expected.length);
    assert.deepEqual(lines.slice(1), expected.slice(0, lines.length - 1));

    const growth = Math.max(...rss) - rss[0]!;
    assert.ok(
      growth < RSS_GROWTH_LIMIT_KIB,
      `daemon RSS grew ${growth} KiB after warm-up: ${rss.join(", ")} KiB`,
    );
    log.info("load figures", {
      seed: rng.seed,
      clients: CLIENTS,
      asks: ASKS,
      ...modes,
      done,
      events: expected.length,
      bytes_per_client: bytes,
      rss_kib: rss.join("/"),
    });
  } finally {
    for (const client of readers) await client.close();
  }
});

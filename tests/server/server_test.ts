import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import { type LogSink, setLogSink } from "../../src/base/log.ts";
import {
  type Command,
  type Event,
  MAX_LINE_BYTES,
} from "../../src/protocol/protocol.ts";
import {
  type Brain,
  Server,
  type ServerOptions,
} from "../../src/server/server.ts";
import { SocketClient } from "../support/socket_client.ts";
import { within } from "../support/client_harness.ts";
import { idleHello } from "../support/hello_fixture.ts";

const encoder = new TextEncoder();

/** A brain with a script: records commands, answers queries, broadcasts asks. */
class ScriptedBrain implements Brain {
  readonly commands: Command[] = [];
  readonly asked: string[] = [];
  server: Server | null = null;
  /** Searches for "slow" wait for this gate. */
  gate = Promise.withResolvers<void>();
  slowStarted = Promise.withResolvers<void>();
  /** Runs in the microtask after a hello is made: before a byte of it can be written. */
  afterHello: (() => void) | null = null;
  /** Times a `stop` behind a running command interrupted it. */
  interrupts = 0;
  /** Searches for "held" wait until their asker is gone. */
  heldStarted = Promise.withResolvers<void>();
  heldGone = Promise.withResolvers<void>();

  interrupt(): void {
    this.interrupts++;
    // What a stop ends: the slow search, as a converter would end.
    this.gate.resolve();
  }

  hello(): Event {
    const after = this.afterHello;
    if (after) queueMicrotask(after);
    return idleHello({
      turns: this.asked.map((user) => ({ user, reply: "", tools: [] })),
    });
  }

  async handle(command: Command, gone?: AbortSignal): Promise<Event | null> {
    this.commands.push(command);
    switch (command.type) {
      case "ping":
        return { type: "pong", pid: Deno.pid, uptime: 0, version: "test" };
      case "list":
        return { type: "conversations", items: [] };
      case "ask":
        if (command.text === "refuse") {
          throw new AssistantError("no model loaded", {
            code: "no_model_loaded",
          });
        }
        if (command.text === "uncoded") {
          // Meant for people, but with no code a client could match.
          throw new AssistantError("the cupboard is bare");
        }
        this.asked.push(command.text);
        this.server?.broadcast({ type: "user", text: command.text });
        return null;
      case "search":
        if (command.q === "slow") {
          this.slowStarted.resolve();
          await this.gate.promise;
        }
        if (command.q === "held") {
          this.heldStarted.resolve();
          if (!gone) throw new Error("no signal of the asker gone");
          await new Promise((resolve) =>
            gone.addEventListener("abort", resolve, { once: true })
          );
          this.heldGone.resolve();
        }
        return {
          type: "results",
          items: [{ id: 1, title: command.q, snippet: command.q }],
        };
      case "delete":
        throw new Error("database is locked");
      case "new":
        this.server?.broadcast({ type: "conversation", id: null, turns: [] });
        return null;
      default:
        return null;
    }
  }
}

/** Captures log lines so tests can wait for one and check none leaks content. */
class LogCapture implements Disposable {
  readonly lines: string[] = [];
  readonly #previous: LogSink;
  #waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];

  constructor() {
    this.#previous = setLogSink({ write: (line) => this.#add(line) });
  }

  /** Resolves with the first line (past or future) matching pattern; fails after 10 s. */
  async waitFor(pattern: RegExp): Promise<string> {
    const seen = this.lines.find((line) => pattern.test(line));
    if (seen !== undefined) return seen;
    const { promise, resolve, reject } = Promise.withResolvers<string>();
    const waiter = { pattern, resolve };
    this.#waiters.push(waiter);
    const timer = setTimeout(() => {
      this.#waiters = this.#waiters.filter((w) => w !== waiter);
      reject(new Error(`No log line matched ${pattern} within 10 s`));
    }, 10_000);
    try {
      return await promise;
    } finally {
      clearTimeout(timer);
    }
  }

  #add(line: string): void {
    this.lines.push(line);
    this.#waiters = this.#waiters.filter((waiter) => {
      if (!waiter.pattern.test(line)) return true;
      waiter.resolve(line);
      return false;
    });
  }

  [Symbol.dispose](): void {
    setLogSink(this.#previous);
  }
}

/** A server on a fresh temporary socket with a scripted brain; disposing closes and cleans up. */
async function setup(options: Partial<ServerOptions> = {}) {
  const logs = new LogCapture();
  const dir = await Deno.makeTempDir({ prefix: "da-server-" });
  const path = `${dir}/assistant.sock`;
  const brain = new ScriptedBrain();
  const server = await Server.listen({
    path,
    brain,
    maxClients: 8,
    ...options,
  });
  brain.server = server;
  return {
    dir,
    path,
    brain,
    server,
    logs,
    /** Connects a client and consumes its hello. */
    async connect(): Promise<SocketClient> {
      const client = await SocketClient.connect(path);
      await client.next("hello");
      return client;
    },
    async [Symbol.asyncDispose]() {
      await server.close();
      await Deno.remove(dir, { recursive: true });
      logs[Symbol.dispose]();
    },
  };
}

async function pingPong(client: SocketClient): Promise<void> {
  await client.send({ type: "ping" });
  const pong = await client.next("pong");
  assert.equal(pong.pid, Deno.pid);
}

/** What a line that is no command is answered, naming what a line must be. */
const BAD_COMMAND = 'bad command: a JSON object with a string "type" per line';

Deno.test("each malformed command gets its error and the connection stays usable", async () => {
  await using t = await setup();
  await using client = await t.connect();
  const cases: [string, string, string][] = [
    ["not json hunter2", "bad_command", BAD_COMMAND],
    ['{"type":"ping"', "bad_command", BAD_COMMAND],
    ["[]", "bad_command", BAD_COMMAND],
    ["3", "bad_command", BAD_COMMAND],
    ["null", "bad_command", BAD_COMMAND],
    ['"x"', "bad_command", BAD_COMMAND],
    ['{"type":5}', "bad_command", BAD_COMMAND],
    ['{"text":"hunter2"}', "bad_command", BAD_COMMAND],
    ['{"type":"fly"}', "unknown_command", "unknown command fly"],
    ['{"type":"ask","text":5,"secret":"hunter2"}', "bad_text", "bad text"],
    ['{"type":"ask"}', "bad_text", "bad text"],
    ['{"type":"search","q":null}', "bad_query", "bad query"],
    ['{"type":"open","id":"7"}', "bad_id", "bad id"],
    ['{"type":"delete","id":1.5}', "bad_id", "bad id"],
    ['{"type":"export","id":1,"format":null}', "bad_format", "bad format"],
    ['{"type":"delete","id":9}', "command_failed", "delete failed"],
    ['{"type":"ask","text":"refuse"}', "no_model_loaded", "no model loaded"],
    ['{"type":"ask","text":"uncoded"}', "command_failed", "ask failed"],
  ];
  for (const [line, code, message] of cases) {
    await client.sendLine(line);
    const error = await client.next("error");
    assert.deepEqual(error, { type: "error", code, message }, `for ${line}`);
    await pingPong(client);
  }
  // The brain saw only the well-formed commands.
  assert.deepEqual(
    t.brain.commands.filter((c) => c.type !== "ping"),
    [
      { type: "delete", id: 9 },
      { type: "ask", text: "refuse" },
      { type: "ask", text: "uncoded" },
    ],
  );
  const log = t.logs.lines.join("");
  assert.equal(log.match(/ bad line /g)?.length, 15);
  for (const code of ["bad_command", "unknown_command", "bad_text"]) {
    assert.match(
      log,
      new RegExp(`bad line client=\\d+ bytes=\\d+ code=${code}\\n`),
    );
  }
  // A fault's message may quote anything: the log names its class and where
  // it was thrown; an AssistantError's message is written to be shown.
  assert.match(
    log,
    /command failed client=\d+ type=delete error="Error at [^"]*server_test\.ts:\d+:\d+\)?"/,
  );
  assert.doesNotMatch(log, /database is locked/);
  assert.match(
    log,
    /command failed client=\d+ type=ask error="AssistantError: the cupboard is bare"/,
  );
  assert.doesNotMatch(log, /hunter2/);
});

Deno.test("a command's error carries its ref beside the code, raised or refused", async () => {
  await using t = await setup();
  await using client = await t.connect();
  await client.sendLine('{"type":"open","id":"x","ref":"r1"}');
  assert.deepEqual(await client.next("error"), {
    type: "error",
    code: "bad_id",
    message: "bad id",
    ref: "r1",
  });
  await client.sendLine('{"type":"ask","text":"refuse","ref":2}');
  assert.deepEqual(await client.next("error"), {
    type: "error",
    code: "no_model_loaded",
    message: "no model loaded",
    ref: 2,
  });
  await client.sendLine('{"type":"delete","id":3,"ref":"r3"}');
  assert.deepEqual(await client.next("error"), {
    type: "error",
    code: "command_failed",
    message: "delete failed",
    ref: "r3",
  });
});

Deno.test("blank lines and a blank ask are ignored without an answer", async () => {
  await using t = await setup();
  await using client = await t.connect();
  await client.sendRaw('\n   \n\t\r\n\r\n{"type":"ask","text":" \\n "}\n');
  await pingPong(client);
  assert.deepEqual(t.brain.commands, [{ type: "ping" }]);
  assert.doesNotMatch(t.logs.lines.join(""), /bad line/);
});

Deno.test("invalid UTF-8 is a bad command, logged as utf8", async () => {
  await using t = await setup();
  await using client = await t.connect();
  await client.sendRaw(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d, 0x0a]));
  assert.deepEqual(await client.next("error"), {
    type: "error",
    code: "bad_command",
    message: BAD_COMMAND,
  });
  await pingPong(client);
  assert.match(
    t.logs.lines.join(""),
    /bad line client=\d+ bytes=4 code=bad_command reason=utf8/,
  );
});

Deno.test("framing: one-byte writes, several commands in one write, CRLF", async () => {
  await using t = await setup();
  await using client = await t.connect();
  for (const byte of encoder.encode('{"type":"ping"}\n')) {
    await client.sendRaw(new Uint8Array([byte]));
  }
  await client.next("pong");
  await client.sendRaw(
    '{"type":"ping"}\n{"type":"list"}\n{"type":"search","q":"a b"}\n',
  );
  await client.next("pong");
  await client.next("conversations");
  assert.deepEqual((await client.next("results")).items[0]?.title, "a b");
  await client.sendRaw('{"type":"ping"}\r\n{"type":"list"}\r\n');
  await client.next("pong");
  await client.next("conversations");
});

Deno.test("a line of exactly 1 MiB is processed; 1 MiB + 1 byte is too long and the next command works", async () => {
  await using t = await setup();
  await using client = await t.connect();
  const frame = '{"type":"ask","text":""}';
  const text = "a".repeat(MAX_LINE_BYTES - frame.length);
  const exact = `{"type":"ask","text":"${text}"}`;
  assert.equal(encoder.encode(exact).length, MAX_LINE_BYTES);
  await client.sendLine(exact);
  const user = await client.next("user");
  assert.equal(user.text.length, text.length);

  await client.sendLine(`{"type":"ask","text":"${text}b"}`);
  assert.deepEqual(await client.next("error"), {
    type: "error",
    code: "line_too_long",
    message: "line too long",
  });
  await pingPong(client);
  assert.equal(t.brain.asked.length, 1);
  assert.match(
    t.logs.lines.join(""),
    /bad line client=\d+ bytes=1048577 code=line_too_long/,
  );
});

Deno.test("an over-long line is answered before its newline and skipped up to it", async () => {
  await using t = await setup();
  await using client = await t.connect();
  await client.sendRaw('{"type":"ask","text":"' + "z".repeat(MAX_LINE_BYTES));
  assert.equal((await client.next("error")).message, "line too long");
  // The tail of that line, even one that looks like a command, is skipped.
  await client.sendRaw('zzz","x":{"type":"ping"}}\n{"type":"list"}\n');
  await client.next("conversations");
  assert.deepEqual(t.brain.commands, [{ type: "list" }]);
});

Deno.test("answers come back in command order when the first one is slow", async () => {
  await using t = await setup();
  await using slow = await t.connect();
  await using other = await t.connect();
  await slow.sendRaw(
    '{"type":"search","q":"slow"}\n{"type":"ping"}\n{"type":"list"}\n',
  );
  await t.brain.slowStarted.promise;
  // The slow search holds up only its own connection.
  await pingPong(other);
  t.brain.gate.resolve();
  assert.equal((await slow.next("results")).items[0]?.title, "slow");
  await slow.next("pong");
  await slow.next("conversations");
  assert.equal(t.brain.interrupts, 0, "no stop, no interrupt");
});

Deno.test("a stop behind its client's command still running interrupts it at once, then runs in its place", async () => {
  await using t = await setup();
  await using client = await t.connect();
  await client.sendRaw(
    '{"type":"search","q":"slow"}\n{"type":"stop"}\n{"type":"ping"}\n',
  );
  // The search waits for what only the interrupt releases.
  assert.equal((await client.next("results")).items[0]?.title, "slow");
  await client.next("pong");
  assert.equal(t.brain.interrupts, 1);
  assert.deepEqual(t.brain.commands.map((c) => c.type), [
    "search",
    "stop",
    "ping",
  ]);
});

Deno.test("a command learns that its client is gone: dropped while it runs", async () => {
  await using t = await setup({ stallMs: 100 });
  await using _other = await t.connect();
  const conn = await Deno.connect({ transport: "unix", path: t.path });
  try {
    await conn.write(encoder.encode('{"type":"search","q":"held"}\n'));
    await t.brain.heldStarted.promise;
    // The client reads nothing: a few large events and it is dropped.
    const big = "x".repeat(1024 * 1024);
    for (let i = 0; i < 8; i++) {
      t.server.broadcast({ type: "token", delta: big });
    }
    await t.logs.waitFor(/client dropped client=2\b/);
    await within(
      t.brain.heldGone.promise,
      "the command told its client is gone",
    );
  } finally {
    conn.close();
  }
});

Deno.test("two clients: broadcasts reach both, answers only the asker, a newcomer gets hello first", async () => {
  await using t = await setup();
  await using a = await t.connect();
  await using b = await t.connect();
  assert.equal(t.server.clientCount, 2);
  await pingPong(a);
  await a.send({ type: "ask", text: "hello there" });
  // b's next event is the broadcast: the pong before it went to a alone.
  assert.deepEqual(await b.next(), { type: "user", text: "hello there" });
  assert.deepEqual(await a.next(), { type: "user", text: "hello there" });
  await b.send({ type: "new" });
  assert.deepEqual(await a.next("conversation"), {
    type: "conversation",
    id: null,
    turns: [],
  });
  await b.next("conversation");

  await using c = await SocketClient.connect(t.path);
  const hello = await c.next("hello");
  assert.deepEqual(hello.turns, [{
    user: "hello there",
    reply: "",
    tools: [],
  }]);
  await b.send({ type: "ask", text: "again" });
  assert.equal((await c.next("user")).text, "again");
  assert.equal((await a.next("user")).text, "again");
  assert.equal((await b.next("user")).text, "again");
});

Deno.test("a client that never reads is dropped for stalling; another receives every event in order", async () => {
  await using t = await setup();
  const started = Date.now();
  await using stuck = await SocketClient.connect(t.path, { read: false });
  await using reader = await t.connect();
  assert.equal(t.server.clientCount, 2);
  const dropped = t.logs.waitFor(/client dropped client=\d+ reason=stall/);
  const count = 48;
  const filler = "x".repeat(32 * 1024);
  for (let i = 0; i < count; i++) {
    t.server.broadcast({ type: "token", delta: `${i}:${filler}` });
  }
  const got = await reader.until((e) =>
    e.type === "token" && e.delta.startsWith(`${count - 1}:`)
  );
  // All of it arrived while the stuck client was still connected.
  assert.equal(t.server.clientCount, 2);
  assert.deepEqual(
    got.map((e) => e.type === "token" ? e.delta.split(":")[0] : e.type),
    Array.from({ length: count }, (_, i) => String(i)),
  );

  await dropped;
  assert.equal(t.server.clientCount, 1);
  assert.ok(Date.now() - started < 15_000, "dropped in reasonable time");
  // Its socket is closed: what it holds is a prefix of the broadcasts, then the end.
  const rest = new Uint8Array(1024 * 1024);
  let bytes = 0;
  while (true) {
    const n = await stuck.conn.read(rest).catch(() => null);
    if (n === null) break;
    bytes += n;
  }
  assert.ok(bytes > 0 && bytes < count * filler.length);

  t.server.broadcast({ type: "state", state: "idle" });
  assert.deepEqual(await reader.next(), { type: "state", state: "idle" });
});

Deno.test("a client whose backlog passes maxBacklog is dropped at once", async () => {
  await using t = await setup({ maxBacklog: 256 * 1024, stallMs: 60_000 });
  await using stuck = await SocketClient.connect(t.path, { read: false });
  await using reader = await t.connect();
  const dropped = t.logs.waitFor(/client dropped client=\d+ reason=backlog/);
  const filler = "y".repeat(32 * 1024);
  // One at a time, so the reading client's queue empties between them.
  for (let i = 0; t.server.clientCount === 2; i++) {
    assert.ok(i < 100, "dropped within 100 broadcasts of 32 KiB");
    t.server.broadcast({ type: "token", delta: filler });
    await reader.next("token");
  }
  await dropped;
  await pingPong(reader);
  await stuck.close();
});

Deno.test("one event larger than maxBacklog still reaches a client that reads", async () => {
  await using t = await setup({ maxBacklog: 64 * 1024, stallMs: 60_000 });
  await using reader = await t.connect();
  const big = "z".repeat(256 * 1024);
  t.server.broadcast({ type: "token", delta: big });
  assert.equal((await reader.next("token")).delta, big);
  await pingPong(reader);
  assert.equal(t.server.clientCount, 1);
});

Deno.test("a reading client is not dropped for what follows one event larger than maxBacklog", async () => {
  await using t = await setup({ maxBacklog: 64 * 1024, stallMs: 60_000 });
  await using reader = await t.connect();
  const big = "z".repeat(1024 * 1024);
  // In one go, as an `open` of a long conversation and the tokens of a reply
  // in flight: the big event cannot have been written yet.
  t.server.broadcast({
    type: "conversation",
    id: 1,
    turns: [{ user: "q", reply: big, tools: [] }],
  });
  for (let i = 0; i < 32; i++) {
    t.server.broadcast({ type: "token", delta: `${i}:${"t".repeat(1000)}` });
  }
  const got = await reader.until((e) =>
    e.type === "token" && e.delta.startsWith("31:")
  );
  assert.equal(got[0]?.type, "conversation");
  assert.equal(got.filter((e) => e.type === "token").length, 32);
  await pingPong(reader);
  assert.equal(t.server.clientCount, 1);
  assert.ok(!t.logs.lines.some((line) => /client dropped/.test(line)));
});

Deno.test("a late client gets a hello larger than maxBacklog and the events right behind it", async () => {
  await using t = await setup({ maxBacklog: 64 * 1024, stallMs: 60_000 });
  t.brain.asked.push("q".repeat(512 * 1024));
  // A reply in flight keeps broadcasting while the hello is still unwritten.
  t.brain.afterHello = () => {
    for (let i = 0; i < 8; i++) {
      t.server.broadcast({ type: "token", delta: `${i}:${"t".repeat(1000)}` });
    }
  };
  await using late = await SocketClient.connect(t.path);
  const hello = await late.next("hello");
  assert.equal(hello.turns[0]?.user.length, 512 * 1024);
  const tokens = await late.until((e) =>
    e.type === "token" && e.delta.startsWith("7:")
  );
  assert.equal(tokens.length, 8);
  await pingPong(late);
  assert.equal(t.server.clientCount, 1);
});

Deno.test("a client that goes away is removed; a half-closed one gets its answers first", async () => {
  await using t = await setup();
  await using stay = await t.connect();
  const leaving = await t.connect();
  await leaving.close();
  await t.logs.waitFor(/client left client=2\b|client dropped client=2\b/);
  assert.equal(t.server.clientCount, 1);
  t.server.broadcast({ type: "state", state: "thinking" });
  assert.equal((await stay.next("state")).state, "thinking");

  await using half = await t.connect();
  await half.sendRaw('{"type":"ping"}\n{"type":"list"}\n{"type":"ping"}');
  await half.closeWrite();
  const rest = await half.closed();
  assert.deepEqual(rest.map((e) => e.type), ["pong", "conversations", "pong"]);
  await t.logs.waitFor(/client left client=3\b/);
  assert.equal(t.server.clientCount, 1);
  await pingPong(stay);
});

Deno.test("max_clients + 1: the last connection gets the error and is closed", async () => {
  await using t = await setup({ maxClients: 2 });
  await using a = await t.connect();
  await using b = await t.connect();
  await using c = await SocketClient.connect(t.path);
  assert.deepEqual(await c.next(), {
    type: "error",
    code: "too_many_clients",
    message: "too many clients (max 2)",
  });
  assert.deepEqual(await c.closed(), []);
  assert.equal(t.server.clientCount, 2);
  await pingPong(a);
  await pingPong(b);
  // A freed slot is usable again.
  await a.close();
  await t.logs.waitFor(/client left client=1\b/);
  await using d = await t.connect();
  await pingPong(d);
});

Deno.test("onClients hears the count of greeted clients: joins and leaves, never a refused one", async () => {
  const counts: number[] = [];
  let changed = Promise.withResolvers<void>();
  await using t = await setup({
    maxClients: 2,
    onClients: (count) => {
      counts.push(count);
      changed.resolve();
      changed = Promise.withResolvers<void>();
    },
  });
  await using a = await t.connect();
  await using b = await t.connect();
  assert.deepEqual(counts, [1, 2]);
  await using refused = await SocketClient.connect(t.path);
  await refused.closed();
  assert.deepEqual(counts, [1, 2]);
  const left = changed.promise;
  await a.close();
  await left;
  const gone = changed.promise;
  await b.close();
  await gone;
  assert.deepEqual(counts, [1, 2, 1, 0]);
});

Deno.test("the socket is mode 0600 and gone after close; close is idempotent", async () => {
  await using t = await setup();
  const info = await Deno.lstat(t.path);
  assert.ok(info.isSocket);
  assert.equal(info.mode! & 0o777, 0o600);
  const client = await t.connect();
  await t.server.close();
  await assert.rejects(Deno.lstat(t.path), Deno.errors.NotFound);
  await client.closed();
  await client.close();
  await t.server.close();
  assert.equal(t.server.clientCount, 0);
});

Deno.test("a stale socket file is replaced", async () => {
  const dir = await Deno.makeTempDir({ prefix: "da-server-" });
  const path = `${dir}/assistant.sock`;
  try {
    // A daemon that died without cleaning up: killed while listening.
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `Deno.listen({ transport: "unix", path: ${JSON.stringify(path)} });` +
        `console.log("up"); setInterval(() => {}, 1000);`,
      ],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const reader = child.stdout.getReader();
    await reader.read();
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel();
    assert.ok((await Deno.lstat(path)).isSocket);
    await assert.rejects(
      Deno.connect({ transport: "unix", path }),
      Deno.errors.ConnectionRefused,
    );

    using _logs = new LogCapture();
    await using server = await Server.listen({
      path,
      brain: new ScriptedBrain(),
      maxClients: 1,
    });
    await using client = await SocketClient.connect(path);
    await client.next("hello");
    await pingPong(client);
    assert.equal(server.clientCount, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a second server on a live socket refuses and leaves the first one working", async () => {
  await using t = await setup();
  await assert.rejects(
    Server.listen({ path: t.path, brain: new ScriptedBrain(), maxClients: 1 }),
    (error: unknown) =>
      error instanceof AssistantError &&
      error.message.includes(
        `another daemon is already listening on ${t.path}`,
      ),
  );
  assert.ok((await Deno.lstat(t.path)).isSocket);
  await using client = await t.connect();
  await pingPong(client);
});

Deno.test("a symlink at the socket path is removed and its target untouched", async () => {
  using _logs = new LogCapture();
  const dir = await Deno.makeTempDir({ prefix: "da-server-" });
  const path = `${dir}/assistant.sock`;
  const target = `${dir}/precious.txt`;
  try {
    await Deno.writeTextFile(target, "keep me");
    await Deno.symlink(target, path);
    await using server = await Server.listen({
      path,
      brain: new ScriptedBrain(),
      maxClients: 1,
    });
    assert.ok((await Deno.lstat(path)).isSocket);
    assert.equal(await Deno.readTextFile(target), "keep me");
    assert.ok((await Deno.lstat(target)).isFile);
    await using client = await SocketClient.connect(path);
    await client.next("hello");
    assert.equal(server.clientCount, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a regular file at the socket path is refused and left alone", async () => {
  using _logs = new LogCapture();
  const dir = await Deno.makeTempDir({ prefix: "da-server-" });
  const path = `${dir}/assistant.sock`;
  try {
    await Deno.writeTextFile(path, "not a socket");
    await assert.rejects(
      Server.listen({ path, brain: new ScriptedBrain(), maxClients: 1 }),
      (error: unknown) =>
        error instanceof AssistantError && error.message.includes(path) &&
        error.message.includes("not a socket"),
    );
    assert.equal(await Deno.readTextFile(path), "not a socket");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

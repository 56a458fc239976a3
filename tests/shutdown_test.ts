/**
 * The daemon's exit paths: SIGTERM and SIGINT mid-reply and mid-tool end the
 * reply for every client, close the database intact and remove the socket;
 * an unhandled rejection is logged and the daemon stays up.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { serve } from "../src/launch/daemon.ts";
import { type LogSink, setLogSink } from "../src/base/log.ts";
import { Daemon, daemonEnv, exists } from "./support/daemon_harness.ts";
import { FakeLlm, hold, reply } from "./support/fake_llm.ts";
import { SocketClient } from "./support/socket_client.ts";

const FIXTURE_TOOLS = new URL("./fixtures/tools/", import.meta.url).pathname;

function readHistory(path: string): { check: string[]; users: string[] } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const check = db.prepare("PRAGMA integrity_check").all()
      .map((row) => String(Object.values(row)[0]));
    const users = db.prepare("SELECT user FROM turns ORDER BY conv, seq").all()
      .map((row) => String(row.user));
    return { check, users };
  } finally {
    db.close();
  }
}

Deno.test("SIGTERM mid-reply: every client gets done {stopped:true}, the exit is logged, the socket goes, the history is intact", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using first = await daemon.connect();
  await using second = await daemon.connect();
  await first.next("hello");
  await second.next("hello");

  for (const question of ["First question", "Second question"]) {
    llm.enqueue(reply({ content: ["Answer to ", question] }));
    await first.send({ type: "ask", text: question });
    await first.until((e) => e.type === "done");
  }
  llm.enqueue(hold(["Half an ", "answer"]));
  await first.send({ type: "ask", text: "Third question, never finished" });
  await second.until((e) => e.type === "token" && e.delta === "answer");

  const status = await daemon.stop("SIGTERM");
  assert.equal(status.code, 0, daemon.log);
  for (const client of [first, second]) {
    const rest = await client.closed();
    assert.deepEqual(
      rest.find((e) => e.type === "done"),
      { type: "done", id: 1, stopped: true },
    );
  }
  const lines = daemon.log.trimEnd().split("\n");
  assert.match(lines.at(-1)!, / info exit code=0 reason=SIGTERM$/);
  assert.equal(await exists(daemon.paths.socketPath), false, "socket removed");
  const history = readHistory(daemon.paths.dbPath);
  assert.deepEqual(history.check, ["ok"]);
  assert.deepEqual(history.users, ["First question", "Second question"]);
  // The request for the unfinished reply was abandoned, not left running.
  assert.ok((await llm.chats[2]!.done) === "aborted");
});

Deno.test("SIGINT while a tool runs: the reply ends as stopped, the tool is ended, the exit is logged", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    toolsDirs: [FIXTURE_TOOLS],
  });
  const gate = await Deno.makeTempDir({ prefix: "da-gate-" });
  try {
    await using client = await daemon.connect();
    await client.next("hello");
    llm.enqueue(reply({
      toolCalls: [{ name: "gate", arguments: JSON.stringify({ dir: gate }) }],
    }));
    await client.send({ type: "ask", text: "Wait at the gate" });
    await client.until((e) => e.type === "tool" && e.done === false);

    const status = await daemon.stop("SIGINT");
    assert.equal(status.code, 0, daemon.log);
    const rest = await client.closed();
    assert.deepEqual(rest.find((e) => e.type === "done"), {
      type: "done",
      id: null,
      stopped: true,
    });
    assert.equal(rest.some((e) => e.type === "tool" && e.done), false);
    assert.match(daemon.log, / info exit code=0 reason=SIGINT\n$/);
    assert.equal(await exists(daemon.paths.socketPath), false);
    assert.equal(await exists(`${gate}/finished`), false, "tool ended");
    assert.deepEqual(readHistory(daemon.paths.dbPath).users, []);
  } finally {
    await Deno.remove(gate, { recursive: true });
  }
});

Deno.test("an unhandled rejection is logged and the daemon keeps answering; stopping logs the exit", async () => {
  await using llm = await FakeLlm.start();
  const home = await Deno.makeTempDir({ prefix: "da-fault-" });
  const env = daemonEnv(home);
  await Deno.mkdir(env.XDG_RUNTIME_DIR!, { mode: 0o700 });
  await Deno.mkdir(`${env.XDG_CONFIG_HOME}/desktop-assistant`, {
    recursive: true,
  });
  await Deno.writeTextFile(
    `${env.XDG_CONFIG_HOME}/desktop-assistant/config.toml`,
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = []\n`,
  );
  let logged = "";
  let changed = Promise.withResolvers<void>();
  const previous = setLogSink(
    {
      write(line) {
        logged += line;
        changed.resolve();
        changed = Promise.withResolvers<void>();
      },
    } satisfies LogSink,
  );
  const waitLog = async (pattern: RegExp) => {
    const deadline = AbortSignal.timeout(30_000);
    const expired = new Promise<never>((_, reject) =>
      deadline.addEventListener(
        "abort",
        () => reject(new Error(`No ${pattern} in:\n${logged}`)),
        { once: true },
      )
    );
    expired.catch(() => {});
    while (!pattern.test(logged)) {
      await Promise.race([changed.promise, expired]);
    }
  };
  const stop = Promise.withResolvers<string>();
  try {
    const running = serve({ env: (name) => env[name], stop: stop.promise });
    await waitLog(/ info listening socket=/);

    Promise.reject(new RangeError("a fault far from the socket"));
    await waitLog(
      / error unhandled rejection error="RangeError at [^"]*shutdown_test\.ts:\d+:\d+\)?"/,
    );
    assert.doesNotMatch(logged, /a fault far from the socket/);

    await using client = await SocketClient.connect(
      `${env.XDG_RUNTIME_DIR}/desktop-assistant.sock`,
    );
    await client.next("hello");
    await client.send({ type: "ping" });
    assert.equal((await client.next("pong")).pid, Deno.pid);

    stop.resolve("test");
    assert.equal(await running, 0);
    await client.closed();
    assert.match(logged, / info exit code=0 reason=test\n$/);
  } finally {
    stop.resolve("test");
    setLogSink(previous);
    await Deno.remove(home, { recursive: true });
  }
});

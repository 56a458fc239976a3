import assert from "node:assert/strict";
import { join } from "node:path";
import { noDaemonMessage } from "../../src/clients/client.ts";
import { parseAskArgs, runAsk } from "../../src/clients/ask.ts";
import {
  clientArgs,
  clientEnv,
  ClientProcess,
  runClient,
  startDaemon,
  tempHome,
  within,
} from "../support/client_harness.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, hold, httpError, reply } from "../support/fake_llm.ts";

Deno.test("ask prints exactly the answer, run with only the socket's grants", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Paris", " is the", " capital", "."] }));
  await using daemon = await startDaemon(llm.url);
  const socket = daemon.paths.socketPath;
  const result = await runClient(
    clientArgs(socket, ["ask", "What is the capital of France?"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.stderr, "");
  assert.equal(result.stdout, "Paris is the capital.\n");
  assert.equal(result.code, 0);
  const body = llm.chats[0]?.body as { messages: { content: string }[] };
  assert.match(
    body.messages.at(-1)!.content,
    /What is the capital of France\?$/,
  );
});

Deno.test("ask reads the question from stdin when no argument gives it", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Four", "."] }));
  await using daemon = await startDaemon(llm.url);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask"]),
    clientEnv(daemon.paths.runtimeDir),
    "What is two plus two?\n",
  );
  assert.equal(result.stdout, "Four.\n");
  assert.equal(result.code, 0);
  const body = llm.chats[0]?.body as { messages: { content: string }[] };
  assert.match(body.messages.at(-1)!.content, /\] What is two plus two\?$/);
});

Deno.test("ask --think sends the reasoning to stderr and only the answer to stdout", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ think: ["Let me", " count."], content: ["Three", "."] }));
  await using daemon = await startDaemon(llm.url);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "--think", "How many?"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.stdout, "Three.\n");
  assert.equal(result.stderr, "Let me count.\n");
  assert.equal(result.code, 0);
});

Deno.test("ask without --think prints no reasoning at all", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ think: ["secret musing"], content: ["Yes", "."] }));
  await using daemon = await startDaemon(llm.url);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "Well?"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.stdout, "Yes.\n");
  assert.equal(result.stderr, "");
});

Deno.test("ask --json prints every event of its turn as a JSON line", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Hi", " you"] }));
  await using daemon = await startDaemon(llm.url);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "--json", "Hello?"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.code, 0);
  const events = result.stdout.trimEnd().split("\n").map((line) =>
    JSON.parse(line)
  );
  assert.deepEqual(events[0], { type: "user", text: "Hello?" });
  assert.equal(events.at(-1).type, "done");
  assert.equal(events.at(-1).stopped, false);
  assert.equal(typeof events.at(-1).id, "number");
  const tokens = events.filter((e) => e.type === "token").map((e) => e.delta);
  assert.equal(tokens.join(""), "Hi you");
});

Deno.test("ask exits 1 with the daemon's message when the model fails", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(httpError(500, { message: "the GPU caught fire" }));
  await using daemon = await startDaemon(llm.url);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "Anything?"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.match(result.stderr, /the GPU caught fire/);
});

Deno.test("ask exits 2 with the start hint when no daemon answers", async () => {
  await using home = await tempHome();
  const runtime = join(home.path, "run");
  await Deno.mkdir(runtime);
  const socket = join(runtime, "desktop-assistant.sock");
  const result = await runClient(
    clientArgs(socket, ["ask", "Hello?"]),
    clientEnv(runtime),
  );
  assert.equal(result.code, 2);
  assert.equal(result.stdout, "");
  assert.equal(
    result.stderr,
    `${noDaemonMessage(socket)}\n`,
  );
  assert.match(
    result.stderr,
    /^no daemon answers on .*; start it with: deno task start \(or assistant\.sh start\)\n$/,
  );
});

Deno.test("ask and chat exit 1, not 2, when a daemon answers but refuses them", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "max_clients = 1\n",
  });
  await using first = await daemon.connect();
  await first.next("hello");
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "Anyone there?"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stdout, "");
  assert.equal(
    result.stderr,
    "The daemon refused the connection: too many clients (max 1)\n",
  );
  const chat = await runClient(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    clientEnv(daemon.paths.runtimeDir),
    "Anyone there?\n",
  );
  assert.equal(chat.code, 1, chat.stderr);
  assert.match(
    chat.stderr,
    /The daemon refused the connection: too many clients \(max 1\)\n/,
  );
});

Deno.test("ask takes only its own turn's events, not another client's reply", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["someone", " else's"]), reply({ content: ["Mine", "."] }));
  await using daemon = await startDaemon(llm.url);
  await using other = await daemon.connect();
  await other.next("hello");
  await other.send({ type: "ask", text: "Their question" });
  await other.until((e) => e.type === "token" && e.delta === " else's");
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "My question"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.stdout, "Mine.\n");
  assert.equal(result.code, 0);
  // The other client saw its reply stopped by the newer question.
  const events = await other.until((e) => e.type === "done" && !e.stopped);
  assert.ok(events.some((e) => e.type === "done" && e.stopped === true));
});

/**
 * A socket between one client and the daemon that holds the client's first
 * line until `before()` has run: another client's command can then be
 * ordered exactly between this client's `hello` and its own command.
 */
async function holdingProxy(
  daemonSocket: string,
  before: () => Promise<void>,
): Promise<{ dir: string; done: Promise<void> } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "da-proxy-" });
  const listener = Deno.listen({
    transport: "unix",
    path: join(dir, "desktop-assistant.sock"),
  });
  const done = (async () => {
    const conn = await listener.accept();
    const upstream = await Deno.connect({
      transport: "unix",
      path: daemonSocket,
    });
    const down = upstream.readable.pipeTo(conn.writable).catch(() => {});
    const writer = upstream.writable.getWriter();
    let held = true;
    for await (const chunk of conn.readable) {
      if (held && chunk.includes(0x0a)) {
        held = false;
        await before();
      }
      await writer.write(chunk);
    }
    await writer.close().catch(() => {});
    await down;
  })();
  return {
    dir,
    done,
    [Symbol.asyncDispose]: async () => {
      listener.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("ask follows its own question even when another client's is echoed first", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["someone", " else's"]), reply({ content: ["Mine", "."] }));
  await using daemon = await startDaemon(llm.url);
  await using other = await daemon.connect();
  await other.next("hello");
  await using proxy = await holdingProxy(daemon.paths.socketPath, async () => {
    await other.send({ type: "ask", text: "Their question" });
    await other.until((e) => e.type === "token" && e.delta === " else's");
  });
  let stdout = "";
  let stderr = "";
  const writer = (append: (text: string) => void) => ({
    write(bytes: Uint8Array) {
      append(new TextDecoder().decode(bytes));
      return Promise.resolve(bytes.length);
    },
  });
  const code = await runAsk(["My question"], {
    env: (name) => name === "XDG_RUNTIME_DIR" ? proxy.dir : undefined,
    stdout: writer((text) => stdout += text),
    stderr: writer((text) => stderr += text),
    dimStderr: false,
  });
  await proxy.done;
  assert.deepEqual({ code, stdout, stderr }, {
    code: 0,
    stdout: "Mine.\n",
    stderr: "",
  });
  // The other question was echoed first, then stopped by ours.
  const events = await other.until((e) => e.type === "done" && !e.stopped);
  assert.deepEqual(
    events.filter((e) => e.type === "user" || e.type === "done").map((e) =>
      e.type === "user" ? e.text : `done stopped=${e.stopped}`
    ),
    ["done stopped=true", "My question", "done stopped=false"],
  );
});

Deno.test("Ctrl-C during ask stops the reply on the daemon and exits 130", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["half", " an answer"]));
  await using daemon = await startDaemon(llm.url);
  await using watcher = await daemon.connect();
  await watcher.next("hello");
  await using ask = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["ask", "Tell me a long story"]),
    { env: clientEnv(daemon.paths.runtimeDir) },
  );
  await ask.waitFor("half an answer");
  const aborted = llm.nextAbort();
  ask.child.kill("SIGINT");
  assert.equal(await ask.exit(), 130);
  assert.equal(ask.stdout, "half an answer\n");
  assert.equal(ask.stderr, "");
  await within(aborted, "the model request to be aborted");
  const events = await watcher.until((e) => e.type === "done");
  assert.equal(events.at(-1)?.stopped, true);
});

Deno.test("ask exits 1 and says so when another client stops its reply", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["Start"]));
  await using daemon = await startDaemon(llm.url);
  await using other = await daemon.connect();
  await other.next("hello");
  await using ask = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["ask", "Go"]),
    { env: clientEnv(daemon.paths.runtimeDir) },
  );
  await ask.waitFor("Start");
  await other.send({ type: "stop" });
  assert.equal(await ask.exit(), 1);
  assert.equal(ask.stdout, "Start\n");
  assert.match(ask.stderr, /^The reply was stopped before it ended/);
});

Deno.test("parseAskArgs reads flags before the question and names an unknown one", () => {
  assert.deepEqual(parseAskArgs(["--think", "why", "not?"]), {
    think: true,
    json: false,
    render: false,
    words: ["why", "not?"],
  });
  assert.deepEqual(parseAskArgs(["--render", "--", "--json"]), {
    think: false,
    json: false,
    render: true,
    words: ["--json"],
  });
  assert.throws(() => parseAskArgs(["--loud", "x"]), /Unknown option --loud/);
});

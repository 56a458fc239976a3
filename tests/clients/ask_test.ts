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
import {
  type ChatContext,
  FakeLlm,
  hold,
  httpError,
  reply,
  type Script,
} from "../support/fake_llm.ts";
import { runs, weatherTools } from "../support/weather_tool.ts";
import { idleHello } from "../support/hello_fixture.ts";

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
  const ref = events[0].ref;
  assert.equal(typeof ref, "string");
  assert.deepEqual(events[0], { type: "user", text: "Hello?", ref });
  assert.equal(events.at(-1).type, "done");
  assert.equal(events.at(-1).ref, ref);
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

Deno.test("a reply cut short is printed as far as it goes, with a note on stderr, and exits 0", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 512 }],
  });
  llm.enqueue(reply({ content: Array(1000).fill(" more") }));
  await using daemon = await startDaemon(llm.url);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "Say it all"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(result.code, 0);
  const room = 512 - llm.chats[0]!.promptTokens!;
  assert.equal(result.stdout, " more".repeat(room) + "\n");
  assert.equal(
    result.stderr,
    "The reply was cut short: the model's context is full.\n",
  );
});

/** Model and server text that would drive a terminal: a title change, a screen clear, a C1 CSI. */
const HOSTILE = ["Hi\x1b]0;pwned\x07", " there\x1b[2J", "\r\n", "end\u009b"];

Deno.test("ask on a terminal writes model text without escape sequences, as chat does", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    reply({ think: ["mull\x1b[31m"], content: HOSTILE }),
    httpError(500, { message: "bad\x1b]52;c;cGFzdGU=\x07 clipboard" }),
  );
  await using daemon = await startDaemon(llm.url);
  const run = async (args: string[]) => {
    await using ask = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["ask", ...args]),
      { env: clientEnv(daemon.paths.runtimeDir), pty: true },
    );
    const code = await ask.exit();
    return { code, out: ask.stdout };
  };
  const answer = await run(["--think", "Hello?"]);
  assert.equal(answer.code, 0, answer.out);
  // stdout and stderr share the terminal; it turns each \n into \r\n.
  assert.equal(answer.out, "mull[31m\r\nHi]0;pwned there[2J\r\nend\r\n");
  const failed = await run(["Again?"]);
  assert.equal(failed.code, 1, failed.out);
  assert.match(failed.out, /bad\]52;c;cGFzdGU= clipboard/);
  assert.ok(
    !failed.out.includes("\x07") && !failed.out.includes("\x1b"),
    JSON.stringify(failed.out),
  );
});

Deno.test("ask into a pipe, and --json, stay byte-exact", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: HOSTILE }), reply({ content: HOSTILE }));
  await using daemon = await startDaemon(llm.url);
  const piped = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "Hello?"]),
    clientEnv(daemon.paths.runtimeDir),
  );
  assert.equal(piped.stdout, HOSTILE.join("") + "\n");
  assert.equal(piped.code, 0);
  await using json = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["ask", "--json", "Hello?"]),
    { env: clientEnv(daemon.paths.runtimeDir), pty: true },
  );
  assert.equal(await json.exit(), 0);
  const tokens = json.stdout.split("\r\n").filter((line) => line !== "")
    .map((line) => JSON.parse(line)).filter((e) => e.type === "token");
  assert.equal(tokens.map((e) => e.delta).join(""), HOSTILE.join(""));
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

const ASK_USAGE =
  'usage: main.ts ask [--think] [--json] [--yes] [--render] [--file PATH]... ["question"]';

Deno.test("ask with no question, as argument or on stdin, says how to give one and exits 64", async () => {
  const written: string[] = [];
  const code = await runAsk([], {
    stdin: new Blob([" \n"]).stream(),
    stderr: {
      write: (bytes) => {
        written.push(new TextDecoder().decode(bytes));
        return Promise.resolve(bytes.length);
      },
    },
    interrupt: new AbortController().signal,
  });
  assert.equal(code, 64);
  assert.equal(
    written.join(""),
    `Give the question as an argument or on stdin: ${ASK_USAGE}\n`,
  );
});

Deno.test("parseAskArgs reads flags before the question and names an unknown one", () => {
  assert.deepEqual(parseAskArgs(["--think", "why", "not?"]), {
    think: true,
    json: false,
    yes: false,
    render: false,
    files: [],
    words: ["why", "not?"],
  });
  assert.deepEqual(parseAskArgs(["--yes", "--", "--json"]), {
    think: false,
    json: false,
    yes: true,
    render: false,
    files: [],
    words: ["--json"],
  });
  assert.deepEqual(parseAskArgs(["--render", "--", "--json"]), {
    think: false,
    json: false,
    yes: false,
    render: true,
    files: [],
    words: ["--json"],
  });
  assert.throws(() => parseAskArgs(["--loud", "x"]), {
    name: "UsageError",
    message: `Unknown option --loud: ${ASK_USAGE}`,
  });
  assert.throws(() => parseAskArgs(["why", "-x"]), {
    message: `Unknown option -x: ${ASK_USAGE}`,
  });
  assert.throws(() => parseAskArgs(["--json=no"]), {
    message: `--json takes no value: ${ASK_USAGE}`,
  });
  assert.deepEqual(
    parseAskArgs(["--file", "a.txt", "--file=b c.png", "what?"]).files,
    ["a.txt", "b c.png"],
  );
  assert.throws(() => parseAskArgs(["--file"]), {
    message: `--file needs a path: ${ASK_USAGE}`,
  });
  // Flags anywhere before `--`; a lone `-` is a word.
  assert.deepEqual(parseAskArgs(["why", "--json", "-"]), {
    think: false,
    json: true,
    yes: false,
    render: false,
    files: [],
    words: ["why", "-"],
  });
});

const weatherCall = (place: string) =>
  reply({
    toolCalls: [{ name: "weather", arguments: JSON.stringify({ place }) }],
  });

/** A reply per request, numbered in arrival order: `[n] ` first, so any printed part names its turn. While `hold` is on, a reply stops after its second token and waits until it is abandoned. */
function numbered(tokenDelayMs: number): { script: Script; hold: boolean } {
  let count = 0;
  const control = {
    hold: false,
    script: {
      steps(context: ChatContext) {
        const tokens = [`[${++count}] `, "It is ", "ten ", "past ", "four."];
        const script = control.hold
          ? hold(tokens.slice(0, 2))
          : reply({ content: tokens, tokenDelayMs });
        if (!("steps" in script)) throw new TypeError("a stream script");
        return script.steps(context);
      },
    },
  };
  return control;
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Checks two same-question asks: each printed only its own turn, a finished one all of it, a stopped one a part and a note. */
function assertOwnTurns(
  outcomes: Outcome[],
  turns: Map<string, { reply: string; stopped: boolean }>,
): void {
  const claimed = new Set<string>();
  for (const { code, stdout, stderr } of outcomes) {
    const printed = stdout.replace(/\n$/, "");
    const tag = /^\[\d+\] /.exec(printed)?.[0];
    const own = [...turns.values()].find((turn) =>
      tag !== undefined && turn.reply.startsWith(tag)
    );
    if (code === 0) {
      assert.ok(own && !own.stopped, `a finished turn printed: ${stdout}`);
      assert.equal(printed, own.reply);
      assert.equal(stderr, "");
    } else {
      assert.equal(code, 1, stderr);
      assert.match(stderr, /^The reply was stopped before it ended/);
      if (printed !== "") {
        assert.ok(own?.stopped, `a stopped turn printed: ${stdout}`);
        assert.ok(own.reply.startsWith(printed));
      }
    }
    if (tag !== undefined) {
      assert.ok(!claimed.has(tag), `both printed ${tag}`);
      claimed.add(tag);
    }
  }
  assert.ok(outcomes.some((o) => o.code === 0), "the last turn finishes");
}

Deno.test("two asks of the same question at once each follow their own turn, whatever the timing", async () => {
  const replies = numbered(15);
  await using llm = await FakeLlm.start({ defaultScript: replies.script });
  await using daemon = await startDaemon(llm.url);
  await using watcher = await daemon.connect();
  await watcher.next("hello");
  const socket = daemon.paths.socketPath;
  const env = clientEnv(daemon.paths.runtimeDir);
  const question = "What time is it?";

  // Each turn as every client saw it, by its ref.
  const turns = new Map<string, { reply: string; stopped: boolean }>();
  const follow = async (count: number) => {
    for (let done = 0; done < count;) {
      const user = (await watcher.until((e) => e.type === "user")).at(-1);
      const events = await watcher.until((e) => e.type === "done");
      const end = events.at(-1)!;
      assert.equal(user?.text, question);
      assert.equal(end.ref, user?.ref);
      turns.set(String(user?.ref), {
        reply: events.filter((e) => e.type === "token")
          .map((e) => e.type === "token" ? e.delta : "").join(""),
        stopped: end.type === "done" && end.stopped,
      });
      done++;
    }
  };
  const run = async (
    start: (spawn: () => ClientProcess) => Promise<ClientProcess[]>,
  ): Promise<Outcome[]> => {
    const spawned: ClientProcess[] = [];
    const spawn = () => {
      const args = clientArgs(socket, ["ask", question]);
      const child = ClientProcess.spawn(args, { env });
      spawned.push(child);
      return child;
    };
    try {
      const children = await start(spawn);
      const [codes] = await Promise.all([
        Promise.all(children.map((child) => child.exit())),
        follow(2),
      ]);
      return children.map((child, i) => ({
        code: codes[i]!,
        stdout: child.stdout,
        stderr: child.stderr,
      }));
    } finally {
      for (const child of spawned) await child[Symbol.asyncDispose]();
    }
  };

  // Both at once: the daemon decides the order.
  assertOwnTurns(
    await run((spawn) => Promise.resolve([spawn(), spawn()])),
    turns,
  );
  // The second while the first streams: the first is stopped.
  const stopped = await run(async (spawn) => {
    replies.hold = true;
    const first = spawn();
    await first.waitFor("It is");
    replies.hold = false;
    return [first, spawn()];
  });
  assertOwnTurns(stopped, turns);
  assert.deepEqual(stopped.map((o) => o.code), [1, 0]);
  // One after the other: both finish, each with its own reply.
  const apart = await run(async (spawn) => {
    const first = spawn();
    await first.exit();
    return [first, spawn()];
  });
  assertOwnTurns(apart, turns);
  assert.deepEqual(apart.map((o) => o.code), [0, 0]);
  assert.notEqual(apart[0]!.stdout, apart[1]!.stdout);
});

/** Runs `ask` in this process against the socket in `runtimeDir`; resolves to its outcome. */
async function askHere(runtimeDir: string, question: string): Promise<Outcome> {
  let stdout = "";
  let stderr = "";
  const writer = (append: (text: string) => void) => ({
    write(bytes: Uint8Array) {
      append(new TextDecoder().decode(bytes));
      return Promise.resolve(bytes.length);
    },
  });
  const code = await runAsk([question], {
    env: (name) => name === "XDG_RUNTIME_DIR" ? runtimeDir : undefined,
    stdout: writer((text) => stdout += text),
    stderr: writer((text) => stderr += text),
    dimStderr: false,
  });
  return { code, stdout, stderr };
}

Deno.test("an ask that sees the other's identical question echoed first still follows only its own turn", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["[1] ", "Their half"]), reply({ content: ["[2] Mine."] }));
  await using daemon = await startDaemon(llm.url);
  await using watcher = await daemon.connect();
  await watcher.next("hello");
  const question = "What time is it?";
  let first: Promise<Outcome> | null = null;
  // The second ask is connected and greeted, then its line waits here until
  // the first ask's identical question has been echoed to it.
  await using proxy = await holdingProxy(daemon.paths.socketPath, async () => {
    first = askHere(daemon.paths.runtimeDir, question);
    await watcher.until((e) => e.type === "token" && e.delta === "Their half");
  });
  const second = await askHere(proxy.dir, question);
  await proxy.done;
  assert.deepEqual(second, { code: 0, stdout: "[2] Mine.\n", stderr: "" });
  const stopped = await first!;
  assert.equal(stopped.code, 1);
  assert.equal(stopped.stdout, "[1] Their half\n");
  assert.match(stopped.stderr, /^The reply was stopped before it ended/);
});

Deno.test("ask whose reader went away (ask … | head -1) exits quietly", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Line one\n", "line two\n"] }));
  await using daemon = await startDaemon(llm.url);
  const child = new Deno.Command(Deno.execPath(), {
    args: clientArgs(daemon.paths.socketPath, ["ask", "Two lines?"]),
    env: clientEnv(daemon.paths.runtimeDir),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  await child.stdout.cancel();
  const stderr = await new Response(child.stderr).text();
  assert.equal(stderr, "");
  assert.equal((await child.status).code, 141);
});

Deno.test("ask with llama-server down still asks, and exits 1 with the error", async () => {
  await using llm = await FakeLlm.start();
  await llm.stop();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "backend_poll = 0\n",
  });
  const socket = daemon.paths.socketPath;
  const env = clientEnv(daemon.paths.runtimeDir);
  const down = await runClient(clientArgs(socket, ["ask", "Anyone?"]), env);
  assert.equal(down.code, 1);
  assert.equal(down.stdout, "");
  assert.equal(down.stderr, `llama-server unreachable at ${llm.url}\n`);
  // Back while the daemon still says down (polling is off): the ask is
  // tried all the same, and answered.
  await llm.restart();
  llm.enqueue(reply({ content: ["Back", "."] }));
  const back = await runClient(clientArgs(socket, ["ask", "Now?"]), env);
  assert.equal(back.stderr, "");
  assert.equal(back.stdout, "Back.\n");
  assert.equal(back.code, 0);
});

Deno.test("ask declines a call that needs approval, and says how to allow it; --yes allows it", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  llm.enqueue(
    weatherCall("Paris"),
    reply({ content: ["I may not look."] }),
    weatherCall("Lima"),
    reply({ content: ["Sunny."] }),
  );
  await using daemon = await startDaemon(llm.url, [tools.dir]);
  const env = clientEnv(daemon.paths.runtimeDir);
  const declined = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "Weather in Paris?"]),
    env,
  );
  assert.deepEqual(declined, {
    code: 0,
    stdout: "I may not look.\n",
    stderr:
      "[declined weather: run ask with --yes to allow tool calls that need approval]\n",
  });
  assert.deepEqual(await runs(tools.dir), []);
  const allowed = await runClient(
    clientArgs(daemon.paths.socketPath, ["ask", "--yes", "Weather in Lima?"]),
    env,
  );
  assert.deepEqual(allowed, { code: 0, stdout: "Sunny.\n", stderr: "" });
  assert.deepEqual(await runs(tools.dir), ["Lima"]);
});

Deno.test("ask --yes allows the calls of its own turn only, not a call another client's turn waits on", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  llm.enqueue(
    weatherCall("Theirs"),
    weatherCall("Mine"),
    reply({ content: ["Mine is sunny."] }),
  );
  await using daemon = await startDaemon(llm.url, [tools.dir]);
  await using other = await daemon.connect();
  await other.next("hello");
  let theirs = "";
  // The other turn's call starts to wait between ask's hello and its own
  // question: ask sees that `confirm` as an event, before its turn.
  await using proxy = await holdingProxy(daemon.paths.socketPath, async () => {
    await other.send({ type: "ask", text: "Their question" });
    const events = await other.until((e) => e.type === "confirm");
    theirs = events.at(-1)!.call as string;
  });
  let stdout = "";
  const code = await runAsk(["--yes", "My question"], {
    env: (name) => name === "XDG_RUNTIME_DIR" ? proxy.dir : undefined,
    stdout: {
      write(bytes: Uint8Array) {
        stdout += new TextDecoder().decode(bytes);
        return Promise.resolve(bytes.length);
      },
    },
    stderr: { write: (bytes: Uint8Array) => Promise.resolve(bytes.length) },
    dimStderr: false,
  });
  await proxy.done;
  assert.deepEqual({ code, stdout }, { code: 0, stdout: "Mine is sunny.\n" });
  const events = await other.until((e) =>
    e.type === "done" && e.stopped === false
  );
  const decisions = events.filter((e) => e.type === "approved");
  // Theirs ended unanswered when ask's question stopped that turn; ask
  // allowed only the call of its own.
  assert.equal(decisions.length, 2);
  assert.deepEqual(decisions[0], {
    type: "approved",
    call: theirs,
    allow: false,
  });
  assert.equal(decisions[1]!.allow, true);
  assert.notEqual(decisions[1]!.call, theirs);
  assert.deepEqual(await runs(tools.dir), ["Mine"]);
});

Deno.test("ask says the daemon shut down when a shutdown stops its reply, and exits 2", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["Start"]));
  await using daemon = await startDaemon(llm.url);
  await using ask = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["ask", "Go"]),
    { env: clientEnv(daemon.paths.runtimeDir) },
  );
  await ask.waitFor("Start");
  await daemon.stop();
  assert.equal(await ask.exit(), 2);
  assert.equal(ask.stdout, "Start\n");
  assert.equal(
    ask.stderr,
    "The reply was stopped before it ended: the daemon shut down.\n",
  );
});

/** A daemon on a temporary socket that answers one `ask` with `events` (each given the ask's ref). */
async function scriptedDaemon(
  events: Record<string, unknown>[],
  run: (env: (name: string) => string | undefined) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "da-ask-" });
  const listener = Deno.listen({
    transport: "unix",
    path: join(dir, "desktop-assistant.sock"),
  });
  const serving = (async () => {
    const conn = await listener.accept();
    const write = (value: unknown) =>
      conn.write(new TextEncoder().encode(JSON.stringify(value) + "\n"));
    await write(idleHello());
    // Answers the first line, then reads until the client leaves.
    let text = "";
    let answered = false;
    for await (
      const chunk of conn.readable.pipeThrough(new TextDecoderStream())
    ) {
      text += chunk;
      const newline = text.indexOf("\n");
      if (answered || newline === -1) continue;
      answered = true;
      const { ref } = JSON.parse(text.slice(0, newline));
      for (const event of events) await write({ ...event, ref });
    }
  })();
  try {
    await run((name) => name === "XDG_RUNTIME_DIR" ? dir : undefined);
  } finally {
    listener.close();
    await serving.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("ask --json passes done.timings through as the daemon sent them", async () => {
  const timings = {
    prompt_n: 12,
    cache_n: 300,
    predicted_n: 2,
    prompt_ms: 40.5,
    predicted_ms: 80.25,
  };
  await scriptedDaemon([
    { type: "user", text: "Quick?" },
    { type: "token", delta: "Yes." },
    { type: "done", id: 7, stopped: false, timings },
  ], async (env) => {
    let out = "";
    const stdout = {
      write: (bytes: Uint8Array) => {
        out += new TextDecoder().decode(bytes);
        return Promise.resolve(bytes.length);
      },
    };
    const code = await runAsk(["--json", "Quick?"], {
      env,
      stdout,
      stderr: stdout,
      interrupt: new AbortController().signal,
    });
    assert.equal(code, 0, out);
    const done = out.trimEnd().split("\n").map((line) => JSON.parse(line))
      .at(-1);
    assert.equal(done.type, "done");
    assert.deepEqual(done.timings, timings);
  });
});

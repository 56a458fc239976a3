import assert from "node:assert/strict";
import { join } from "node:path";
import { parseChatArgs } from "../../src/clients/chat.ts";
import { argvOf, descendants } from "../support/process_tree.ts";
import { clientFlags, noDaemonMessage } from "../../src/clients/client.ts";
import {
  clientArgs,
  clientEnv,
  ClientProcess,
  hasScript,
  MAIN,
  PTY_SKIP,
  runClient,
  startDaemon,
  stripAnsi,
  tempHome,
  TIMINGS_LINE,
  untimed,
  within,
} from "../support/client_harness.ts";
import { Daemon } from "../support/daemon_harness.ts";
import {
  askedQuestion,
  FakeLlm,
  gated,
  hold,
  reply,
} from "../support/fake_llm.ts";
import { runs, weatherTools } from "../support/weather_tool.ts";
import { Screen } from "../support/screen.ts";
import { terminalClientFlags } from "../../src/launch/client_flags.ts";

type Chats = { messages: { role: string; content: string }[] };

function lastQuestion(llm: FakeLlm, index: number): string {
  return askedQuestion(llm.chats[index]?.body);
}

Deno.test("piped chat: a question streams its answer, /search and /open show results and turns, /new clears", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    reply({ think: ["Easy."], content: ["Paris", " is the", " capital."] }),
    reply({ content: ["Two", "."] }),
  );
  await using daemon = await startDaemon(llm.url);
  const input = [
    "What is the capital of France?",
    "/search capit",
    "/open 1",
    "/new",
    "Second question",
    "/list",
    "/open 99",
  ].join("\n") + "\n";
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    clientEnv(daemon.paths.runtimeDir),
    input,
  );
  assert.equal(result.stderr, "");
  assert.equal(result.code, 0);
  // A dim line of timings after each of the two replies.
  assert.equal(result.stdout.match(TIMINGS_LINE)?.length, 2);
  const dates = untimed(result.stdout).replace(
    /\d{4}-\d\d-\d\d \d\d:\d\d/g,
    "<date>",
  );
  assert.equal(
    dates,
    [
      "desktop-assistant · backend up · tiny · /help for commands",
      "> What is the capital of France?",
      "(thinking) Easy.",
      "Paris is the capital.",
      "",
      "> /search capit",
      "    #1  What is the capital of France?",
      "        What is the **capital** of France?",
      "> /open 1",
      "── conversation #1 · 1 turn ──",
      "> What is the capital of France?",
      "Paris is the capital.",
      "",
      "> /new",
      "── new conversation ──",
      "> Second question",
      "Two.",
      "",
      "> /list",
      // The conversation shown is marked.
      "*   #2  <date>  Second question",
      "    #1  <date>  What is the capital of France?",
      "> /open 99",
      "error: no such conversation",
      "",
    ].join("\n"),
  );
  // After /new the model saw no earlier turn.
  const second = llm.chats[1]?.body as Chats;
  assert.deepEqual(second.messages.map((m) => m.role), ["system", "user"]);
});

Deno.test("piped chat --no-think shows no reasoning", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ think: ["hidden musing"], content: ["Shown."] }));
  await using daemon = await startDaemon(llm.url);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["chat", "--no-think"]),
    clientEnv(daemon.paths.runtimeDir),
    "Think quietly\n",
  );
  assert.equal(result.code, 0);
  assert.doesNotMatch(untimed(result.stdout), /hidden musing|thinking/);
  assert.match(untimed(result.stdout), /> Think quietly\nShown\.\n/);
});

Deno.test({
  name:
    `chat in a terminal: streams, Ctrl-C stops a reply and the prompt comes back, Ctrl-D leaves${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(
      reply({ think: ["Musing."], content: ["Hello", " there."] }),
      hold(["Once", " upon"]),
    );
    await using daemon = await startDaemon(llm.url);
    await using watcher = await daemon.connect();
    await watcher.next("hello");
    // Colours on: NO_COLOR unset, stdout a terminal.
    const env = clientEnv(daemon.paths.runtimeDir);
    delete env.NO_COLOR;
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env, pty: true },
    );
    let at = await chat.waitFor(/> \r/);
    await chat.type("Hi\r");
    at = await chat.waitFor("Hello there.", at);
    // Reasoning is dimmed.
    assert.ok(chat.stdout.includes("\x1b[2mMusing.\x1b[0m"), chat.stdout);
    at = await chat.waitFor(/> \r/, at);
    await chat.type("Tell me a story\r");
    at = await chat.waitFor("Once upon", at);
    const aborted = llm.nextAbort();
    await chat.type("\x03");
    await within(aborted, "the model request to be aborted");
    // The watcher saw the first turn end, then this one stopped.
    const turns = await watcher.until((e) => e.type === "done" && e.stopped);
    assert.deepEqual(
      turns.filter((e) => e.type === "done").map((e) => e.stopped),
      [false, true],
    );
    at = await chat.waitFor("[stopped]", at);
    await chat.waitFor(/> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
  },
});

Deno.test({
  name:
    `chat in a terminal: line editing and history reach the daemon as edited${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    await using daemon = await startDaemon(llm.url);
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env: clientEnv(daemon.paths.runtimeDir), pty: true },
    );
    let at = await chat.waitFor(/> \r/);
    // "helo wrld": fix both words with arrows, Home, End and backspace.
    await chat.type(
      "helo wrld\x1b[D\x1b[D\x1b[Do\x01\x1b[C\x1b[C\x1b[Cl\x05!\x7f?\r",
    );
    at = await chat.waitFor("Hello there.", at);
    at = await chat.waitFor(/> \r/, at);
    assert.equal(lastQuestion(llm, 0), "hello world?");
    // Up recalls it; Ctrl-U clears what was typed.
    await chat.type("junk\x15\x1b[A\r");
    at = await chat.waitFor("Hello there.", at);
    await chat.waitFor(/> \r/, at);
    assert.equal(lastQuestion(llm, 1), "hello world?");
    await chat.type("\x03");
    assert.equal(await chat.exit(), 130);
  },
});

Deno.test("tool use shows as a status line between the question and the answer", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    reply({ toolCalls: [{ name: "date", arguments: "{}" }] }),
    reply({ content: ["It is", " today."] }),
  );
  await using home = await tempHome();
  const tools = join(home.path, "tools");
  await Deno.mkdir(tools);
  await Deno.writeTextFile(
    join(tools, "date.toml"),
    'description = "The date"\ncommand = ["date", "+%F"]\n',
  );
  await using daemon = await startDaemon(llm.url, [tools]);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    clientEnv(daemon.paths.runtimeDir),
    "What day is it?\n",
  );
  assert.equal(result.code, 0);
  assert.match(
    untimed(result.stdout),
    /\n> What day is it\?\n\[tool\] date … done\nIt is today\.\n\n$/,
  );
});

Deno.test("SIGINT during a piped chat's reply sends stop; the chat carries on", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(hold(["Partial"]), reply({ content: ["Next."] }));
  await using daemon = await startDaemon(llm.url);
  await using chat = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    { env: clientEnv(daemon.paths.runtimeDir) },
  );
  await chat.type("Go on\n");
  let at = await chat.waitFor("Partial");
  chat.child.kill("SIGINT");
  at = await chat.waitFor("[stopped]", at);
  await chat.type("Another\n");
  await chat.waitFor("Next.", at);
  await chat.endInput();
  assert.equal(await chat.exit(), 0);
  assert.match(
    untimed(chat.stdout),
    /> Go on\nPartial\n\[stopped\]\n\n> Another\nNext\.\n/,
  );
});

Deno.test("a chat started mid-reply shows the partial reply, then the rest", async () => {
  await using llm = await FakeLlm.start();
  const gate = Promise.withResolvers<void>();
  llm.enqueue(gated("first half", gate.promise, ", second half"));
  await using daemon = await startDaemon(llm.url);
  await using asker = await daemon.connect();
  await asker.next("hello");
  await asker.send({ type: "ask", text: "Split answer?" });
  await asker.until((e) => e.type === "token");
  try {
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env: clientEnv(daemon.paths.runtimeDir) },
    );
    const at = await chat.waitFor("first half");
    gate.resolve();
    await chat.waitFor(", second half", at);
    await chat.endInput();
    assert.equal(await chat.exit(), 0);
    assert.equal(
      untimed(chat.stdout),
      "desktop-assistant · backend up · tiny · /help for commands\n" +
        "> Split answer?\nfirst half, second half\n\n",
    );
  } finally {
    gate.resolve();
  }
});

Deno.test("a chat shows another client's question and answer as they happen", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["From", " elsewhere."] }));
  await using daemon = await startDaemon(llm.url);
  await using chat = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    { env: clientEnv(daemon.paths.runtimeDir) },
  );
  const at = await chat.waitFor("/help for commands");
  await using other = await daemon.connect();
  await other.next("hello");
  await other.send({ type: "ask", text: "Asked in another terminal" });
  await chat.waitFor("From elsewhere.", at);
  await chat.endInput();
  assert.equal(await chat.exit(), 0);
  assert.match(
    untimed(chat.stdout),
    /\n> Asked in another terminal\nFrom elsewhere\.\n\n$/,
  );
});

Deno.test("chat's header says llama-server is down, and a line says when it is back", async () => {
  await using llm = await FakeLlm.start();
  await llm.stop();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "backend_poll = 0.2\n",
  });
  await using chat = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    { env: clientEnv(daemon.paths.runtimeDir) },
  );
  const at = await chat.waitFor("/help for commands");
  await llm.restart();
  await chat.waitFor("backend up · tiny\n", at);
  await chat.endInput();
  assert.equal(await chat.exit(), 0);
  assert.equal(
    untimed(chat.stdout),
    `desktop-assistant · backend down: no connection to ${llm.url} (connection refused) · /help for commands\n` +
      "backend up · tiny\n",
  );
});

Deno.test("chat exits 2 with the start hint when no daemon answers", async () => {
  await using home = await tempHome();
  const runtime = join(home.path, "run");
  await Deno.mkdir(runtime);
  const socket = join(runtime, "desktop-assistant.sock");
  const result = await runClient(
    clientArgs(socket, ["chat"]),
    clientEnv(runtime),
  );
  assert.equal(result.code, 2);
  assert.equal(result.stdout, "");
  assert.equal(result.stderr, `${noDaemonMessage(socket)}\n`);
});

Deno.test("chat says so and exits 2 when the daemon goes away", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await startDaemon(llm.url);
  await using chat = ClientProcess.spawn(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    { env: clientEnv(daemon.paths.runtimeDir) },
  );
  await chat.waitFor("/help for commands");
  await daemon.stop();
  assert.equal(await chat.exit(), 2);
  assert.match(
    chat.stderr,
    /^The daemon went away; start it with: deno task start \(or assistant\.sh start\)\n$/,
  );
});

const DENO_JSON = new URL("../../deno.json", import.meta.url).pathname;

Deno.test({
  name:
    `deno task chat runs the client alone with exactly its derived grants; Ctrl-C stops a reply, Ctrl-D exits 0${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: ["Launched."] }), hold(["Once upon "]));
    await using daemon = await startDaemon(llm.url);
    const env = clientEnv(daemon.paths.runtimeDir);
    await using chat = ClientProcess.spawn(
      ["task", "--quiet", "--config", DENO_JSON, "chat"],
      { env, pty: true },
    );
    let at = await chat.waitFor(/> \r/);
    const task = descendants(chat.child.pid).filter((pid) =>
      argvOf(pid)[1] === "task"
    );
    assert.equal(task.length, 1, "one deno task");
    const [client, ...more] = descendants(task[0]!);
    assert.deepEqual(more, [], "nothing but the client below deno task");
    const argv = argvOf(client!);
    assert.deepEqual(argv.slice(1), [
      "run",
      `--lock=${new URL("../../deno.lock", import.meta.url).pathname}`,
      "--frozen",
      "--quiet",
      "--no-prompt",
      ...terminalClientFlags(
        "chat",
        daemon.paths.socketPath,
        (name) => env[name],
      ),
      "main.ts",
      "chat",
    ]);

    await chat.type("Launch?\r");
    at = await chat.waitFor("Launched.", at);
    at = await chat.waitFor(/> \r/, at);
    await chat.type("Tell me a story\r");
    at = await chat.waitFor("Once upon", at);
    const aborted = llm.nextAbort();
    await chat.type("\x03");
    await within(aborted, "the model request to be aborted");
    at = await chat.waitFor("[stopped]", at);
    await chat.waitFor(/> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
  },
});

Deno.test("deno task ask prints one answer for scripts, and exits 2 when no daemon answers", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Forty", "-two."] }));
  await using daemon = await startDaemon(llm.url);
  const env = clientEnv(daemon.paths.runtimeDir);
  const answered = await runClient(
    ["task", "--quiet", "--config", DENO_JSON, "ask", "The answer?"],
    env,
  );
  assert.equal(answered.stdout, "Forty-two.\n");
  assert.equal(answered.stderr, "");
  assert.equal(answered.code, 0);
  await daemon.stop();
  const down = await runClient(
    ["task", "--quiet", "--config", DENO_JSON, "ask", "Anyone?"],
    env,
  );
  assert.equal(down.code, 2);
  assert.equal(
    down.stderr,
    `${noDaemonMessage(daemon.paths.socketPath)}\n`,
  );
});

Deno.test("parseChatArgs takes --no-think, --raw and --export-dir and names anything else", () => {
  const none = { think: true, raw: false, exportDir: null };
  assert.deepEqual(parseChatArgs([]), none);
  assert.deepEqual(parseChatArgs(["--no-think"]), { ...none, think: false });
  assert.deepEqual(parseChatArgs(["--raw"]), { ...none, raw: true });
  assert.deepEqual(parseChatArgs(["--export-dir", "out", "--no-think"]), {
    ...none,
    think: false,
    exportDir: "out",
  });
  assert.deepEqual(parseChatArgs(["--export-dir=/tmp/x"]), {
    ...none,
    exportDir: "/tmp/x",
  });
  assert.throws(() => parseChatArgs(["--export-dir"]), /needs a directory/);
  assert.throws(() => parseChatArgs(["--export-dir="]), /needs a directory/);
  assert.throws(
    () => parseChatArgs(["--export-dir", "--raw"]),
    /--export-dir needs a directory: usage: main\.ts chat/,
  );
  const usage = "usage: main.ts chat [--no-think] [--raw] [--export-dir DIR]";
  assert.throws(() => parseChatArgs(["--loud"]), {
    name: "UsageError",
    message: `Unknown option --loud: ${usage}`,
  });
  assert.throws(() => parseChatArgs(["stray"]), {
    message: `Unexpected argument stray: ${usage}`,
  });
  assert.throws(() => parseChatArgs(["--raw=1"]), {
    message: `--raw takes no value: ${usage}`,
  });
});

Deno.test("piped chat: /retry, /edit, /rename, /export and /private", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    reply({ content: ["Lisbon."] }),
    reply({ content: ["Porto."] }),
    reply({ content: ["Faro."] }),
    reply({ content: ["A private answer."] }),
  );
  await using daemon = await startDaemon(llm.url);
  await using home = await tempHome();
  const socket = daemon.paths.socketPath;
  const input = [
    "Where should I go?",
    "/retry",
    "/edit Where should I go in May?",
    "/rename 1 Trip",
    "/list",
    "/export 1",
    "/export 1 trip.md",
    "/export 1 trip.md",
    "/export 1 trip.json",
    "/private",
    "A private question",
    "/new",
  ].join("\n") + "\n";
  const result = await runClient(
    [
      "run",
      "--quiet",
      ...clientFlags(socket),
      `--allow-write=${home.path}`,
      MAIN,
      "chat",
      `--export-dir=${home.path}`,
    ],
    clientEnv(daemon.paths.runtimeDir),
    input,
  );
  assert.equal(result.stderr, "");
  assert.equal(result.code, 0);
  const shown = untimed(result.stdout).replace(
    /\d{4}-\d\d-\d\d \d\d:\d\d( UTC[+-]\d\d:\d\d)?/g,
    "<date>",
  );
  const expected = [
    "> Where should I go?",
    "Lisbon.",
    "",
    "> /retry",
    "> Where should I go? (replaces the last turn)",
    "Porto.",
    "",
    "> /edit Where should I go in May?",
    "> Where should I go in May? (replaces the last turn)",
    "Faro.",
    "",
    // The title came from the first question, so it follows the edit.
    '#1 is now called "Where should I go in May?"',
    "> /rename 1 Trip",
    '#1 is now called "Trip"',
    "> /list",
    "*   #1  <date>  Trip",
    "> /export 1",
    "# Trip",
    "",
    "Conversation 1 · created <date> · updated <date> · 1 turn",
    "",
    "## 1 · <date>",
    "",
    "> Where should I go in May?",
    "",
    "Faro.",
    "> /export 1 trip.md",
    `wrote #1 to ${join(home.path, "trip.md")}`,
    "> /export 1 trip.md",
    `error: ${
      join(home.path, "trip.md")
    } already exists: give another file name`,
    "> /export 1 trip.json",
    `wrote #1 to ${join(home.path, "trip.json")}`,
    "> /private",
    "── private conversation · not saved ──",
    "> A private question",
    "A private answer.",
    "",
    "> /new",
    "── new conversation ──",
    "",
  ].join("\n");
  assert.ok(shown.endsWith(expected), `${shown}\n---\n${expected}`);
  const markdown = await Deno.readTextFile(join(home.path, "trip.md"));
  assert.match(markdown, /^# Trip\n/);
  assert.ok(markdown.includes("> Where should I go in May?\n\nFaro.\n"));
  const json = JSON.parse(
    await Deno.readTextFile(join(home.path, "trip.json")),
  );
  assert.equal(json.format, "desktop-assistant/1");
  assert.deepEqual(json.turns.map((t: { reply: string }) => t.reply), [
    "Faro.",
  ]);
  // The model saw the retry and the edit without the turn they replaced.
  assert.equal(lastQuestion(llm, 2), "Where should I go in May?");
  assert.deepEqual(
    (llm.chats[2]?.body as Chats).messages.map((m) => m.role),
    ["system", "user"],
  );
});

Deno.test("piped chat: /export to a file without a write grant says how to get one", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Yes."] }));
  await using daemon = await startDaemon(llm.url);
  await using home = await tempHome();
  const target = join(home.path, "out.md");
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    clientEnv(daemon.paths.runtimeDir),
    `Saved?\n/export 1 ${target}\n`,
  );
  assert.equal(result.code, 0);
  assert.match(
    untimed(result.stdout),
    /error: chat may not write .*out\.md: start it with deno task chat, which lets it write in its export folder, or run deno task -q export 1 > file/,
  );
  assert.equal(await Deno.stat(target).then(() => true, () => false), false);
});

Deno.test({
  name:
    `chat in a terminal: /edit puts the last question on the line and Enter replaces the turn; the header says private${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(
      reply({ content: ["Three."] }),
      reply({ content: ["Four."] }),
      reply({ content: ["Hidden."] }),
    );
    await using daemon = await startDaemon(llm.url);
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env: clientEnv(daemon.paths.runtimeDir), pty: true },
    );
    let at = await chat.waitFor(/> \r/);
    await chat.type("What is one plus two?\r");
    at = await chat.waitFor("Three.", at);
    at = await chat.waitFor(/> \r/, at);
    await chat.type("/edit\r");
    at = await chat.waitFor("edit> What is one plus two?", at);
    // Ctrl-W drops "two?", then the new ending.
    await chat.type("\x17three?\r");
    at = await chat.waitFor("Four.", at);
    assert.equal(lastQuestion(llm, 1), "What is one plus three?");
    assert.match(
      untimed(stripAnsi(chat.stdout)),
      /What is one plus three\? \(replaces the last turn\)/,
    );
    at = await chat.waitFor(/> \r/, at);
    await chat.type("/private\r");
    at = await chat.waitFor("── private conversation · not saved ──", at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
  },
});

Deno.test("piped chat asks before a call that needs approval; y runs it, the end of input declines", async () => {
  await using tools = await weatherTools();
  await using llm = await FakeLlm.start();
  const call = (place: string) =>
    reply({
      toolCalls: [{ name: "weather", arguments: JSON.stringify({ place }) }],
    });
  llm.enqueue(
    call("Paris"),
    reply({ content: ["Sunny."] }),
    call("Oslo"),
    reply({ content: ["Not looked up."] }),
  );
  await using daemon = await startDaemon(llm.url, [tools.dir]);
  const result = await runClient(
    clientArgs(daemon.paths.socketPath, ["chat"]),
    clientEnv(daemon.paths.runtimeDir),
    "/help\nWeather in Paris?\ny\nWeather in Oslo?\n",
  );
  assert.equal(result.code, 0, result.stderr);
  assert.match(untimed(result.stdout), /run TOOL \{args\}\? \[y\/N\]/);
  assert.match(
    untimed(result.stdout),
    /> Weather in Paris\?\nrun weather \{"place": "Paris"\}\? \[y\/N\] allowed\n\[tool\] weather … done\nSunny\.\n/,
  );
  assert.match(
    untimed(result.stdout),
    /> Weather in Oslo\?\nrun weather \{"place": "Oslo"\}\? \[y\/N\] declined\nNot looked up\.\n/,
  );
  assert.deepEqual(await runs(tools.dir), ["Paris"]);
});

Deno.test({
  name:
    `chat in a terminal: a call that needs approval takes one key, y or n${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using tools = await weatherTools();
    await using llm = await FakeLlm.start();
    const call = (place: string) =>
      reply({
        toolCalls: [{ name: "weather", arguments: JSON.stringify({ place }) }],
      });
    llm.enqueue(
      call("Paris"),
      reply({ content: ["Sunny."] }),
      call("Oslo"),
      reply({ content: ["Skipped."] }),
    );
    await using daemon = await startDaemon(llm.url, [tools.dir]);
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env: clientEnv(daemon.paths.runtimeDir), pty: true },
    );
    let at = await chat.waitFor(/> \r/);
    await chat.type("Paris?\r");
    at = await chat.waitFor('run weather {"place": "Paris"}? [y/N] ', at);
    await chat.type("y");
    at = await chat.waitFor("allowed", at);
    at = await chat.waitFor("Sunny.", at);
    at = await chat.waitFor(/> \r/, at);
    await chat.type("Oslo?\r");
    at = await chat.waitFor('run weather {"place": "Oslo"}? [y/N] ', at);
    await chat.type("n");
    at = await chat.waitFor("declined", at);
    at = await chat.waitFor("Skipped.", at);
    await chat.waitFor(/> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
    assert.deepEqual(await runs(tools.dir), ["Paris"]);
  },
});

Deno.test({
  name:
    `chat in a terminal: /new, /private and /open leave the scrollback as it was${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: ["First", " answer."] }));
    await using daemon = await startDaemon(llm.url);
    const size = { columns: 60, rows: 12 };
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env: clientEnv(daemon.paths.runtimeDir), pty: true, size },
    );
    let at = await chat.waitFor(/> \r/);
    await chat.type("Remember me\r");
    at = await chat.waitFor("First answer.", at);
    for (
      const [command, shown] of [
        ["/new", "── new conversation ──"],
        ["/private", "── private conversation · not saved ──"],
        ["/open 1", "── conversation #1 · 1 turn ──"],
      ] as const
    ) {
      at = await chat.waitFor(/> \r/, at);
      await chat.type(`${command}\r`);
      at = await chat.waitFor(shown, at);
    }
    await chat.waitFor(/> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
    using screen = new Screen(size);
    await screen.write(chat.stdout);
    const text = screen.text();
    // The first question and its answer, shown before any switch, are
    // still there to scroll back to, before the conversation opened again.
    const first = text.indexOf("> Remember me");
    assert.ok(first !== -1, text.join("\n"));
    assert.equal(text[first + 1], "First answer.");
    const reopened = text.indexOf("── conversation #1 · 1 turn ──");
    assert.ok(first < text.indexOf("── new conversation ──"), text.join("\n"));
    assert.ok(first < reopened, text.join("\n"));
    assert.ok(!chat.stdout.includes("\x1b[3J"), "the scrollback was erased");
  },
});

Deno.test({
  name:
    `chat in a terminal 40 columns wide: the header and /help wrap between words, never past the edge${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    await using daemon = await startDaemon(llm.url);
    const size = { columns: 40, rows: 50 };
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env: clientEnv(daemon.paths.runtimeDir), pty: true, size },
    );
    let at = await chat.waitFor(/> \r/);
    await chat.type("/help\r");
    at = await chat.waitFor("/quit leaves", at);
    at = await chat.waitFor(/from its\s+cache\./, at);
    await chat.waitFor(/> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
    using screen = new Screen({ ...size, rows: 200 });
    await screen.write(chat.stdout);
    // A line the terminal had to wrap reads back as one longer line.
    const lines = screen.text();
    for (const line of lines) {
      assert.ok(
        line.length <= 40,
        `wider than 40 columns: ${JSON.stringify(line)}`,
      );
    }
    // Whole words: every word of the help is on one line.
    const words = lines.join(" ").split(/\s+/);
    for (
      const word of [
        "desktop-assistant",
        "/private",
        "conversation:",
        "approval",
        "Ctrl-C",
      ]
    ) {
      assert.ok(words.includes(word), `${word} was cut: ${lines.join("\n")}`);
    }
  },
});

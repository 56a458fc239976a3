/**
 * chat and ask against the real daemon, with the grants `deno task` gives
 * them: lines typed during a reply, a daemon that restarts, files sent with
 * a question, an export written from the task, and a reply cut short in
 * its reasoning.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { terminalClientFlags } from "../../src/launch/client_flags.ts";
import {
  clientEnv,
  ClientProcess,
  hasScript,
  MAIN,
  PTY_SKIP,
  runClient,
  startDaemon,
  tempHome,
  untimed,
  within,
} from "../support/client_harness.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { askedQuestion, FakeLlm, hold, reply } from "../support/fake_llm.ts";
import { PNG_1PX, sentContent, VISION } from "./files_fixture.ts";

const DENO_JSON = new URL("../../deno.json", import.meta.url).pathname;

/** A client's environment with a home of its own, so chat's folders are there. */
function homeEnv(runtimeDir: string, home: string): Record<string, string> {
  return clientEnv(runtimeDir, {
    HOME: home,
    XDG_STATE_HOME: join(home, "state"),
    XDG_DATA_HOME: join(home, "data"),
  });
}

/** `deno run` arguments for a client with the grants its task derives for `env`. */
function taskArgs(
  client: "chat" | "ask",
  socket: string,
  env: Record<string, string>,
  args: string[] = [],
): string[] {
  return [
    "run",
    "--quiet",
    "--no-prompt",
    ...terminalClientFlags(client, socket, (name) => env[name]),
    MAIN,
    client,
    ...args,
  ];
}

Deno.test({
  name:
    `chat in a terminal: lines typed while a reply streams are each kept, and run in order once it ends${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: ["Lima."] }), hold(["Once", " upon"]));
    await using daemon = await startDaemon(llm.url);
    await using chat = ClientProcess.spawn(
      ["run", "--quiet", "--no-prompt", ...clientFlagsOf(daemon), MAIN, "chat"],
      { env: clientEnv(daemon.paths.runtimeDir), pty: true },
    );
    let at = await chat.waitFor(/> \r/);
    await chat.type("Capital of Peru?\r");
    at = await chat.waitFor("Lima.", at);
    at = await chat.waitFor(/> \r/, at);
    await chat.type("Tell me a story\r");
    at = await chat.waitFor("Once upon", at);
    // Typed while it streams, as fast as a paste: two lines, two Enters.
    await chat.type("/list\r/search peru\r");
    // Ctrl-C comes after them, so the stop proves they were read.
    const aborted = llm.nextAbort();
    await chat.type("\x03");
    await within(aborted, "the model request to be aborted");
    at = await chat.waitFor("[stopped]", at);
    at = await chat.waitFor("> /list", at);
    at = await chat.waitFor(/#1 .* Capital of Peru\?/, at);
    at = await chat.waitFor("> /search peru", at);
    at = await chat.waitFor("Capital of **Peru**?", at);
    await chat.waitFor(/> \r/, at);
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
    assert.doesNotMatch(chat.stdout, /unknown command/);
    assert.equal(llm.chats.length, 2, "the typed lines asked nothing");
  },
});

function clientFlagsOf(daemon: Daemon): string[] {
  return terminalClientFlags("chat", daemon.paths.socketPath, () => undefined);
}

Deno.test({
  name:
    `chat in a terminal waits for a daemon that restarts, and keeps its input history, across runs too${PTY_SKIP}`,
  ignore: !hasScript,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(
      reply({ content: ["One."] }),
      reply({ content: ["Two."] }),
      reply({ content: ["Three."] }),
    );
    await using first = await startDaemon(llm.url);
    await using home = await tempHome();
    const env = homeEnv(first.paths.runtimeDir, home.path);
    const args = taskArgs("chat", first.paths.socketPath, env);
    await using chat = ClientProcess.spawn(args, { env, pty: true });
    let at = await chat.waitFor(/> \r/);
    await chat.type("Remember this line\r");
    at = await chat.waitFor("One.", at);
    at = await chat.waitFor(/> \r/, at);
    await first.stop();
    at = await chat.waitFor(
      "The daemon went away: waiting for it to come back (Ctrl-C leaves)",
      at,
    );
    await using _again = await Daemon.start({
      llmUrl: llm.url,
      home: first.home,
    });
    at = await chat.waitFor("The daemon is back", at);
    at = await chat.waitFor(/> \r/, at);
    // Up recalls the line typed before the restart.
    await chat.type("\x1b[A\r");
    at = await chat.waitFor("Two.", at);
    await chat.waitFor(/> \r/, at);
    assert.equal(askedQuestion(llm.chats[1]?.body), "Remember this line");
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);
    const file = join(
      home.path,
      "state",
      "desktop-assistant",
      "chat",
      "history",
    );
    assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
    // The next run recalls it too.
    await using next = ClientProcess.spawn(args, { env, pty: true });
    at = await next.waitFor(/> \r/);
    await next.type("\x1b[A\r");
    at = await next.waitFor("Three.", at);
    await next.waitFor(/> \r/, at);
    assert.equal(askedQuestion(llm.chats[2]?.body), "Remember this line");
    await next.type("\x04");
    assert.equal(await next.exit(), 0);
  },
});

Deno.test("piped chat: /attach sends files with the next question, shown with it live and when opened again", async () => {
  await using llm = await FakeLlm.start({ models: [VISION] });
  llm.enqueue(reply({ content: ["A list and a dot."] }));
  await using daemon = await startDaemon(llm.url);
  await using home = await tempHome();
  await Deno.writeTextFile(join(home.path, "notes.txt"), "buy milk\n");
  await Deno.writeFile(join(home.path, "dot.png"), PNG_1PX);
  const env = { ...homeEnv(daemon.paths.runtimeDir, home.path) };
  env.INIT_CWD = home.path;
  const result = await runClient(
    taskArgs("chat", daemon.paths.socketPath, env),
    env,
    "/attach notes.txt dot.png\nWhat are these?\n/new\n/open 1\n",
  );
  assert.equal(result.stderr, "");
  assert.equal(result.code, 0);
  const files =
    `[files] notes.txt (9 bytes, text), dot.png (${PNG_1PX.length} bytes, picture)`;
  assert.equal(
    untimed(result.stdout).split("\n").slice(1).join("\n"),
    [
      "> /attach notes.txt dot.png",
      "attached notes.txt (9 bytes, text/plain)",
      `attached dot.png (${PNG_1PX.length} bytes, image/png)`,
      "> What are these?",
      files,
      "A list and a dot.",
      "",
      "> /new",
      "── new conversation ──",
      "> /open 1",
      "── conversation #1 · 1 turn ──",
      "> What are these?",
      files,
      "A list and a dot.",
      "",
      "",
    ].join("\n"),
  );
  const { text, images } = sentContent(llm.chats[0]?.body);
  assert.match(text, /What are these\?\n\nFile notes\.txt:\n`+\nbuy milk\n/);
  assert.equal(images.length, 1);
});

Deno.test("/export N file from deno task chat writes in chat's export folder, and says where", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Yes."] }));
  await using daemon = await startDaemon(llm.url);
  await using home = await tempHome();
  const env = homeEnv(daemon.paths.runtimeDir, home.path);
  const result = await runClient(
    ["task", "--quiet", "--config", DENO_JSON, "chat"],
    env,
    "Saved?\n/export 1 trip.md\n",
  );
  assert.equal(result.stderr, "");
  assert.equal(result.code, 0);
  const path = join(
    home.path,
    "data",
    "desktop-assistant",
    "exports",
    "trip.md",
  );
  assert.match(result.stdout, new RegExp(`\nwrote #1 to ${path}\n`));
  assert.match(await Deno.readTextFile(path), /> Saved\?\n\nYes\.\n/);
});

Deno.test("a reply cut short inside its reasoning shows the daemon's note as its answer, in chat and in ask", async () => {
  await using llm = await FakeLlm.start();
  const cut = () =>
    reply({
      think: ["Let me", " think", " at length"],
      finishReason: "length",
    });
  llm.enqueue(cut(), cut());
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "[request]\nmax_tokens = 60\n",
  });
  const note =
    "[the reply ended inside its reasoning: raise max_tokens or set thinking = false]";
  const env = clientEnv(daemon.paths.runtimeDir);
  const chat = await runClient(
    taskArgs("chat", daemon.paths.socketPath, env),
    env,
    "A hard question\n",
  );
  assert.equal(chat.code, 0);
  assert.match(
    untimed(chat.stdout),
    new RegExp(
      `\n> A hard question\n\\(thinking\\) Let me think at length\n${
        RegExp.escape(note)
      }\n\\[cut short: the reply reached max_tokens\\]\n`,
    ),
  );
  const ask = await runClient(
    taskArgs("ask", daemon.paths.socketPath, env, ["Another hard one"]),
    env,
  );
  assert.equal(ask.code, 0);
  assert.equal(ask.stdout, note + "\n");
  assert.equal(ask.stderr, "The reply was cut short: it reached max_tokens.\n");
});

Deno.test("piped chat says a question over the line limit was not sent, and goes on to the next", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Yes."] }));
  await using daemon = await startDaemon(llm.url);
  const env = clientEnv(daemon.paths.runtimeDir);
  // Past the input's framing, and within it but past the line once quoted.
  const input = "x".repeat(1_200_000) + "\n" + '"'.repeat(600_000) +
    "\nNext?\n";
  const result = await runClient(
    taskArgs("chat", daemon.paths.socketPath, env),
    env,
    input,
  );
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    untimed(result.stdout).split("\n").slice(1).join("\n"),
    [
      "error: a line over 1 MB was not sent: one question carries at most 1 MB (the daemon's line limit)",
      "error: not sent: the question is 1.1 MB; one question carries at most 1 MB (the daemon's line limit): shorten it",
      "> Next?",
      "Yes.",
      "",
      "",
    ].join("\n"),
  );
  assert.equal(llm.chats.length, 1);
});

import assert from "node:assert/strict";
import { join } from "node:path";
import { noDaemonMessage } from "../../src/clients/client.ts";
import { parseExportArgs } from "../../src/clients/export.ts";
import { UsageError } from "../../src/base/command_line.ts";
import {
  clientArgs,
  clientEnv,
  ClientProcess,
  runClient,
  startDaemon,
  tempHome,
} from "../support/client_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { isIdle } from "../support/socket_client.ts";

Deno.test("main.ts export prints a conversation as Markdown or JSON, with only the socket's grants", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(
    reply({ content: ["Paris."] }),
    reply({ content: ["About two million."] }),
  );
  await using daemon = await startDaemon(llm.url);
  await using client = await daemon.connect();
  await client.next("hello");
  for (const text of ["Capital of France?", "How many live there?"]) {
    await client.send({ type: "ask", text });
    await client.until(isIdle);
  }
  const env = clientEnv(daemon.paths.runtimeDir);
  const socket = daemon.paths.socketPath;

  const markdown = await runClient(clientArgs(socket, ["export", "1"]), env);
  assert.equal(markdown.stderr, "");
  assert.equal(markdown.code, 0);
  assert.match(markdown.stdout, /^# Capital of France\?\n/);
  for (
    const part of [
      "> Capital of France?",
      "Paris.",
      "> How many live there?",
      "About two million.",
    ]
  ) {
    assert.ok(markdown.stdout.includes(part), part);
  }

  const json = await runClient(
    clientArgs(socket, ["export", "--json", "1"]),
    env,
  );
  assert.equal(json.code, 0);
  const document = JSON.parse(json.stdout);
  assert.equal(document.format, "desktop-assistant/1");
  assert.deepEqual(
    document.turns.map((t: { user: string; reply: string }) => [
      t.user,
      t.reply,
    ]),
    [
      ["Capital of France?", "Paris."],
      ["How many live there?", "About two million."],
    ],
  );

  const missing = await runClient(clientArgs(socket, ["export", "7"]), env);
  assert.deepEqual(missing, {
    code: 1,
    stdout: "",
    stderr: "no such conversation\n",
  });
  const usage = await runClient(clientArgs(socket, ["export", "one"]), env);
  assert.equal(usage.code, 64);
  assert.match(usage.stderr, /usage: main\.ts export ID \[--json\]/);
});

Deno.test("main.ts export on a terminal shows a reply's escape sequences inert; into a pipe it is byte-exact", async () => {
  const hostile = ["Hi\x1b]0;pwned\x07", " there\x1b[2J", " end\u009b"];
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: hostile }));
  await using daemon = await startDaemon(llm.url);
  await using client = await daemon.connect();
  await client.next("hello");
  await client.send({ type: "ask", text: "Say hi" });
  await client.until(isIdle);
  const env = clientEnv(daemon.paths.runtimeDir);
  const args = clientArgs(daemon.paths.socketPath, ["export", "1"]);

  const piped = await runClient(args, env);
  assert.equal(piped.code, 0);
  assert.ok(piped.stdout.includes(hostile.join("")), piped.stdout);

  await using shown = ClientProcess.spawn(args, { env, pty: true });
  assert.equal(await shown.exit(), 0);
  assert.ok(shown.stdout.includes("Hi]0;pwned there[2J end"), shown.stdout);
  assert.ok(
    !shown.stdout.includes("\x1b") && !shown.stdout.includes("\x07") &&
      !shown.stdout.includes("\u009b"),
    JSON.stringify(shown.stdout),
  );
});

Deno.test("main.ts export exits 2 with the start hint when no daemon answers", async () => {
  await using home = await tempHome();
  const runtime = join(home.path, "run");
  await Deno.mkdir(runtime);
  const socket = join(runtime, "desktop-assistant.sock");
  const result = await runClient(
    clientArgs(socket, ["export", "1"]),
    clientEnv(runtime),
  );
  assert.deepEqual(result, {
    code: 2,
    stdout: "",
    stderr: `${noDaemonMessage(socket)}\n`,
  });
});

Deno.test("parseExportArgs takes one id and --json in any order", () => {
  assert.deepEqual(parseExportArgs(["3"]), { id: 3, json: false });
  assert.deepEqual(parseExportArgs(["--json", "3"]), { id: 3, json: true });
  assert.deepEqual(parseExportArgs(["3", "--json"]), { id: 3, json: true });
  for (const args of [[], ["1", "2"], ["1.5"], ["x"], ["--md", "1"]]) {
    assert.throws(() => parseExportArgs(args), UsageError, args.join(" "));
  }
  const usage = "usage: main.ts export ID [--json]";
  assert.throws(() => parseExportArgs(["--md", "1"]), {
    message: `Unknown option --md: ${usage}`,
  });
  assert.throws(() => parseExportArgs(["1", "2"]), {
    message: `Give one conversation id: ${usage}`,
  });
});

/**
 * The terminal clients' grants as `deno task chat|ask|export` derive them:
 * the socket for all three, the files the user names for chat and ask, and
 * chat's own two folders.
 */
import assert from "node:assert/strict";
import { terminalClientFlags } from "../../src/launch/client_flags.ts";
import { clientFlags } from "../../src/clients/client.ts";
import { envOf, XDG } from "../support/env_fixture.ts";
import { Daemon, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const SOCKET = "/run/user/1000/desktop-assistant.sock";

Deno.test("chat reads what the user names and writes only the socket, its input history and its exports", () => {
  assert.deepEqual(terminalClientFlags("chat", SOCKET, XDG), [
    `--allow-net=unix:${SOCKET}`,
    "--allow-read",
    `--allow-write=${SOCKET},/srv/state/desktop-assistant/chat,/srv/data/desktop-assistant/exports`,
    "--allow-env=HOME,INIT_CWD,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME",
  ]);
});

Deno.test("ask reads what the user names and writes only the socket; export needs the socket alone", () => {
  assert.deepEqual(terminalClientFlags("ask", SOCKET, XDG), [
    `--allow-net=unix:${SOCKET}`,
    "--allow-read",
    `--allow-write=${SOCKET}`,
    "--allow-env=HOME,INIT_CWD,XDG_RUNTIME_DIR",
  ]);
  assert.deepEqual(
    terminalClientFlags("export", SOCKET, XDG),
    clientFlags(SOCKET),
  );
});

Deno.test("a chat folder a flag cannot name, or none without HOME, is left out: the socket's grants stay", () => {
  const spaced = envOf({
    HOME: "/home/ada",
    XDG_STATE_HOME: "/srv/my state",
    XDG_DATA_HOME: "/srv/a,b",
  });
  const bare = envOf({});
  for (const env of [spaced, bare]) {
    const write = terminalClientFlags("chat", SOCKET, env)
      .find((flag) => flag.startsWith("--allow-write="));
    assert.equal(write, `--allow-write=${SOCKET}`);
  }
});

Deno.test("deno task export prints a stored conversation, and the task list names it", async () => {
  await using llm = await FakeLlm.start();
  llm.enqueue(reply({ content: ["Lima."] }));
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using asker = await daemon.connect();
  await asker.next("hello");
  await asker.send({ type: "ask", text: "Capital of Peru?" });
  await asker.until((event) => event.type === "done");
  const env = { ...inheritedEnv(), ...daemon.env };
  const deno = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args,
      cwd: ROOT,
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
  const listed = await deno(["task"]);
  const tasks = new TextDecoder().decode(listed.stdout) +
    new TextDecoder().decode(listed.stderr);
  assert.match(tasks, /- export\n\s+\/\/ Print a stored conversation/);
  const run = await deno(["task", "--quiet", "export", "1"]);
  assert.equal(new TextDecoder().decode(run.stderr), "");
  assert.equal(run.code, 0);
  assert.match(
    new TextDecoder().decode(run.stdout),
    /^# Capital of Peru\?\n[\s\S]*> Capital of Peru\?\n\nLima\.\n/,
  );
});

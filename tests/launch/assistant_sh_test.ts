/**
 * assistant.sh against temporary XDG dirs and the fake llama-server: start,
 * status, a refused second start, stop, status when down, a failed start,
 * and install (tools copied without overwriting, a unit that really runs).
 */
import assert from "node:assert/strict";
import { withoutTimings } from "../support/socket_client.ts";
import { join } from "node:path";
import {
  Daemon,
  daemonEnv,
  exists,
  inheritedEnv,
} from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { SocketClient } from "../support/socket_client.ts";

const SCRIPT = new URL("../../assistant.sh", import.meta.url).pathname;
const BUNDLED_TOOLS = new URL("../../tools/", import.meta.url).pathname;
const WAIT_MS = 120_000;

interface Home extends AsyncDisposable {
  home: string;
  env: Record<string, string>;
  configFile: string;
  socket: string;
  pidFile: string;
  logFile: string;
}

async function makeHome(config: string): Promise<Home> {
  const home = await Deno.makeTempDir({ prefix: "da-sh-" });
  const env = { ...inheritedEnv(), ...daemonEnv(home) };
  await Deno.mkdir(`${home}/run`, { mode: 0o700 });
  await Deno.mkdir(`${home}/config/desktop-assistant`, { recursive: true });
  const configFile = `${home}/config/desktop-assistant/config.toml`;
  await Deno.writeTextFile(configFile, config);
  const pidFile = `${home}/run/desktop-assistant.pid`;
  return {
    home,
    env,
    configFile,
    socket: `${home}/run/desktop-assistant.sock`,
    pidFile,
    logFile: `${home}/state/desktop-assistant/assistant.log`,
    async [Symbol.asyncDispose]() {
      // A daemon left behind by a failed assertion: end it by its own pid.
      try {
        const pid = Number(await Deno.readTextFile(pidFile));
        if (pid > 0) Deno.kill(pid, "SIGKILL");
      } catch {
        // No pid file, or the process is gone.
      }
      await Deno.remove(home, { recursive: true });
    },
  };
}

async function sh(
  env: Record<string, string>,
  command: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command("bash", {
    args: [SCRIPT, command],
    env,
    clearEnv: true,
    stdin: "null",
    signal: AbortSignal.timeout(WAIT_MS),
  }).output();
  const text = new TextDecoder();
  return {
    code: out.code,
    stdout: text.decode(out.stdout),
    stderr: text.decode(out.stderr),
  };
}

async function ping(socket: string): Promise<number> {
  await using client = await SocketClient.connect(socket);
  await client.next("hello");
  await client.send({ type: "ping" });
  return (await client.next("pong")).pid;
}

Deno.test("assistant.sh start, status, a refused second start, stop, then status down", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome(`llm_url = ${JSON.stringify(llm.url)}\n`);

  const started = await sh(home.env, "start");
  assert.equal(started.code, 0, started.stdout + started.stderr);
  const pid = Number(started.stdout.match(/started \(pid (\d+)\)/)?.[1]);
  assert.ok(pid > 0, started.stdout);
  assert.equal((await Deno.readTextFile(home.pidFile)).trim(), String(pid));
  assert.equal(await ping(home.socket), pid);
  const info = await Deno.stat(`${home.home}/state/desktop-assistant`);
  assert.equal(info.mode! & 0o777, 0o700);

  // It serves: one turn against the fake llama-server.
  {
    await using client = await SocketClient.connect(home.socket);
    await client.next("hello");
    llm.enqueue(reply({ content: ["Fine, ", "thanks."] }));
    await client.send({ type: "ask", text: "How are you?" });
    const events = await client.until((e) => e.type === "done");
    assert.deepEqual(withoutTimings(events.at(-1)!), {
      type: "done",
      id: 1,
      stopped: false,
    });
  }

  const up = await sh(home.env, "status");
  assert.equal(up.code, 0, up.stdout + up.stderr);
  assert.match(up.stdout, new RegExp(`process: running, pid ${pid}`));
  assert.match(up.stdout, new RegExp(`answers ping: pid ${pid}, version `));
  assert.ok(
    up.stdout.includes(
      `\nbackend: up at ${llm.url}, model /srv/models/tiny.gguf, context 4096 tokens\n`,
    ),
    up.stdout,
  );
  assert.match(up.stdout, /log: .*assistant\.log, last lines:\n/);
  assert.match(up.stdout, / info reply done conv=1 /, "the log's tail");

  const again = await sh(home.env, "start");
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, new RegExp(`already running \\(pid ${pid}\\)`));
  assert.equal(await ping(home.socket), pid, "the first one is untouched");
  assert.equal((await Deno.readTextFile(home.pidFile)).trim(), String(pid));

  const stopped = await sh(home.env, "stop");
  assert.equal(stopped.code, 0, stopped.stdout + stopped.stderr);
  assert.match(stopped.stdout, new RegExp(`stopped \\(pid ${pid}\\)`));
  assert.match(stopped.stdout, /exit code=0 reason=SIGTERM/);
  assert.equal(await exists(home.socket), false);
  assert.equal(await exists(home.pidFile), false);

  const down = await sh(home.env, "status");
  assert.equal(down.code, 1, down.stdout);
  assert.match(down.stdout, /socket: none at /);
  assert.match(down.stdout, /exit code=0 reason=SIGTERM/, "the log's tail");

  const idle = await sh(home.env, "stop");
  assert.equal(idle.code, 0);
  assert.match(idle.stdout, /is not running/);
});

Deno.test("assistant.sh status is 0 for a daemon started another way, with socat or with deno, and 1 once it stops; it says llama-server is down", async () => {
  await using llm = await FakeLlm.start();
  await llm.stop();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  const env = { ...inheritedEnv(), ...daemon.env };
  const socat = (await new Deno.Command("bash", {
    args: ["-c", "command -v socat"],
    stdout: "null",
  }).output()).success;
  // Without socat the script always pings with deno; both ways when it can.
  for (const how of socat ? ["socat", "deno"] : ["deno"]) {
    const status = await sh({ ...env, ASSISTANT_PING: how }, "status");
    assert.equal(status.code, 0, `${how}: ${status.stdout}${status.stderr}`);
    assert.match(
      status.stdout,
      new RegExp(`answers ping: pid ${daemon.child.pid},`),
    );
    assert.match(status.stdout, /process: no pid file/);
    assert.ok(
      status.stdout.includes(
        `\nbackend: down at ${llm.url}: no connection to ${llm.url} (connection refused)\n`,
      ),
      `${how}: ${status.stdout}`,
    );
  }
  await daemon.stop();
  const down = await sh(env, "status");
  assert.equal(down.code, 1, down.stdout);
});

Deno.test("assistant.sh start reports a failed start with the reason: a broken config, a daemon that exits", async () => {
  await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n`);
  await Deno.writeTextFile(home.configFile, `model = [\n`);
  const broken = await sh(home.env, "start");
  assert.equal(broken.code, 1);
  assert.match(broken.stderr, /config\.toml:\d+:\d+: /);
  assert.equal(await exists(home.pidFile), false);

  // Flags derive, but the daemon refuses: something that is no socket sits at its path.
  await Deno.writeTextFile(
    home.configFile,
    `llm_url = "http://127.0.0.1:8123"\n`,
  );
  await Deno.writeTextFile(home.socket, "not a socket");
  const refused = await sh(home.env, "start");
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /failed to start/);
  assert.match(refused.stderr, /exists and is not a socket/, "the log's tail");
  assert.equal(await exists(home.pidFile), false);
});

/** The state letter of a process from /proc (S, R, Z, …), or null once it is gone. */
async function procState(pid: number): Promise<string | null> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  } catch {
    return null;
  }
}

Deno.test("assistant.sh trusts a pid file only when /proc shows the daemon: a reused pid is never refused or signalled", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome(`llm_url = ${JSON.stringify(llm.url)}\n`);
  // After a crash the pid file stays, and the system gives its number to
  // another process: this one stands in for it.
  const other = new Deno.Command("sleep", { args: ["300"] }).spawn();
  try {
    await Deno.writeTextFile(home.pidFile, `${other.pid}\n`);

    const status = await sh(home.env, "status");
    assert.equal(status.code, 1);
    assert.match(status.stdout, /process: not running \(stale pid file /);

    const idle = await sh(home.env, "stop");
    assert.equal(idle.code, 0, idle.stdout + idle.stderr);
    assert.match(idle.stdout, /is not running/);
    assert.equal(await procState(other.pid), "S", "the other process lives");
    assert.equal(await exists(home.pidFile), false);

    await Deno.writeTextFile(home.pidFile, `${other.pid}\n`);
    const started = await sh(home.env, "start");
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const pid = Number(started.stdout.match(/started \(pid (\d+)\)/)?.[1]);
    assert.equal(await ping(home.socket), pid);

    const stopped = await sh(home.env, "stop");
    assert.equal(stopped.code, 0, stopped.stdout + stopped.stderr);
    assert.match(stopped.stdout, new RegExp(`stopped \\(pid ${pid}\\)`));
    assert.equal(await procState(other.pid), "S", "the other process lives");
  } finally {
    other.kill("SIGKILL");
    await other.status;
  }
});

/** The words of a systemd ExecStart line as written by assistant.sh. */
function unitWords(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) =>
    m[1]!.replace(/\\(.)/g, "$1").replaceAll("%%", "%").replaceAll("$$", "$")
  );
}

Deno.test("assistant.sh install copies the example tools without overwriting and writes a unit that runs the daemon", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome(`llm_url = ${JSON.stringify(llm.url)}\n`);
  const userTools = `${home.home}/config/desktop-assistant/tools`;
  await Deno.mkdir(userTools);
  const mine = `description = "My own weather"\ncommand = ["date"]\n`;
  await Deno.writeTextFile(`${userTools}/weather.toml`, mine);

  const installed = await sh(home.env, "install");
  assert.equal(installed.code, 0, installed.stdout + installed.stderr);
  assert.equal(await Deno.readTextFile(`${userTools}/weather.toml`), mine);
  assert.match(installed.stdout, /kept your .*\/weather\.toml/);
  for await (const entry of Deno.readDir(BUNDLED_TOOLS)) {
    const copy = await Deno.stat(join(userTools, entry.name));
    const original = await Deno.stat(join(BUNDLED_TOOLS, entry.name));
    assert.equal(copy.mode! & 0o111, original.mode! & 0o111, entry.name);
  }
  const unit = await Deno.readTextFile(
    `${home.home}/config/systemd/user/desktop-assistant.service`,
  );
  const execLine = unit.split("\n").find((l) => l.startsWith("ExecStart="));
  assert.ok(execLine, unit);
  const words = unitWords(execLine);
  const run = words.find((w) => w.startsWith("--allow-run="))!;
  assert.ok(
    run.slice("--allow-run=".length).split(",").includes(
      `${userTools}/wikipedia.sh`,
    ),
    run,
  );
  assert.ok(
    words.includes(`--allow-net=${new URL(llm.url).host},unix:${home.socket}`),
  );
  assert.deepEqual(words.slice(-2), [
    new URL("../../main.ts", import.meta.url).pathname,
    "serve",
  ]);
  assert.match(unit, /^Restart=on-failure$/m);

  // The unit's command, run as systemd would, serves on the socket.
  const environment = Object.fromEntries(
    unit.split("\n").filter((l) => l.startsWith("Environment=")).map((l) => {
      const [assignment] = unitWords(l.slice("Environment=".length));
      const at = assignment!.indexOf("=");
      return [assignment!.slice(0, at), assignment!.slice(at + 1)];
    }),
  );
  assert.equal(environment.XDG_CONFIG_HOME, home.env.XDG_CONFIG_HOME);
  const child = new Deno.Command(words[0]!, {
    args: words.slice(1),
    env: { ...home.env, ...environment },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    const log = child.stderr.pipeThrough(new TextDecoderStream())
      .getReader();
    let text = "";
    const deadline = AbortSignal.timeout(WAIT_MS);
    while (!/ info listening socket=/.test(text)) {
      assert.equal(deadline.aborted, false, text);
      const next = await log.read();
      assert.ok(!next.done, text);
      text += next.value;
    }
    assert.match(text, /tools=3 skipped=0/);
    assert.equal(await ping(home.socket), child.pid);
    child.kill("SIGTERM");
    while (!(await log.read()).done) {
      // Drain to the end.
    }
    assert.equal((await child.status).code, 0);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already ended.
    }
    await child.status;
  }
});

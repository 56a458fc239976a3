/**
 * The flags end to end: `main.ts flags` for a sample config, the daemon
 * started by `deno task start` with exactly those flags and no launcher
 * beside it, and the refusals when the flags and the config disagree or the
 * config is broken.
 */
import assert from "node:assert/strict";
import { withoutTimings } from "../support/socket_client.ts";
import { basename, join } from "node:path";
import {
  compiledFlags,
  deriveDaemonFlags,
  shellQuote,
} from "../../src/launch/launch.ts";
import { setLogSink } from "../../src/base/log.ts";
import { taskCommand } from "../../src/launch/task_command.ts";
import { envOf } from "../support/env_fixture.ts";
import { V8_FLAGS } from "../../src/base/permissions.ts";
import { daemonEnv, exists, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { SocketClient } from "../support/socket_client.ts";
import { argvOf, descendants } from "../support/process_tree.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const ROOT = new URL("../../", import.meta.url).pathname;
const FIXTURE_TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname
  .replace(/\/$/, "");
/** The launcher's own grants: what `deno task start` runs it with. */
const LAUNCHER = [
  "--quiet",
  "--no-prompt",
  "--allow-read",
  "--allow-sys=uid",
  "--allow-env=HOME,PATH,TMPDIR,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME",
];
const WAIT_MS = 60_000;

/** A temporary home with every XDG dir inside it, and the env that points there. */
async function makeHome(config: string): Promise<
  {
    home: string;
    env: Record<string, string>;
    configFile: string;
    socket: string;
  } & AsyncDisposable
> {
  const home = await Deno.makeTempDir({ prefix: "da-launch-" });
  const env = { ...inheritedEnv(), ...daemonEnv(home) };
  await Deno.mkdir(`${home}/run`, { mode: 0o700 });
  await Deno.mkdir(`${home}/config/desktop-assistant`, { recursive: true });
  const configFile = `${home}/config/desktop-assistant/config.toml`;
  await Deno.writeTextFile(configFile, config);
  return {
    home,
    env,
    configFile,
    socket: `${home}/run/desktop-assistant.sock`,
    [Symbol.asyncDispose]: () => Deno.remove(home, { recursive: true }),
  };
}

/** Runs deno with args to completion, bounded. */
async function deno(
  args: string[],
  env: Record<string, string>,
  cwd?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    env,
    ...(cwd ? { cwd } : {}),
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

async function printedFlags(env: Record<string, string>): Promise<string[]> {
  const result = await deno(["run", ...LAUNCHER, MAIN, "flags"], env);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.trimEnd().split("\n");
}

/** A process whose stderr is collected, with a way to wait for a line. */
class Running implements AsyncDisposable {
  readonly child: Deno.ChildProcess;
  log = "";
  #changed = Promise.withResolvers<void>();
  #reading: Promise<void>;

  constructor(args: string[], env: Record<string, string>, cwd?: string) {
    const child = new Deno.Command(Deno.execPath(), {
      args,
      env,
      ...(cwd ? { cwd } : {}),
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.child = child;
    this.#reading = (async () => {
      for await (
        const chunk of child.stderr.pipeThrough(new TextDecoderStream())
      ) {
        this.log += chunk;
        this.#notify();
      }
    })();
  }

  #notify(): void {
    const changed = this.#changed;
    this.#changed = Promise.withResolvers<void>();
    changed.resolve();
  }

  /** Resolves once the log matches; fails when the process ends first or after WAIT_MS. */
  async waitFor(pattern: RegExp): Promise<RegExpMatchArray> {
    const deadline = AbortSignal.timeout(WAIT_MS);
    const timedOut = new Promise<never>((_, reject) => {
      deadline.addEventListener(
        "abort",
        () => reject(new Error(`No ${pattern} in:\n${this.log}`)),
      );
    });
    timedOut.catch(() => {});
    const ended = this.child.status.then(() => this.#reading);
    while (true) {
      const match = this.log.match(pattern);
      if (match) return match;
      const gone = await Promise.race([
        this.#changed.promise.then(() => false),
        ended.then(() => true),
        timedOut,
      ]);
      if (gone && !this.log.match(pattern)) {
        throw new Error(`Exited without ${pattern}:\n${this.log}`);
      }
    }
  }

  /** Sends a signal and waits for the exit (SIGKILL if it outlives WAIT_MS). */
  async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
    try {
      this.child.kill(signal);
    } catch {
      // Already gone.
    }
    const timer = setTimeout(() => {
      try {
        this.child.kill("SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }, WAIT_MS);
    try {
      const status = await this.child.status;
      await this.#reading;
      return status;
    } finally {
      clearTimeout(timer);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

Deno.test("main.ts flags prints the scoped grants of a sample config, and --shell the same words quoted", async () => {
  await using home = await makeHome(
    `llm_url = "http://127.0.0.1:8123"\ntools_dirs = ${
      JSON.stringify([FIXTURE_TOOLS])
    }\n`,
  );
  const h = home.home;
  const flags = await printedFlags(home.env);
  assert.equal(flags.at(-1), V8_FLAGS, "the heap settings come last");
  const byKind = new Map(
    flags.slice(0, -1).map((flag) => {
      const match = flag.match(/^--allow-(\w+)=(.+)$/);
      assert.ok(match, `every flag is scoped: ${flag}`);
      return [match[1]!, match[2]!.split(",")] as const;
    }),
  );
  assert.deepEqual([...byKind.keys()], ["read", "write", "net", "run", "env"]);
  assert.deepEqual(byKind.get("net"), [
    "127.0.0.1:8123",
    `unix:${home.socket}`,
  ]);
  assert.deepEqual(byKind.get("write"), [
    `${h}/data/desktop-assistant`,
    home.socket,
  ]);
  // The flags list each kind's paths sorted; where the checkout sits decides
  // whether the fixture dir sorts before or after the temp home.
  assert.deepEqual(
    byKind.get("read"),
    [
      `${h}/config/desktop-assistant`,
      `${h}/data/desktop-assistant`,
      home.socket,
      FIXTURE_TOOLS,
    ].sort(),
  );
  assert.deepEqual(byKind.get("env"), [
    "HOME",
    "PATH",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
  ]);
  const run = byKind.get("run")!;
  for (const script of ["echo_args.sh", "gate.sh", "sleeper.sh", "touch.sh"]) {
    assert.ok(run.includes(join(FIXTURE_TOOLS, script)), `${script} in ${run}`);
  }
  assert.ok(!run.some((exe) => basename(exe) === "timeout"), "no helper");
  assert.ok(run.every((exe) => exe.startsWith("/")), "absolute paths only");

  const shell = await deno(
    ["run", ...LAUNCHER, MAIN, "flags", "--shell"],
    home.env,
  );
  assert.equal(shell.code, 0, shell.stderr);
  assert.equal(shell.stdout.split("\n").length, 2, "one line");
  const words = await new Deno.Command("bash", {
    args: ["-c", 'eval "set -- $1"; printf "%s\\n" "$@"', "-", shell.stdout],
    stdout: "piped",
  }).output();
  assert.deepEqual(
    new TextDecoder().decode(words.stdout).trimEnd().split("\n"),
    flags,
  );

  await Deno.writeTextFile(home.configFile, "tool_group_kill = true\n", {
    append: true,
  });
  const widened = await printedFlags(home.env);
  const runFlag = widened.find((flag) => flag.startsWith("--allow-run="))!;
  const helpers = runFlag.split("=")[1]!.split(",").filter((exe) =>
    basename(exe) === "timeout"
  );
  assert.equal(helpers.length, 1, `the group kill helper in ${runFlag}`);
  assert.deepEqual(
    widened.filter((flag) => flag !== runFlag),
    flags.filter((flag) => !flag.startsWith("--allow-run=")),
    "only --allow-run widens",
  );

  // A document converter's program is granted too, resolved to a path.
  const converter = join(h, "config", "desktop-assistant", "shout.sh");
  await Deno.writeTextFile(converter, "#!/bin/sh\ntr a-z A-Z\n", {
    mode: 0o755,
  });
  await Deno.writeTextFile(
    home.configFile,
    '[convert]\n"text/x-shout" = ["./shout.sh"]\n',
    { append: true },
  );
  const converting = await printedFlags(home.env);
  const granted = converting.find((flag) => flag.startsWith("--allow-run="))!
    .split("=")[1]!.split(",");
  assert.ok(granted.includes(converter), `${converter} in ${granted}`);
});

Deno.test("deno task start runs the daemon with exactly the derived flags and no launcher; a turn with a tool call completes; SIGTERM and SIGINT reach it", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = ${
      JSON.stringify([FIXTURE_TOOLS])
    }\n`,
  );
  const flags = await printedFlags(home.env);
  const task = new Running(["task", "start"], home.env, ROOT);
  await using _task = task;
  await task.waitFor(/ info listening socket=/);

  await using client = await SocketClient.connect(home.socket);
  await client.next("hello");
  await client.send({ type: "ping" });
  const pong = await client.next("pong");
  // `deno task` and the daemon: nothing else stays resident.
  assert.deepEqual(descendants(task.child.pid), [pong.pid]);
  const argv = argvOf(pong.pid);
  const from = argv.indexOf("--no-prompt");
  assert.deepEqual(argv.slice(1, from + 1), [
    "run",
    `--lock=${ROOT}deno.lock`,
    "--frozen",
    "--no-prompt",
  ]);
  assert.deepEqual(argv.slice(from + 1), [...flags, "main.ts", "serve"]);

  llm.enqueue(
    reply({
      toolCalls: [{ name: "echo_args", arguments: '{"text":"hi there"}' }],
    }),
    reply({ content: ["It ", "echoed."] }),
  );
  await client.send({ type: "ask", text: "Echo something" });
  const events = await client.until((e) =>
    e.type === "done" || e.type === "error"
  );
  assert.deepEqual(
    events.filter((e) => e.type === "tool"),
    [
      { type: "tool", name: "echo_args", done: false },
      { type: "tool", name: "echo_args", done: true },
    ],
  );
  assert.deepEqual(withoutTimings(events.at(-1)!), {
    type: "done",
    id: 1,
    stopped: false,
  });
  const second = llm.chats[1]?.body as { messages: { content: string }[] };
  assert.match(second.messages.at(-1)!.content, /^argc=5\n\[hi there\]/);

  // A signal to `deno task` (a service manager's SIGTERM) reaches the daemon.
  const status = await task.stop("SIGTERM");
  assert.equal(status.code, 0, task.log);
  assert.match(task.log, / info exit code=0 reason=SIGTERM\n$/);
  assert.equal(await exists(home.socket), false, "socket removed");
  await client.closed();

  // And SIGINT, as Ctrl-C sends it.
  await using again = new Running(["task", "start"], home.env, ROOT);
  await again.waitFor(/ info listening socket=/);
  const interrupted = await again.stop("SIGINT");
  assert.equal(interrupted.code, 0, again.log);
  assert.match(again.log, / info exit code=0 reason=SIGINT\n$/);
});

Deno.test("main.ts flags --task refuses a flag that deno task would split, and deno task start then says that alone", async () => {
  await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n`);
  const spaced = `${home.home}/my tools`;
  await Deno.mkdir(spaced);
  await Deno.writeTextFile(
    home.configFile,
    `tools_dirs = ${JSON.stringify([spaced])}\n`,
    { append: true },
  );
  const plain = await deno(["run", ...LAUNCHER, MAIN, "flags"], home.env);
  assert.equal(plain.code, 0, plain.stderr);
  assert.ok(plain.stdout.includes(spaced), "one flag per line keeps it whole");
  const task = await deno(
    ["run", ...LAUNCHER, MAIN, "flags", "--task"],
    home.env,
  );
  assert.equal(task.code, 1);
  assert.equal(task.stdout, "false\n", "what the task runs instead");
  assert.match(
    task.stderr,
    /^The argument .* contains whitespace, .*assistant\.sh start.*\n$/,
  );

  const started = await deno(["task", "--quiet", "start"], home.env, ROOT);
  assert.equal(started.code, 1);
  assert.equal(started.stderr, task.stderr, "the one message");
  assert.equal(await exists(home.socket), false, "never listened");
});

Deno.test("main.ts flags --task prints the whole command deno task start runs", async () => {
  await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n`);
  const flags = await printedFlags(home.env);
  const task = await deno(
    ["run", ...LAUNCHER, MAIN, "flags", "--task"],
    home.env,
  );
  assert.equal(task.code, 0, task.stderr);
  assert.deepEqual(task.stdout.trimEnd().split("\n"), [
    Deno.execPath(),
    "run",
    `--lock=${ROOT}deno.lock`,
    "--frozen",
    "--no-prompt",
    ...flags,
    "main.ts",
    "serve",
  ]);
});

Deno.test("taskCommand hands the runtime directory found without XDG_RUNTIME_DIR to the process it starts", () => {
  const args = ["run", "--quiet", "main.ts", "chat"];
  assert.deepEqual(taskCommand(args, "/run/user/1000", envOf({})), [
    "env",
    "XDG_RUNTIME_DIR=/run/user/1000",
    Deno.execPath(),
    ...args,
  ]);
  assert.deepEqual(
    taskCommand(args, "/run/user/1000", envOf({ XDG_RUNTIME_DIR: "" }))[0],
    "env",
  );
  assert.deepEqual(
    taskCommand(args, "/srv/run", envOf({ XDG_RUNTIME_DIR: "/srv/run" })),
    [Deno.execPath(), ...args],
  );
});

/** Whether this user has a /run/user/<uid> the fallback would take, so a start without XDG_RUNTIME_DIR would succeed. */
function runUserDirFit(): boolean {
  try {
    const info = Deno.lstatSync(`/run/user/${Deno.uid()}`);
    return info.isDirectory && info.uid === Deno.uid() &&
      ((info.mode ?? 0) & 0o777) === 0o700;
  } catch {
    return false;
  }
}

Deno.test({
  name:
    "without XDG_RUNTIME_DIR or a fit /run/user/<uid>, deno task start, chat, ask and web each say so in one message",
  ignore: runUserDirFit(),
  async fn() {
    await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n`);
    const env = { ...home.env };
    delete env.XDG_RUNTIME_DIR;
    for (const args of [["start"], ["chat"], ["ask", "Anyone?"], ["web"]]) {
      const result = await deno(["task", "--quiet", ...args], env, ROOT);
      const name = args[0]!;
      assert.equal(result.code, 1, `${name}: ${result.stderr}`);
      assert.equal(result.stdout, "", name);
      assert.match(
        result.stderr,
        /^XDG_RUNTIME_DIR is not set, and \/run\/user\/\d+ (does not exist|is not a directory|belongs to|has mode)[^\n]*: set XDG_RUNTIME_DIR to [^\n]*\n$/,
        name,
      );
    }
  },
});

Deno.test("a client launcher without --allow-sys says which grant looking for /run/user/<uid> takes", async () => {
  const env = inheritedEnv();
  delete env.XDG_RUNTIME_DIR;
  const result = await deno(
    [
      "run",
      "--quiet",
      "--no-prompt",
      "--allow-env=XDG_RUNTIME_DIR",
      MAIN,
      "client-flags",
      "--task",
      "chat",
    ],
    env,
  );
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stdout, "false\n");
  assert.match(
    result.stderr,
    /^XDG_RUNTIME_DIR is not set, and this process may not look for \/run\/user\/<uid> \(it needs --allow-sys=uid\): set XDG_RUNTIME_DIR to [^\n]*\n$/,
  );
});

Deno.test("flags derived for another llm_url host: the daemon refuses at start, naming the missing --allow-net", async () => {
  await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n`);
  const flags = await printedFlags(home.env);
  await Deno.writeTextFile(
    home.configFile,
    `llm_url = "http://127.0.0.1:8124"\n`,
  );
  const result = await deno(
    ["run", "--quiet", "--no-prompt", ...flags, MAIN, "serve"],
    home.env,
  );
  assert.equal(result.code, 1);
  assert.match(result.stderr, /--allow-net=127\.0\.0\.1:8124/);
  assert.doesNotMatch(result.stderr, /--allow-net=127\.0\.0\.1:8123/);
  assert.match(result.stderr, / error exit code=1 error=/);
  assert.equal(await exists(home.socket), false, "never listened");
});

Deno.test("a tool file added after the flags were derived is left out, naming --allow-run; the other tools work", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome("");
  const tools = `${home.home}/config/desktop-assistant/tools`;
  await Deno.mkdir(tools);
  for (const file of ["echo_args.toml", "echo_args.sh"]) {
    await Deno.copyFile(join(FIXTURE_TOOLS, file), join(tools, file));
  }
  await Deno.writeTextFile(
    home.configFile,
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = ["tools"]\n`,
  );
  const flags = await printedFlags(home.env);
  for (const file of ["touch.toml", "touch.sh"]) {
    await Deno.copyFile(join(FIXTURE_TOOLS, file), join(tools, file));
  }
  await using daemon = new Running(
    ["run", "--quiet", "--no-prompt", ...flags, MAIN, "serve"],
    home.env,
  );
  await daemon.waitFor(/ info listening socket=.* tools=1 skipped=1/);
  assert.match(
    daemon.log,
    new RegExp(
      `warn tool skipped file=${tools}/touch\\.toml reason="--allow-run does not cover ${tools}/touch\\.sh"`,
    ),
  );

  await using client = await SocketClient.connect(home.socket);
  await client.next("hello");
  const marker = `${home.home}/touched`;
  llm.enqueue(
    reply({
      toolCalls: [
        { name: "echo_args", arguments: '{"text":"ok"}' },
        { name: "touch", arguments: JSON.stringify({ path: marker }) },
      ],
    }),
    reply({ content: ["Done."] }),
  );
  await client.send({ type: "ask", text: "Use both tools" });
  const events = await client.until((e) => e.type === "done");
  assert.deepEqual(withoutTimings(events.at(-1)!), {
    type: "done",
    id: 1,
    stopped: false,
  });
  const body = llm.chats[1]?.body as { messages: { content: string }[] };
  const results = body.messages.slice(-2).map((m) => m.content);
  assert.match(results[0]!, /^argc=5\n\[ok\]/);
  assert.match(
    results[1]!,
    /^Unknown tool "touch"\. Available tools: echo_args\.$/,
  );
  assert.equal(await exists(marker), false, "the left-out tool never ran");
});

Deno.test("a TOML syntax error, a wrong type and a URL with credentials each stop the start in one message, naming the file and line or key, quoting no secret", async (t) => {
  const secret = "sk-live-51a2";
  const cases = [
    {
      name: "syntax error beside a secret",
      text: [
        `llm_url = "http://127.0.0.1:8123"`,
        "[mcp.search]",
        `command = ["search"]`,
        `env = { API_KEY = "${secret}" }`,
        "timeout = = 5",
        "",
      ].join("\n"),
      expect: /config\.toml:5:\d+: /,
    },
    {
      name: "wrong type",
      text: `llm_url = "http://127.0.0.1:8123"\nhistory_turns = "ten"\n`,
      expect:
        /config\.toml:2: key \\?"history_turns\\?" must be a non-negative integer, got string \\?"ten\\?"/,
    },
    {
      name: "a new key's bad value",
      text: `llm_url = "http://127.0.0.1:8123"\n\ncache_reuse = -1\n`,
      expect:
        /config\.toml:3: key \\?"cache_reuse\\?" must be a non-negative integer of tokens/,
    },
    {
      name: "credentials in llm_url",
      // A user name of letters that no hex temp dir name holds.
      text: `llm_url = "http://zoe:${secret}@127.0.0.1:8123"\n`,
      expect:
        /config\.toml:1: key \\?"llm_url\\?" must be an http\(s\) base URL .*, got string \\?"http:\/\/…@127\.0\.0\.1:8123\/\\?"/,
    },
  ];
  for (const { name, text, expect } of cases) {
    await t.step(name, async () => {
      await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n`);
      const flags = await printedFlags(home.env);
      await Deno.writeTextFile(home.configFile, text);

      // Through deno task start: the flags are not derived, so no daemon
      // starts, and the reason is the only line.
      const launched = await deno(["task", "--quiet", "start"], home.env, ROOT);
      assert.equal(launched.code, 1);
      assert.match(launched.stderr, expect);
      assert.match(launched.stderr, new RegExp(home.configFile));
      assert.equal(launched.stderr.split("\n").length, 2, launched.stderr);
      assert.ok(!launched.stderr.includes(secret), launched.stderr);

      // The daemon itself, started with flags from before the edit: what it
      // logs at exit quotes no secret either.
      const direct = await deno(
        ["run", "--quiet", "--no-prompt", ...flags, MAIN, "serve"],
        home.env,
      );
      assert.equal(direct.code, 1);
      assert.match(direct.stderr, expect);
      assert.match(direct.stderr, / error exit code=1 /);
      assert.ok(!direct.stderr.includes(secret), direct.stderr);
      assert.ok(!direct.stderr.includes("zoe"), direct.stderr);
      assert.equal(await exists(home.socket), false, "never listened");
    });
  }
});

Deno.test("deno task start with several config problems prints each, then the warnings, and starts nothing", async () => {
  await using home = await makeHome(
    [
      `llm_url = "http://127.0.0.1:8123"`,
      "histroy_turns = 4",
      "[request]",
      `max_tokens = "60"`,
      "top_p = 2",
    ].join("\n"),
  );
  const launched = await deno(["task", "--quiet", "start"], home.env, ROOT);
  assert.equal(launched.code, 1);
  assert.deepEqual(launched.stderr.trimEnd().split("\n"), [
    `${home.configFile}:4: key "request.max_tokens" must be an integer of tokens, or -1 for no limit, got string "60"`,
    `${home.configFile}:5: key "request.top_p" must be a number from 0 to 1, got number 2`,
    `warning: unknown key "histroy_turns" in ${home.configFile}: did you mean "history_turns"?`,
  ]);
  assert.equal(await exists(home.socket), false, "never listened");
});

Deno.test("shellQuote: bash reads back every word exactly", async () => {
  const words = [
    "--allow-read=/plain/path",
    "/with space/and'quote",
    '$HOME `x` \\ "q" *?[a]',
    "",
    "naïve/ünïcode",
  ];
  const out = await new Deno.Command("bash", {
    args: ["-c", `printf '%s\\0' ${words.map(shellQuote).join(" ")}`],
    stdout: "piped",
  }).output();
  assert.deepEqual(
    new TextDecoder().decode(out.stdout).split("\0").slice(0, -1),
    words,
  );
});

Deno.test("compiledFlags: the binary reads its embedded tools dir and runs the user's copies, never the repository's scripts", async () => {
  const previous = setLogSink({ write() {} });
  try {
    await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n`);
    const user = `${home.home}/config/desktop-assistant/tools`;
    await Deno.mkdir(user);
    for (const file of ["wikipedia.toml", "wikipedia.sh"]) {
      await Deno.copyFile(
        new URL(`../../tools/${file}`, import.meta.url),
        join(user, file),
      );
    }
    const derived = await deriveDaemonFlags({ env: (name) => home.env[name] });
    const repoTools = derived.paths.bundledToolsDir;
    assert.ok(derived.executables.includes(`${repoTools}/weather.sh`));
    const flags = compiledFlags(
      derived,
      "/opt/da/dist/desktop-assistant",
      "/var/tmp",
    );
    const read = flags.find((f) => f.startsWith("--allow-read="))!;
    const run = flags.find((f) => f.startsWith("--allow-run="))!;
    assert.ok(
      read.split(/[=,]/).includes(
        "/var/tmp/deno-compile-desktop-assistant/tools",
      ),
      read,
    );
    assert.ok(!read.split(/[=,]/).includes(repoTools), read);
    const runs = run.slice("--allow-run=".length).split(",");
    assert.ok(runs.includes(`${user}/wikipedia.sh`), run);
    assert.ok(runs.every((exe) => !exe.startsWith(`${repoTools}/`)), run);
    assert.ok(runs.some((exe) => exe.endsWith("/date")), run);
    // Everything else is what `main.ts flags` prints.
    const others = (list: string[]) =>
      list.filter((f) => !/^--allow-(read|run)=/.test(f));
    assert.deepEqual(others(flags), others(derived.flags));
  } finally {
    setLogSink(previous);
  }
});

Deno.test("deno task lists every task with a description", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    tasks: Record<string, { command?: unknown; description?: unknown }>;
  };
  const tasks = Object.entries(config.tasks);
  assert.ok(tasks.length >= 9, "start, chat, ask, web, test, check, …");
  const listed = await new Deno.Command(Deno.execPath(), {
    args: ["task"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(listed.stdout) +
    new TextDecoder().decode(listed.stderr);
  for (const [name, task] of tasks) {
    assert.equal(typeof task.command, "string", name);
    assert.equal(typeof task.description, "string", name);
    assert.ok((task.description as string).length > 10, name);
    assert.ok(text.includes(`- ${name}\n`), `${name} listed`);
    assert.ok(text.includes(`// ${task.description}\n`), `${name} described`);
  }
});

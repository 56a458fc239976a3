/**
 * The canvas process as a browser (or an attacker) meets it: `main.ts web`
 * with exactly its derived grants, the daemon as a subprocess, raw HTTP for
 * the refusals and a WebSocket for the bridge.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { newToken } from "../../src/web/access.ts";
import { webCommandWords } from "../../src/launch/web_flags.ts";
import { WEB_DIR } from "../../src/web/static_files.ts";
import { parseWebArgs, webFlags } from "../../src/web/web.ts";
import {
  clientEnv,
  ClientProcess,
  MAIN,
  runClient,
  within,
} from "../support/client_harness.ts";
import { Daemon, daemonEnv, inheritedEnv } from "../support/daemon_harness.ts";
import { argvOf, descendants } from "../support/process_tree.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { SocketClient } from "../support/socket_client.ts";
import {
  PageSocket,
  rawRequest,
  upgradeHeaders,
  WebProcess,
} from "../support/web_harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function stack() {
  const llm = await FakeLlm.start();
  const daemon = await Daemon.start({ llmUrl: llm.url });
  const web = await WebProcess.start(
    daemon.paths.socketPath,
    daemon.env.XDG_RUNTIME_DIR!,
  );
  return {
    llm,
    daemon,
    web,
    async [Symbol.asyncDispose]() {
      await web[Symbol.asyncDispose]();
      await daemon[Symbol.asyncDispose]();
      await llm[Symbol.asyncDispose]();
    },
  };
}

Deno.test("the canvas serves the page with its token, under a policy that keeps it to itself", async () => {
  await using s = await stack();
  const { web } = s;
  const host: [string, string] = ["Host", web.host];
  const page = await rawRequest(web.port, `/${web.token}/`, [host]);
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type")!, /^text\/html/);
  assert.equal(
    page.body,
    await Deno.readTextFile(join(WEB_DIR, "index.html")),
  );
  const csp = page.headers.get("content-security-policy")!;
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /connect-src 'self'(;|$)/);
  assert.equal(page.headers.get("cache-control"), "no-store");
  assert.equal(page.headers.get("referrer-policy"), "no-referrer");
  assert.equal(page.headers.get("x-frame-options"), "DENY");

  const script = await rawRequest(web.port, `/${web.token}/app.js`, [host]);
  assert.equal(script.status, 200);
  assert.match(script.headers.get("content-type")!, /^text\/javascript/);
  const vendor = await rawRequest(
    web.port,
    `/${web.token}/vendor/markdown-it.esm.min.mjs`,
    [host],
  );
  assert.equal(vendor.status, 200);
  assert.match(vendor.body, /markdown-it 15\.0\.3/);

  const bare = await rawRequest(web.port, `/${web.token}`, [host]);
  assert.equal(bare.status, 308);
  assert.equal(bare.headers.get("location"), `/${web.token}/`);
  const missing = await rawRequest(web.port, `/${web.token}/nope.js`, [host]);
  assert.equal(missing.status, 404);
  // Only the page's own files exist: nothing above web/ can be named.
  for (
    const path of [
      `/${web.token}/../deno.json`,
      `/${web.token}/%2e%2e/deno.json`,
      `/${web.token}/vendor/../../main.ts`,
    ]
  ) {
    const answer = await rawRequest(web.port, path, [host]);
    assert.ok(answer.status === 403 || answer.status === 404, path);
    assert.doesNotMatch(answer.body, /"tasks"|import/, path);
  }
});

Deno.test("over HTTP, no token, a wrong token, a foreign Origin and a foreign Host each get 403", async () => {
  await using s = await stack();
  const { web } = s;
  const cases: [string, string, [string, string][]][] = [
    ["no token", "/", [["Host", web.host]]],
    ["no token, a file", "/app.js", [["Host", web.host]]],
    ["a wrong token", `/${newToken()}/`, [["Host", web.host]]],
    ["the token as a query", `/?token=${web.token}`, [["Host", web.host]]],
    ["a foreign Origin", `/${web.token}/`, [["Host", web.host], [
      "Origin",
      "http://evil.example",
    ]]],
    ["a rebound name", `/${web.token}/`, [[
      "Host",
      `evil.example:${web.port}`,
    ]]],
    ["localhost", `/${web.token}/`, [["Host", `localhost:${web.port}`]]],
    ["no Host", `/${web.token}/`, []],
  ];
  for (const [what, path, headers] of cases) {
    const answer = await rawRequest(web.port, path, headers);
    assert.equal(answer.status, 403, what);
    assert.match(answer.body, /^Forbidden/, what);
    assert.doesNotMatch(answer.body, /desktop-assistant|<html/, what);
  }
  assert.doesNotMatch(web.log, /web page connected/);
  // The refusals are logged by kind; the token never is.
  assert.match(web.log, /web request refused reason=token/);
  assert.match(web.log, /web request refused reason=origin/);
  assert.match(web.log, /web request refused reason=host/);
  assert.ok(!web.log.includes(web.token));
});

Deno.test("over the WebSocket, no token, a wrong token, a foreign or missing Origin and a foreign Host each get 403", async () => {
  await using s = await stack();
  const { web, daemon } = s;
  const origin = web.origin;
  const cases: [string, string, [string, string][]][] = [
    ["no token", "/ws", upgradeHeaders(web.host, origin)],
    ["a wrong token", `/${newToken()}/ws`, upgradeHeaders(web.host, origin)],
    [
      "a foreign Origin",
      `/${web.token}/ws`,
      upgradeHeaders(web.host, "http://evil.example"),
    ],
    [
      "another port's Origin",
      `/${web.token}/ws`,
      upgradeHeaders(web.host, `http://127.0.0.1:${web.port + 1}`),
    ],
    ["no Origin", `/${web.token}/ws`, upgradeHeaders(web.host, null)],
    [
      "a rebound name",
      `/${web.token}/ws`,
      upgradeHeaders(
        `evil.example:${web.port}`,
        `http://evil.example:${web.port}`,
      ),
    ],
  ];
  for (const [what, path, headers] of cases) {
    const answer = await rawRequest(web.port, path, headers);
    assert.equal(answer.status, 403, what);
  }
  // The same upgrade with everything right is taken.
  const good = await rawRequest(
    web.port,
    `/${web.token}/ws`,
    upgradeHeaders(web.host, origin),
  );
  assert.equal(good.status, 101);
  // A real client through Deno's WebSocket, with a foreign Origin, fails too.
  await using foreign = new PageSocket(web.socketUrl, "http://evil.example");
  await assert.rejects(foreign.opened);
  // None of the refused ones reached the daemon: one connection, the good one.
  await within(
    (async () => {
      while (!/client connected/.test(daemon.log)) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })(),
    "the good upgrade's connection",
  );
  assert.equal(daemon.log.match(/client connected/g)?.length, 1);
});

Deno.test("the bridge is line for line: the page sees exactly what a socket client sees", async () => {
  await using s = await stack();
  const { web, daemon, llm } = s;
  await using page = new PageSocket(web.socketUrl, web.origin);
  await page.opened;
  const hello = await page.next();
  assert.equal(hello.type, "hello");
  assert.equal(hello.id, null);
  await using direct = await SocketClient.connect(daemon.paths.socketPath);
  await direct.next("hello");

  page.send({ type: "ping" });
  const pong = await page.next();
  assert.equal(pong.type, "pong");
  page.send("this is not JSON");
  assert.deepEqual(await page.next(), {
    type: "error",
    code: "bad_command",
    message: 'bad command: a JSON object with a string "type" per line',
  });

  llm.enqueue(reply({ think: ["Hm", "m."], content: ["Hel", "lo", " ✓"] }));
  page.send({ type: "ask", text: "Say hello" });
  const seen = await page.until((m) =>
    m.type === "state" && m.state === "idle"
  );
  const direct_ = await direct.until((e) =>
    e.type === "state" && e.state === "idle"
  );
  assert.deepEqual(seen, direct_);
  assert.deepEqual(
    seen.filter((m) => m.type === "token").map((m) => m.delta).join(""),
    "Hello ✓",
  );
});

Deno.test("the page learns why the bridge closed: no daemon, the daemon gone, a binary frame", async () => {
  const home = await Deno.makeTempDir({ prefix: "da-web-" });
  try {
    const runtime = join(home, "run");
    await Deno.mkdir(runtime, { mode: 0o700 });
    await using web = await WebProcess.start(
      join(runtime, "desktop-assistant.sock"),
      runtime,
    );
    await using page = new PageSocket(web.socketUrl, web.origin);
    const closed = await within(page.closed, "the close");
    assert.equal(closed.code, 4001);
    assert.match(closed.reason, /no daemon answers.*deno task start/);
  } finally {
    await Deno.remove(home, { recursive: true });
  }

  await using s = await stack();
  await using binary = new PageSocket(s.web.socketUrl, s.web.origin);
  await binary.next("hello");
  binary.ws.send(new Uint8Array([1, 2, 3]));
  assert.equal((await within(binary.closed, "the close")).code, 1003);

  await using page = new PageSocket(s.web.socketUrl, s.web.origin);
  await page.next("hello");
  await s.daemon.stop();
  const closed = await within(page.closed, "the close");
  assert.equal(closed.code, 4000);
  assert.match(closed.reason, /daemon closed/);
});

Deno.test("SIGTERM closes the pages' sockets and ends the canvas with 0", async () => {
  await using s = await stack();
  await using page = new PageSocket(s.web.socketUrl, s.web.origin);
  await page.next("hello");
  assert.equal(await s.web.stop(), 0);
  assert.equal((await page.closed).code, 1001);
  assert.match(s.web.log, /web canvas stopping pages=1/);
});

Deno.test("the canvas's grants are its address, the socket and its files, none of the daemon's", async () => {
  const socket = "/run/user/1000/desktop-assistant.sock";
  assert.deepEqual(webFlags({ socketPath: socket, port: 8765 }), [
    `--allow-net=127.0.0.1:8765,unix:${socket}`,
    `--allow-read=${socket},${WEB_DIR}`,
    `--allow-write=${socket}`,
    "--allow-env=XDG_RUNTIME_DIR",
  ]);

  // Without its net grant it refuses to start and names the flag.
  const home = await Deno.makeTempDir({ prefix: "da-web-" });
  try {
    const runtime = join(home, "run");
    await Deno.mkdir(runtime, { mode: 0o700 });
    const path = join(runtime, "desktop-assistant.sock");
    const flags = webFlags({ socketPath: path, port: 0 })
      .filter((flag) => !flag.startsWith("--allow-net"));
    const { code, stderr } = await runClient(
      ["run", "--quiet", "--no-prompt", ...flags, MAIN, "web", "--port", "0"],
      clientEnv(runtime),
    );
    assert.equal(code, 1);
    assert.match(
      stderr,
      /needs --allow-net=127\.0\.0\.1:0 --allow-net=unix:\S+: start it with deno task web/,
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("web-flags takes the port from web_port, and --port wins", async () => {
  const home = await Deno.makeTempDir({ prefix: "da-web-" });
  try {
    const env: Record<string, string> = {
      HOME: home,
      XDG_RUNTIME_DIR: join(home, "run"),
      XDG_CONFIG_HOME: join(home, "config"),
    };
    const configDir = join(home, "config", "desktop-assistant");
    await Deno.mkdir(configDir, { recursive: true });
    await Deno.writeTextFile(
      join(configDir, "config.toml"),
      "web_port = 9123\n",
    );
    const socket = join(home, "run", "desktop-assistant.sock");
    const words = await webCommandWords([], (name) => env[name]);
    assert.deepEqual(words, [
      ...webFlags({ socketPath: socket, port: 9123 }),
      MAIN,
      "web",
      "--port",
      "9123",
    ]);
    const given = await webCommandWords(
      ["--port", "9200"],
      (name) => env[name],
    );
    assert.deepEqual(given.slice(-3), ["web", "--port", "9200"]);
    assert.ok(given.includes(`--allow-net=127.0.0.1:9200,unix:${socket}`));
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("deno task web runs the canvas with exactly its flags and nothing else resident; SIGTERM ends it", async () => {
  await using llm = await FakeLlm.start();
  const home = await Deno.makeTempDir({ prefix: "da-web-task-" });
  try {
    await using daemon = await Daemon.start({
      llmUrl: llm.url,
      home,
      config: "web_port = 0\n",
    });
    const env = { ...daemonEnv(home), DENO_DIR: inheritedEnv().DENO_DIR! };
    const task = ClientProcess.spawn(
      ["task", "--quiet", "--config", join(ROOT, "deno.json"), "web"],
      { env },
    );
    await using _task = task;
    await task.waitFor(/canvas: http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/\n/);
    const url = task.stdout.match(/http:\/\/127\.0\.0\.1:\d+\/[\w-]+\//)![0];
    // `deno task` and the canvas: nothing else stays resident.
    const below = descendants(task.child.pid);
    assert.equal(below.length, 1, `processes below deno task: ${below}`);
    const argv = argvOf(below[0]!);
    const from = argv.indexOf("--no-prompt");
    assert.deepEqual(argv.slice(1, from + 1), [
      "run",
      `--lock=${ROOT}deno.lock`,
      "--frozen",
      "--quiet",
      "--no-prompt",
    ]);
    assert.deepEqual(argv.slice(from + 1), [
      ...webFlags({ socketPath: daemon.paths.socketPath, port: 0 }),
      MAIN,
      "web",
      "--port",
      "0",
    ]);
    const port = Number(new URL(url).port);
    await using page = new PageSocket(
      `ws://127.0.0.1:${port}${new URL(url).pathname}ws`,
      `http://127.0.0.1:${port}`,
    );
    assert.equal((await page.next()).type, "hello");
    task.child.kill("SIGTERM");
    assert.equal(await task.exit(), 0);
    assert.equal((await page.closed).code, 1001);
  } finally {
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
});

Deno.test("web's command line: --port N or --port=N, and a bad port or a stray word is named with the usage", () => {
  assert.deepEqual(parseWebArgs([]), { port: 8765 });
  assert.deepEqual(parseWebArgs(["--port", "9200"]), { port: 9200 });
  assert.deepEqual(parseWebArgs(["--port=0"]), { port: 0 });
  const usage = "usage: main.ts web [--port N]";
  assert.throws(() => parseWebArgs(["--port"]), {
    message: `--port needs a port number from 0 to 65535: ${usage}`,
  });
  for (const bad of ["x", "70000", "1.5"]) {
    assert.throws(() => parseWebArgs(["--port", bad]), {
      message:
        `--port takes a port number from 0 to 65535, not "${bad}": ${usage}`,
    });
  }
  assert.throws(() => parseWebArgs(["stray"]), {
    message: `Unexpected argument stray: ${usage}`,
  });
});

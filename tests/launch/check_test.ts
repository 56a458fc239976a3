/**
 * `main.ts check` as `deno task check` runs it (the launcher, then the check
 * under the daemon's own flags): config, tools, llama-server and history.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { Store } from "../../src/store/store.ts";
import {
  Daemon,
  daemonEnv,
  exists,
  inheritedEnv,
} from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { withoutTimings } from "../support/socket_client.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const FIXTURE_TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname;
const LAUNCHER = [
  "--quiet",
  "--no-prompt",
  "--allow-read",
  "--allow-sys=uid",
  "--allow-env=HOME,PATH,TMPDIR,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME",
  "--allow-run=deno",
];

interface Home extends AsyncDisposable {
  home: string;
  env: Record<string, string>;
  configFile: string;
  dbPath: string;
}

async function makeHome(config: string): Promise<Home> {
  const home = await Deno.makeTempDir({ prefix: "da-check-" });
  const env = { ...inheritedEnv(), ...daemonEnv(home) };
  await Deno.mkdir(`${home}/run`, { mode: 0o700 });
  await Deno.mkdir(`${home}/config/desktop-assistant`, { recursive: true });
  const configFile = `${home}/config/desktop-assistant/config.toml`;
  await Deno.writeTextFile(configFile, config);
  return {
    home,
    env,
    configFile,
    dbPath: `${home}/data/desktop-assistant/history.db`,
    [Symbol.asyncDispose]: () => Deno.remove(home, { recursive: true }),
  };
}

/** `deno task check`: the launcher derives the flags and runs `main.ts check` with them. */
async function check(
  home: Home,
): Promise<{ code: number; lines: string[]; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...LAUNCHER, MAIN, "launch", "check"],
    env: home.env,
    clearEnv: true,
    stdin: "null",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const text = new TextDecoder();
  return {
    code: out.code,
    lines: text.decode(out.stdout).trimEnd().split("\n"),
    stderr: text.decode(out.stderr),
  };
}

/** A port on which nothing listens. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

Deno.test("check against the fake llama-server: every line ok, exit 0, and no database is created", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = []\n`,
  );
  const result = await check(home);
  assert.equal(result.code, 0, result.lines.join("\n") + result.stderr);
  assert.deepEqual(result.lines, [
    `ok   config: ${home.configFile}`,
    "ok   permissions: this process has every grant the config needs",
    "ok   tools: none loaded from no dirs",
    `ok   backend: up at ${llm.url}`,
    "ok   model: /srv/models/tiny.gguf (single model), context 4096 tokens, 1024 kept for the reply (reply_reserve)",
    "ok   prompt cache: not learnt yet for this model: the daemon learns it from the first requests after the history window moves; with compact on it moves in blocks, one summary a block",
    `ok   history: no database yet at ${home.dbPath}: the daemon creates it at its first start`,
    "ok   memories: none kept yet; carried in each new conversation within 300 tokens",
    "ok   embeddings: search by meaning is off (embed_url is empty): search is by words",
  ]);
  assert.equal(await exists(home.dbPath), false);
  assert.ok(llm.requests.some((r) => r.path === "/health"));
});

Deno.test("check prints the reply's reserve as the budget takes it: max_tokens, at most half the context", async () => {
  await using llm = await FakeLlm.start({
    models: [{ id: "/srv/models/tiny.gguf", nCtx: 8192 }],
  });
  await using home = await makeHome(
    `llm_url = ${
      JSON.stringify(llm.url)
    }\ntools_dirs = []\n[request]\nmax_tokens = 6000\n`,
  );
  const result = await check(home);
  assert.equal(result.code, 0, result.lines.join("\n") + result.stderr);
  assert.ok(
    result.lines.includes(
      "ok   model: /srv/models/tiny.gguf (single model), context 8192 tokens, 4096 kept for the reply (max_tokens in [request], capped at half the context)",
    ),
    result.lines.join("\n"),
  );
});

Deno.test("check prints what the daemon learnt of the model's prompt cache, and what cache_reuse = 0 makes of the window", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = []\ncompact = false\n`,
  );
  await Deno.mkdir(join(home.home, "data/desktop-assistant"), {
    recursive: true,
  });
  {
    using store = new Store(home.dbPath);
    store.setCacheShift("/srv/models/tiny.gguf", false);
  }
  const blocked = await check(home);
  assert.ok(
    blocked.lines.includes(
      "ok   prompt cache: llama-server cannot shift this model's cache (a sliding-window, recurrent or hybrid model): the history window moves in blocks of half of history_turns",
    ),
    blocked.lines.join("\n"),
  );
  {
    using store = new Store(home.dbPath);
    store.setCacheShift("/srv/models/tiny.gguf", true);
  }
  const sliding = await check(home);
  assert.ok(
    sliding.lines.includes(
      "ok   prompt cache: llama-server shifts this model's cache (n_cache_reuse works): the history window may slide a turn at a time",
    ),
    sliding.lines.join("\n"),
  );
  await Deno.writeTextFile(home.configFile, "cache_reuse = 0\n", {
    append: true,
  });
  const off = await check(home);
  assert.ok(
    off.lines.some((l) =>
      l.startsWith("ok   prompt cache: n_cache_reuse is off (cache_reuse = 0)")
    ),
    off.lines.join("\n"),
  );
});

Deno.test("check with nothing listening at llm_url: a fail line naming the URL, exit 1", async () => {
  const url = `http://127.0.0.1:${closedPort()}`;
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(url)}\ntools_dirs = []\n`,
  );
  const result = await check(home);
  assert.equal(result.code, 1);
  assert.ok(
    result.lines.includes(
      `fail backend: down: no connection to ${url} (connection refused): start llama-server there, or set llm_url in the config`,
    ),
    result.lines.join("\n"),
  );
  // The other checks still ran.
  assert.ok(result.lines.some((l) => l.startsWith("ok   history:")));
});

Deno.test("check against a router with no model loaded: fail, and no model is loaded by asking", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [{ id: "big", status: "unloaded" }, {
      id: "small",
      status: "loading",
    }],
  });
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = []\n`,
  );
  const result = await check(home);
  assert.equal(result.code, 1);
  assert.ok(
    result.lines.includes(
      `warn backend: loading at ${llm.url}: llama-server is loading small`,
    ),
    result.lines.join("\n"),
  );
  assert.ok(
    result.lines.includes(
      `fail model: no model loaded at ${llm.url}: load one in llama-server (the daemon never loads or swaps a model itself)`,
    ),
    result.lines.join("\n"),
  );
  assert.deepEqual(llm.autoloads, []);
  assert.deepEqual(llm.namedModels, []);
  assert.equal(llm.requests.some((r) => r.path.startsWith("/props")), false);
});

Deno.test("check prints no_model for a router with nothing loaded, and loading for a server loading its model", async () => {
  await using llm = await FakeLlm.start({
    mode: "router",
    models: [{ id: "big", status: "unloaded" }],
  });
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = []\n`,
  );
  const idle = await check(home);
  assert.equal(idle.code, 1);
  assert.ok(
    idle.lines.includes(
      `warn backend: no_model at ${llm.url}: no model is loaded or sleeping (the router knows 1): load one in llama-server`,
    ),
    idle.lines.join("\n"),
  );
  llm.setLoading(true);
  const loading = await check(home);
  assert.equal(loading.code, 1);
  assert.ok(
    loading.lines.includes(
      `warn backend: loading at ${llm.url}: llama-server is loading its model`,
    ),
    loading.lines.join("\n"),
  );
  assert.deepEqual(llm.namedModels, []);
});

Deno.test("check lists skipped tools as warnings with their reasons and still passes", async () => {
  await using llm = await FakeLlm.start();
  const broken = join(FIXTURE_TOOLS, "broken");
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = ${
      JSON.stringify([broken])
    }\nsurprise = 1\n`,
  );
  const result = await check(home);
  assert.equal(result.code, 0, result.lines.join("\n"));
  assert.ok(result.lines.includes("ok   tools: 1 loaded (good)"));
  assert.ok(
    result.lines.includes(
      `warn config: unknown key "surprise" in ${home.configFile}`,
    ),
  );
  const warned = result.lines.filter((l) => l.startsWith("warn tool: "));
  assert.equal(warned.length, 7, warned.join("\n"));
  assert.ok(
    warned.includes(
      `warn tool: ${broken}/missing_command.toml is left out: executable no-such-command-desktop-assistant was not found on PATH`,
    ),
    warned.join("\n"),
  );
  assert.ok(
    warned.some((l) =>
      l.startsWith(`warn tool: ${broken}/broken.toml is left out: `) &&
      l.includes("3:")
    ),
    warned.join("\n"),
  );
});

Deno.test("check runs the database's integrity checks: a sound file passes, a damaged index fails", async () => {
  await using llm = await FakeLlm.start();
  await using home = await makeHome(
    `llm_url = ${JSON.stringify(llm.url)}\ntools_dirs = []\n`,
  );
  {
    using store = new Store(home.dbPath);
    store.saveTurn(null, {
      user: "Where is Bologna",
      reply: "In Italy.",
      tools: [],
      messages: [],
    });
  }
  const sound = await check(home);
  assert.equal(sound.code, 0, sound.lines.join("\n"));
  assert.ok(
    sound.lines.includes(
      `ok   history: ${home.dbPath} passes SQLite's and the full-text index's integrity checks`,
    ),
  );

  // A 'delete' with the wrong text leaves the index out of step with the table.
  const db = new DatabaseSync(home.dbPath);
  db.exec(
    "INSERT INTO turns_fts(turns_fts, rowid, user, reply) VALUES ('delete', 1, 'other words', 'entirely')",
  );
  db.close();
  const damaged = await check(home);
  assert.equal(damaged.code, 1);
  const failed = damaged.lines.filter((l) => l.startsWith("fail history: "));
  assert.ok(failed.length >= 2, damaged.lines.join("\n"));
  assert.match(failed[0]!, /full-text index/);
  assert.match(failed.at(-1)!, /restore .* from a backup, or move it aside/);
});

Deno.test("check with a broken config: one fail line naming the file and line, exit 1", async () => {
  await using home = await makeHome(`llm_url = "http://127.0.0.1:8123"\n[\n`);
  const result = await check(home);
  assert.equal(result.code, 1);
  assert.equal(result.lines.length, 1, result.lines.join("\n"));
  assert.match(
    result.lines[0]!,
    new RegExp(`^fail config: ${home.configFile}:2:\\d+: `),
  );
});

Deno.test("check with several config problems: a fail line for each, in the file's order, then the warnings, exit 1", async () => {
  await using home = await makeHome(
    [
      `llm_url = "http://127.0.0.1:8123"`,
      "histroy_turns = 4",
      `thinking = "no"`,
      "",
      "[request",
      "temperature = 0.5",
    ].join("\n"),
  );
  const result = await check(home);
  assert.equal(result.code, 1);
  assert.deepEqual(result.lines, [
    `fail config: ${home.configFile}:3: key "thinking" must be a boolean, got string "no"`,
    `fail config: ${home.configFile}:5:9: this table header is not closed: end it with "]", as in [request]`,
    `warn config: unknown key "histroy_turns" in ${home.configFile}: did you mean "history_turns"?`,
  ]);
});

Deno.test("main.ts check run with its own grants reports every config problem the same way", async () => {
  await using home = await makeHome(
    `model = 3\nhistroy_turns = 4\n[request]\nseed = "42"\n`,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN, "check"],
    env: home.env,
    clearEnv: true,
    stdin: "null",
    signal: AbortSignal.timeout(60_000),
  }).output();
  assert.equal(out.code, 1);
  const lines = new TextDecoder().decode(out.stdout).trimEnd().split("\n");
  assert.deepEqual(lines.filter((line) => / config: /.test(line)), [
    `fail config: ${home.configFile}:1: key "model" must be a string, got number 3`,
    `fail config: ${home.configFile}:4: key "request.seed" must be an integer from 0 to 4294967295, or -1 for a random seed, got string "42"`,
    `warn config: unknown key "histroy_turns" in ${home.configFile}: did you mean "history_turns"?`,
  ]);
});

Deno.test("check beside a running daemon only reads the history, and the daemon saves meanwhile", async () => {
  await using llm = await FakeLlm.start();
  const home = await Deno.makeTempDir({ prefix: "da-check-live-" });
  try {
    await using daemon = await Daemon.start({ llmUrl: llm.url, home });
    await using client = await daemon.connect();
    await client.next("hello");
    await client.send({ type: "ask", text: "Save me" });
    await client.until((e) => e.type === "done");
    const result = await check({
      home,
      env: { ...inheritedEnv(), ...daemonEnv(home) },
      configFile: daemon.paths.configFile,
      dbPath: daemon.paths.dbPath,
      [Symbol.asyncDispose]: async () => {},
    });
    assert.ok(
      result.lines.includes(
        `ok   history: ${daemon.paths.dbPath} passes SQLite's integrity checks (the full-text index is checked only while the daemon is stopped)`,
      ),
      result.lines.join("\n"),
    );
    await client.send({ type: "ask", text: "And me" });
    const events = await client.until((e) =>
      e.type === "done" || e.type === "error"
    );
    assert.deepEqual(withoutTimings(events.at(-1)!), {
      type: "done",
      id: 1,
      stopped: false,
    });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("check counts the memories, and says whether the embedding server answers and how far the vectors are", async () => {
  await using llm = await FakeLlm.start();
  await using embedder = await FakeLlm.start({
    models: [{ id: "/srv/models/embed.gguf", embeddings: true }],
  });
  await using home = await makeHome(
    `llm_url = "${llm.url}"\ntools_dirs = []\nembed_url = "${embedder.url}"\n`,
  );
  {
    using store = new Store(home.dbPath);
    store.saveTurn(null, {
      user: "Hi",
      reply: "Hello",
      tools: [],
      messages: [],
    });
    store.memories.add("Likes tea");
    store.memories.add("Lives in Oslo");
  }
  const { lines } = await check(home);
  assert.deepEqual(lines.slice(-3), [
    "ok   memories: 2 kept; carried in each new conversation within 300 tokens",
    `ok   embeddings: ${embedder.url} answers: model /srv/models/embed.gguf, 64 dimensions`,
    "ok   indexing: 0 of 1 turns have their vector; the daemon makes the rest in the background",
  ]);
  await embedder.stop();
  const down = await check(home);
  assert.match(
    down.lines.at(-1)!,
    /^fail embeddings: embedding server: unreachable at .*: search by meaning waits for it \(search by words still works\)$/,
  );
});

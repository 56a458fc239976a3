import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  DEFAULT_SYSTEM_PROMPT,
  defaultConfig,
  loadConfig,
  mergeTables,
  parseConfig,
} from "../../src/base/config.ts";
import { type Paths, resolvePaths } from "../../src/base/paths.ts";
import { envOf, XDG } from "../support/env_fixture.ts";
import { AssistantError } from "../../src/base/errors.ts";
import { describeError } from "../../src/base/log.ts";

const BUNDLED = fileURLToPath(new URL("../../tools", import.meta.url));

const PATHS: Paths = resolvePaths(XDG);
const FILE = "/srv/config/desktop-assistant/config.toml";

Deno.test("defaultConfig holds the documented defaults", () => {
  assert.deepEqual(defaultConfig(PATHS), {
    llm_url: "http://127.0.0.1:8080",
    model: "",
    thinking: true,
    system_prompt: DEFAULT_SYSTEM_PROMPT,
    history_turns: 10,
    reply_reserve: 1024,
    max_tool_rounds: 8,
    tool_timeout: 30,
    tool_output_limit: 16384,
    tool_group_kill: false,
    stall_timeout: 180,
    max_clients: 32,
    auto_title: false,
    backend_poll: 5,
    tools_dirs: ["/srv/config/desktop-assistant/tools", BUNDLED],
    confirm_tools: [],
    confirm_timeout: 120,
    web_port: 8765,
    cache_reuse: 256,
    compact: true,
    summary_tokens: 400,
    record_command: [
      "arecord",
      "-q",
      "-f",
      "S16_LE",
      "-r",
      "16000",
      "-c",
      "1",
      "-t",
      "wav",
    ],
    stt_url: "",
    stt_command: [],
    stt_model: "whisper-1",
    tts_command: ["espeak-ng", "--stdout"],
    tts_url: "",
    tts_model: "tts-1",
    tts_voice: "alloy",
    play_command: ["aplay", "-q"],
    speak: "own",
    convert: { "application/pdf": ["pdftotext", "-layout", "-", "-"] },
    memory: "ask",
    memory_idle: 120,
    memory_tokens: 300,
    embed_url: "",
    embed_model: "",
    recall: true,
    request: {},
    mcp: {},
  });
  assert.ok(!/spoken/i.test(DEFAULT_SYSTEM_PROMPT));
  assert.match(DEFAULT_SYSTEM_PROMPT, /Markdown/);
});

Deno.test("parseConfig merges the file over the defaults", () => {
  const { config, warnings, file } = parseConfig(
    [
      'llm_url = "http://10.0.0.5:9000/"',
      "thinking = false",
      "history_turns = 0",
      "backend_poll = 0",
      'tools_dirs = ["mine"]',
      "[request]",
      "temperature = 0.2",
      "[request.chat_template_kwargs]",
      'reasoning_effort = "low"',
    ].join("\n"),
    FILE,
    PATHS,
  );
  assert.equal(file, FILE);
  assert.deepEqual(warnings, []);
  assert.deepEqual(config, {
    ...defaultConfig(PATHS),
    llm_url: "http://10.0.0.5:9000",
    thinking: false,
    history_turns: 0,
    backend_poll: 0,
    tools_dirs: ["/srv/config/desktop-assistant/mine"],
    request: {
      temperature: 0.2,
      chat_template_kwargs: { reasoning_effort: "low" },
    },
  });
  assert.equal(
    JSON.stringify(config.request),
    '{"temperature":0.2,"chat_template_kwargs":{"reasoning_effort":"low"}}',
  );
});

Deno.test("mergeTables merges tables key by key and replaces the rest", () => {
  const merged = mergeTables(
    { a: { x: 1, y: [1, 2] }, b: "keep", c: [1] },
    JSON.parse(
      '{"a": {"y": [3], "z": {"k": true}}, "c": [], "__proto__": {"polluted": 1}}',
    ),
  );
  assert.deepEqual(merged.a, { x: 1, y: [3], z: { k: true } });
  assert.equal(merged.b, "keep");
  assert.deepEqual(merged.c, []);
  assert.equal(Object.getPrototypeOf(merged), Object.prototype);
  assert.deepEqual(Object.keys(merged), ["a", "b", "c", "__proto__"]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("unknown keys and daemon-owned request fields are warnings", () => {
  const { config, warnings } = parseConfig(
    "foo = 1\nmax_clients = 4\n[bar]\nx = 1\n[request]\nstream = false\ntop_p = 0.9\n",
    FILE,
    PATHS,
  );
  assert.deepEqual(warnings, [
    `unknown key "foo" in ${FILE}`,
    `unknown key "bar" in ${FILE}`,
    `key "request.stream" in ${FILE} is ignored: the daemon sets it`,
  ]);
  assert.equal(config.max_clients, 4);
  assert.equal("foo" in config, false);
});

Deno.test("a wrong type names the file, line, key and value", () => {
  assert.throws(
    () => parseConfig('model = "m"\n\nhistory_turns = "ten"\n', FILE, PATHS),
    {
      name: "TypeError",
      message:
        `${FILE}:3: key "history_turns" must be a non-negative integer, got string "ten"`,
    },
  );
});

Deno.test("every wrong type or out-of-range value is a TypeError naming file and key", () => {
  const cases: [string, string][] = [
    ["llm_url = 8080", "llm_url"],
    ['llm_url = "localhost:8080"', "llm_url"],
    ['llm_url = "ftp://127.0.0.1:8080"', "llm_url"],
    ['llm_url = "http://127.0.0.1:8080/v1"', "llm_url"],
    ['llm_url = "http://127.0.0.1:8080/?x=1"', "llm_url"],
    ['llm_url = "http://user:pw@127.0.0.1:8080"', "llm_url"],
    ["model = 3", "model"],
    ['thinking = "yes"', "thinking"],
    ["system_prompt = ['a']", "system_prompt"],
    ["history_turns = -1", "history_turns"],
    ["history_turns = 2.5", "history_turns"],
    ["max_tool_rounds = -1", "max_tool_rounds"],
    ["reply_reserve = 0", "reply_reserve"],
    ["reply_reserve = 512.5", "reply_reserve"],
    ["max_tool_rounds = 1.5", "max_tool_rounds"],
    ["tool_timeout = 0", "tool_timeout"],
    ['tool_timeout = "30"', "tool_timeout"],
    ["tool_timeout = inf", "tool_timeout"],
    ["tool_output_limit = 255", "tool_output_limit"],
    ["tool_group_kill = 1", "tool_group_kill"],
    ["stall_timeout = -5", "stall_timeout"],
    ["stall_timeout = nan", "stall_timeout"],
    ["max_clients = 0", "max_clients"],
    ['auto_title = "yes"', "auto_title"],
    ["backend_poll = -1", "backend_poll"],
    ['backend_poll = "5"', "backend_poll"],
    ['tools_dirs = "tools"', "tools_dirs"],
    ["tools_dirs = [1]", "tools_dirs"],
    ['tools_dirs = [""]', "tools_dirs"],
    ["web_port = 65536", "web_port"],
    ["web_port = -1", "web_port"],
    ['web_port = "8765"', "web_port"],
    ["request = 5", "request"],
  ];
  for (const [text, key] of cases) {
    assert.throws(
      () => parseConfig(`# config\n${text}\n`, FILE, PATHS),
      (error) =>
        error instanceof TypeError &&
        error.message.startsWith(`${FILE}:2: key "${key}" must be `) &&
        error.message.includes(", got "),
      text,
    );
  }
});

Deno.test("llm_url keeps scheme, host and port only", () => {
  const url = (text: string) =>
    parseConfig(`llm_url = "${text}"`, FILE, PATHS).config.llm_url;
  assert.equal(url("http://LOCALHOST:8080/"), "http://localhost:8080");
  assert.equal(url("https://llm.example"), "https://llm.example");
  assert.equal(url("http://[::1]:8080"), "http://[::1]:8080");
});

Deno.test("tools_dirs resolve against the config dir and expand ~/", () => {
  const { config } = parseConfig(
    'tools_dirs = ["~/my tools/", "../shared", "/opt/tools//x/", "~"]',
    FILE,
    PATHS,
    envOf({ HOME: "/home/ada" }),
  );
  assert.deepEqual(config.tools_dirs, [
    "/home/ada/my tools",
    "/srv/config/shared",
    "/opt/tools/x",
    "/home/ada",
  ]);
  assert.throws(
    () => parseConfig('tools_dirs = ["~/t"]', FILE, PATHS, envOf({})),
    (error) =>
      error instanceof TypeError && error.message.includes('"tools_dirs"') &&
      error.message.includes("HOME"),
  );
});

Deno.test("a syntax error names file, line and column", () => {
  assert.throws(
    () => parseConfig('model = "m"\nhistory_turns = = 3\n', FILE, PATHS),
    (error) =>
      error instanceof SyntaxError &&
      new RegExp(`^${FILE}:2:\\d+: \\S`).test(error.message) &&
      !error.message.includes("\n"),
  );
});

Deno.test("loadConfig reads the real file, and a missing one means defaults", async () => {
  const root = await Deno.makeTempDir();
  try {
    const paths = resolvePaths(envOf({
      XDG_RUNTIME_DIR: root,
      XDG_DATA_HOME: `${root}/data`,
      XDG_CONFIG_HOME: `${root}/config`,
      XDG_STATE_HOME: `${root}/state`,
    }));
    assert.deepEqual(await loadConfig(paths), {
      config: defaultConfig(paths),
      warnings: [],
      file: null,
    });

    await Deno.mkdir(paths.configDir, { recursive: true });
    await Deno.writeTextFile(
      paths.configFile,
      "max_tool_rounds = 2\nnope = 1\n",
    );
    const loaded = await loadConfig(paths);
    assert.equal(loaded.file, paths.configFile);
    assert.equal(loaded.config.max_tool_rounds, 2);
    assert.deepEqual(loaded.warnings, [
      `unknown key "nope" in ${paths.configFile}`,
    ]);

    await Deno.writeFile(paths.configFile, new Uint8Array([0x6d, 0x3d, 0xff]));
    await assert.rejects(
      loadConfig(paths),
      (error) =>
        error instanceof SyntaxError &&
        error.message.startsWith(`${paths.configFile}: not valid UTF-8`),
    );

    await Deno.remove(paths.configFile);
    await Deno.mkdir(paths.configFile);
    await assert.rejects(
      loadConfig(paths),
      (error) =>
        error instanceof AssistantError &&
        error.message.includes(paths.configFile),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("[mcp.NAME] tables: command, env, confirm (default true) and timeout (default tool_timeout)", () => {
  const { config, warnings } = parseConfig(
    [
      'confirm_tools = ["weather", "fs__write_file"]',
      "confirm_timeout = 45",
      "[mcp.fs]",
      'command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/ada/notes"]',
      "[mcp.search]",
      'command = ["./servers/search", "--stdio"]',
      'env = { API_KEY = "k-123" }',
      "confirm = false",
      "timeout = 5",
      "colour = 1",
    ].join("\n"),
    FILE,
    PATHS,
  );
  assert.deepEqual(config.confirm_tools, ["weather", "fs__write_file"]);
  assert.equal(config.confirm_timeout, 45);
  assert.deepEqual(config.mcp, {
    fs: {
      command: [
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/home/ada/notes",
      ],
      env: {},
      confirm: true,
      timeout: null,
    },
    search: {
      command: ["./servers/search", "--stdio"],
      env: { API_KEY: "k-123" },
      confirm: false,
      timeout: 5,
    },
  });
  assert.deepEqual(warnings, [`unknown key "mcp.search.colour" in ${FILE}`]);
});

Deno.test("a bad [mcp.NAME] value names the file, the line and the dotted key", () => {
  const bad = (lines: string[], pattern: RegExp) =>
    assert.throws(
      () => parseConfig(lines.join("\n"), FILE, PATHS),
      (error: unknown) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.match(error.message, pattern);
        return true;
      },
    );
  bad(
    ["[mcp.fs]", 'command = "npx"'],
    new RegExp(
      `^${FILE}:2: key "mcp\\.fs\\.command" must be a non-empty array`,
    ),
  );
  bad(
    ["[mcp.fs]", 'command = ["x"]', "", "timeout = 0"],
    new RegExp(`^${FILE}:4: key "mcp\\.fs\\.timeout" must be a number`),
  );
  bad(
    ["[mcp.fs]", 'command = ["x"]', 'confirm = "yes"'],
    /:3: key "mcp\.fs\.confirm" must be true or false/,
  );
  bad(
    ["[mcp.fs]", 'command = ["x"]', "env = { A = 1 }"],
    /:3: key "mcp\.fs\.env" must be a table of strings/,
  );
  bad(
    ['[mcp."my server"]', 'command = ["x"]'],
    /key "mcp\.my server" is not a valid server name/,
  );
  bad(["mcp = 3"], /:1: key "mcp" must be a table of \[mcp\.NAME\] tables/);
  bad(
    ['confirm_tools = "weather"'],
    /:1: key "confirm_tools" must be an array/,
  );
  bad(["confirm_timeout = -1"], /:1: key "confirm_timeout" must be a number/);
});

Deno.test("the new keys: cache_reuse, compact, summary_tokens and the voice client's", () => {
  const { config, warnings } = parseConfig(
    [
      "cache_reuse = 0",
      "compact = false",
      "summary_tokens = 120",
      'record_command = ["parecord", "--file-format=wav"]',
      'stt_url = "http://127.0.0.1:8081/"',
      'stt_command = ["whisper-cli", "-f", "-"]',
      'stt_model = "large-v3"',
      "tts_command = []",
      'tts_url = "HTTPS://Speech.Example:8443"',
      'tts_model = "kokoro"',
      'tts_voice = "af_sky"',
      'play_command = ["paplay"]',
      'speak = "all"',
    ].join("\n"),
    FILE,
    PATHS,
  );
  assert.deepEqual(warnings, []);
  assert.deepEqual(config, {
    ...defaultConfig(PATHS),
    cache_reuse: 0,
    compact: false,
    summary_tokens: 120,
    record_command: ["parecord", "--file-format=wav"],
    stt_url: "http://127.0.0.1:8081",
    stt_command: ["whisper-cli", "-f", "-"],
    stt_model: "large-v3",
    tts_command: [],
    tts_url: "https://speech.example:8443",
    tts_model: "kokoro",
    tts_voice: "af_sky",
    play_command: ["paplay"],
    speak: "all",
  });
});

Deno.test("a bad value of a new key is refused, naming the file, line and key", () => {
  const cases: [string, string][] = [
    ["cache_reuse = -1", "cache_reuse"],
    ["cache_reuse = 64.5", "cache_reuse"],
    ['cache_reuse = "256"', "cache_reuse"],
    ['compact = "no"', "compact"],
    ["summary_tokens = 0", "summary_tokens"],
    ["summary_tokens = 1.5", "summary_tokens"],
    ["record_command = []", "record_command"],
    ['record_command = ["arecord", ""]', "record_command"],
    ['record_command = "arecord -q"', "record_command"],
    ["stt_url = 8081", "stt_url"],
    ['stt_url = "127.0.0.1:8081"', "stt_url"],
    ['stt_url = "http://127.0.0.1:8081/v1"', "stt_url"],
    ['stt_command = ["", "-f"]', "stt_command"],
    ["stt_command = [1]", "stt_command"],
    ["stt_model = 1", "stt_model"],
    ['tts_command = "espeak-ng"', "tts_command"],
    ['tts_url = "http://speech.example/?key=1"', "tts_url"],
    ["tts_model = false", "tts_model"],
    ["tts_voice = []", "tts_voice"],
    ["play_command = []", "play_command"],
    ['speak = "everyone"', "speak"],
    ["speak = true", "speak"],
  ];
  for (const [text, key] of cases) {
    assert.throws(
      () => parseConfig(`# config\n${text}\n`, FILE, PATHS),
      (error) =>
        error instanceof TypeError &&
        error.message.startsWith(`${FILE}:2: key "${key}" must be `) &&
        error.message.includes(", got "),
      text,
    );
  }
  assert.throws(
    () => parseConfig('speak = "everyone"', FILE, PATHS),
    {
      message:
        `${FILE}:1: key "speak" must be "own" or "all", got string "everyone"`,
    },
  );
  assert.throws(
    () => parseConfig('stt_url = "localhost:8081"', FILE, PATHS),
    {
      message:
        `${FILE}:1: key "stt_url" must be an http(s) base URL such as http://127.0.0.1:8080 (no path, query or credentials), or "" for none, got a string of 14 characters`,
    },
  );
});

Deno.test("a TOML syntax error quotes none of the file: no secret from the lines around it, no cause", () => {
  const text = [
    "[mcp.search]",
    'command = ["search"]',
    'env = { API_KEY = "sk-live-51a2" }',
    "timeout = = 5",
    'other = "sk-live-51a3"',
  ].join("\n");
  assert.throws(
    () => parseConfig(text, FILE, PATHS),
    (error) => {
      assert.ok(error instanceof SyntaxError);
      assert.match(error.message, new RegExp(`^${FILE}:4:\\d+: \\S`));
      assert.equal(error.cause, undefined);
      const logged = describeError(error);
      assert.doesNotMatch(logged, /sk-live|API_KEY|timeout/);
      return true;
    },
  );
});

Deno.test("a refused value is quoted only where it cannot be a secret", () => {
  const message = (text: string) => {
    try {
      parseConfig(text, FILE, PATHS, envOf({}));
    } catch (error) {
      return describeError(error);
    }
    throw new Error(`accepted: ${text}`);
  };
  // A URL with credentials: shown without its userinfo, query and fragment.
  const userinfo = message('llm_url = "http://ada:s3cret@127.0.0.1:8080"');
  assert.match(
    userinfo,
    /key "llm_url" must be an http\(s\) base URL .*, got string "http:\/\/…@127\.0\.0\.1:8080\/"$/,
  );
  assert.doesNotMatch(userinfo, /ada|s3cret/);
  const query = message(
    'tts_url = "https://speech.example/v1?api_key=s3cret#x"',
  );
  assert.match(query, /got string "https:\/\/speech\.example\/v1\?…#…"$/);
  assert.doesNotMatch(query, /s3cret/);
  // No scheme, so no telling which part is a password: its length only.
  const bare = message('stt_url = "ada:s3cret@speech:9000"');
  assert.match(bare, /got a string of 22 characters$/);
  assert.doesNotMatch(bare, /s3cret/);
  // A command written as one string may carry a token: its length only.
  const command = message(
    `stt_command = "curl -H 'Authorization: Bearer s3cret' http://x"`,
  );
  assert.match(
    command,
    /key "stt_command" must be .*, got a string of \d+ characters$/,
  );
  assert.doesNotMatch(command, /s3cret|Bearer/);
  // Arrays and tables by their kind; an [mcp.NAME] env value never.
  assert.doesNotMatch(message('tools_dirs = "s3cret"'), /s3cret/);
  assert.doesNotMatch(message('model = ["s3cret"]'), /s3cret/);
  assert.doesNotMatch(
    message('[mcp.x]\ncommand = ["x"]\nenv = { TOKEN = 5, KEY = "s3cret" }'),
    /s3cret|TOKEN|5/,
  );
  assert.doesNotMatch(
    message('tools_dirs = ["~/s3cret"]'),
    /s3cret/,
  );
  // A number, a boolean or a word where those belong is shown: a slip.
  assert.match(message('web_port = "8765"'), /got string "8765"$/);
  assert.match(message("compact = 1"), /got number 1$/);
});

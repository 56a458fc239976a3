import assert from "node:assert/strict";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultConfig, parseConfig } from "../../src/base/config.ts";
import { ENV_VARS, type Paths, resolvePaths } from "../../src/base/paths.ts";
import { envOf } from "../support/env_fixture.ts";
import { AssistantError } from "../../src/base/errors.ts";
import {
  deriveFlags,
  missingGrants,
  V8_FLAGS,
} from "../../src/base/permissions.ts";
import { netHost } from "../../src/base/grant_query.ts";
import { mcpExecutables } from "../../src/tools/mcp_plan.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url)).replace(
  /\/$/,
  "",
);
const PROBE = fileURLToPath(
  new URL("../fixtures/grants_probe.ts", import.meta.url),
);

const PATHS: Paths = resolvePaths(envOf({
  HOME: "/home/ada",
  XDG_RUNTIME_DIR: "/run/user/1000",
}));

Deno.test("deriveFlags gives the exact scoped flags for a config", () => {
  const config = {
    ...defaultConfig(PATHS),
    tools_dirs: ["/opt/tools", PATHS.userToolsDir, "/opt/tools"],
  };
  assert.deepEqual(
    deriveFlags({
      paths: PATHS,
      config,
      executables: ["/usr/bin/jq", "/usr/bin/curl", "/usr/bin/jq"],
    }),
    [
      "--allow-read=" + [
        "/home/ada/.config/desktop-assistant",
        "/home/ada/.config/desktop-assistant/tools",
        "/home/ada/.local/share/desktop-assistant",
        "/opt/tools",
        "/run/user/1000/desktop-assistant.sock",
      ].join(","),
      "--allow-write=/home/ada/.local/share/desktop-assistant," +
      "/run/user/1000/desktop-assistant.sock",
      "--allow-net=127.0.0.1:8080,unix:/run/user/1000/desktop-assistant.sock",
      "--allow-run=/usr/bin/curl,/usr/bin/jq",
      "--allow-env=HOME,PATH,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR," +
      "XDG_STATE_HOME",
      "--v8-flags=--max-semi-space-size=4",
    ],
  );
});

Deno.test("no derived flag is broad, and --allow-run is left out without tools", () => {
  const flags = deriveFlags({
    paths: PATHS,
    config: defaultConfig(PATHS),
    executables: [],
  });
  assert.deepEqual(flags.map((flag) => flag.split("=")[0]), [
    "--allow-read",
    "--allow-write",
    "--allow-net",
    "--allow-env",
    "--v8-flags",
  ]);
  for (const flag of flags.slice(0, -1)) {
    assert.match(flag, /^--allow-(read|write|net|run|env)=[^,=]+(,[^,]+)*$/);
    assert.doesNotMatch(flag, /^-A$|^--allow-all|^--allow-(ffi|sys|import)/);
  }
  assert.equal(flags.at(-1), V8_FLAGS);
  assert.ok(flags[0]?.includes(`${REPO}/tools`));
});

Deno.test("netHost makes the default port explicit and keeps IPv6 brackets", () => {
  assert.equal(netHost("http://127.0.0.1:8080"), "127.0.0.1:8080");
  assert.equal(netHost("http://llm.lan"), "llm.lan:80");
  assert.equal(netHost("https://llm.example"), "llm.example:443");
  assert.equal(netHost("http://[::1]:8080"), "[::1]:8080");
  const config = { ...defaultConfig(PATHS), llm_url: "https://[fe80::1]" };
  const net = deriveFlags({ paths: PATHS, config, executables: [] })[2];
  assert.equal(
    net,
    "--allow-net=[fe80::1]:443,unix:/run/user/1000/desktop-assistant.sock",
  );
});

Deno.test("paths a flag cannot express are refused with their name", () => {
  const config = { ...defaultConfig(PATHS), tools_dirs: ["/opt/a,b"] };
  assert.throws(
    () => deriveFlags({ paths: PATHS, config, executables: [] }),
    (error) =>
      error instanceof AssistantError && /\/opt\/a,b/.test(error.message),
  );
  assert.throws(
    () =>
      deriveFlags({
        paths: PATHS,
        config: defaultConfig(PATHS),
        executables: ["curl"],
      }),
    (error) => error instanceof TypeError && error.message.includes('"curl"'),
  );
});

/** A real setup under a temp dir, a fake LLM server, and the probe's flags. */
async function withSetup(
  test: (setup: {
    root: string;
    env: Record<string, string>;
    flags: string[];
    port: number;
  }) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "da-perm-" });
  try {
    const ac = new AbortController();
    const listening = Promise.withResolvers<number>();
    await using _server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      signal: ac.signal,
      onListen: ({ port }) => listening.resolve(port),
    }, () => Response.json({ data: [{ id: "m" }] }));
    const port = await listening.promise;
    const env = {
      XDG_RUNTIME_DIR: root,
      XDG_DATA_HOME: `${root}/data`,
      XDG_CONFIG_HOME: `${root}/config`,
      XDG_STATE_HOME: `${root}/state`,
    };
    const paths = resolvePaths((name) =>
      Object.hasOwn(env, name)
        ? env[name as keyof typeof env]
        : Deno.env.get(name)
    );
    await Deno.mkdir(paths.configDir, { recursive: true });
    await Deno.writeTextFile(
      paths.configFile,
      `llm_url = "http://127.0.0.1:${port}/"\n`,
    );
    const config = {
      ...defaultConfig(paths),
      llm_url: `http://127.0.0.1:${port}`,
    };
    const flags = deriveFlags({
      paths,
      config,
      executables: [Deno.execPath()],
    });
    try {
      await test({ root, env, flags, port });
    } finally {
      ac.abort();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

async function probe(
  env: Record<string, string>,
  flags: string[],
  args: string[],
): Promise<Record<string, unknown>> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...flags, PROBE, ...args],
    cwd: REPO,
    env: { ...env, NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const out = new TextDecoder().decode(stdout);
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  return JSON.parse(out);
}

Deno.test("a daemon run with the derived flags can do all its I/O and misses no grant", async () => {
  await withSetup(async ({ root, env, flags }) => {
    const report = await probe(env, flags, ["exercise", Deno.execPath()]);
    assert.deepEqual(report, {
      missing: [],
      socket: "ping 600",
      database: "read 7",
      llm: '200 {"data":[{"id":"m"}]}',
      run: [0],
      config: report.config,
    });
    assert.match(String(report.config), /^http:\/\/127\.0\.0\.1:\d+$/);
    const mode = (await Deno.stat(`${root}/data/desktop-assistant`)).mode;
    assert.equal((mode ?? 0) & 0o777, 0o700);
  });
});

Deno.test("missingGrants names the flags a process was started without", async () => {
  await withSetup(async ({ env, flags, port }) => {
    const wrongNet = flags.map((flag) =>
      flag.startsWith("--allow-net=")
        ? flag.replace(`127.0.0.1:${port}`, "127.0.0.1:1")
        : flag.startsWith("--allow-env=")
        ? `--allow-env=${ENV_VARS.filter((name) => name !== "PATH").join(",")}`
        : flag
    );
    assert.notDeepEqual(wrongNet, flags);
    const report = await probe(env, wrongNet, ["query"]);
    assert.deepEqual(report, {
      missing: [`--allow-net=127.0.0.1:${port}`, "--allow-env=PATH"],
    });
  });
});

Deno.test("missingGrants is empty when everything is granted", () => {
  // This suite runs with --allow-all.
  assert.deepEqual(
    missingGrants({ paths: PATHS, config: defaultConfig(PATHS) }),
    [],
  );
});

Deno.test("an MCP server named by path may be read (a missing file is told from a missing grant); the executables found are run", async () => {
  const root = Deno.realPathSync(await Deno.makeTempDir());
  try {
    const paths = resolvePaths(envOf({
      HOME: root,
      XDG_RUNTIME_DIR: "/run/user/1000",
    }));
    const local = `${paths.configDir}/servers/local`;
    for (const file of [local, `${root}/bin/server`]) {
      await Deno.mkdir(dirname(file), { recursive: true });
      await Deno.writeTextFile(file, "#!/bin/sh\n");
      await Deno.chmod(file, 0o755);
    }
    const server = (command: string[]) => ({
      command,
      env: {},
      confirm: true,
      timeout: null,
    });
    const mcp = {
      local: server(["./servers/local", "--stdio"]),
      bare: server(["server"]),
      gone: server(["no-such-server"]),
      moved: server(["./servers/moved"]),
    };
    const config = { ...defaultConfig(paths), tools_dirs: [], mcp };
    const executables = mcpExecutables(config, paths.configDir, {
      pathEnv: `${root}/bin`,
    });
    assert.deepEqual(executables, [local, `${root}/bin/server`]);
    const flags = deriveFlags({ paths, config, executables });
    const read = flags[0]!.slice("--allow-read=".length).split(",");
    assert.ok(read.includes(local), flags[0]);
    assert.ok(read.includes(`${paths.configDir}/servers/moved`), flags[0]);
    assert.equal(
      flags.find((flag) => flag.startsWith("--allow-run=")),
      `--allow-run=${[local, `${root}/bin/server`].sort().join(",")}`,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("the voice client's keys add none of the daemon's grants", () => {
  const { config } = parseConfig(
    [
      'stt_url = "http://10.0.0.7:9000"',
      'tts_url = "https://speech.example"',
      'stt_command = ["/opt/whisper/bin/whisper-cli", "-f", "-"]',
      'tts_command = ["/usr/local/bin/piper"]',
      'record_command = ["/usr/bin/parecord"]',
      'play_command = ["/usr/bin/paplay"]',
      'speak = "all"',
    ].join("\n"),
    PATHS.configFile,
    PATHS,
  );
  assert.deepEqual(
    deriveFlags({ paths: PATHS, config, executables: [] }),
    deriveFlags({
      paths: PATHS,
      config: defaultConfig(PATHS),
      executables: [],
    }),
  );
});

/**
 * What the daemon's tasks fetch from the npm registry: the packages they run,
 * never the ones only the tests use (a browser driver, a terminal emulator,
 * a published MCP server).
 */
import assert from "node:assert/strict";
import { daemonEnv, inheritedEnv } from "../support/daemon_harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const TEST_ONLY = [
  "puppeteer-core",
  "@xterm/headless",
  "@modelcontextprotocol/server-filesystem",
];

/** The package a registry request is for: its packument or one of its tarballs. */
function packageOf(path: string): string {
  const parts = decodeURIComponent(path).split("/").filter((part) => part);
  return parts[0]?.startsWith("@")
    ? parts.slice(0, 2).join("/")
    : parts[0] ?? "";
}

Deno.test("a first deno task start asks the npm registry for the daemon's packages and for none of the tests'", async () => {
  const asked = new Set<string>();
  // A registry that has nothing: every request is recorded and refused, so
  // the task asks for what it would fetch, then stops.
  await using registry = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => {
      asked.add(packageOf(new URL(request.url).pathname));
      return new Response("not here", { status: 404 });
    },
  );
  const home = await Deno.makeTempDir({ prefix: "da-packages-" });
  try {
    await Deno.mkdir(`${home}/run`, { mode: 0o700 });
    await Deno.mkdir(`${home}/cache`);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "start"],
      cwd: ROOT,
      clearEnv: true,
      env: {
        ...inheritedEnv(),
        ...daemonEnv(home),
        DENO_DIR: `${home}/cache`,
        NPM_CONFIG_REGISTRY: `http://127.0.0.1:${registry.addr.port}/`,
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    assert.notEqual(out.code, 0, "nothing could be fetched");
    // It did ask: what it asked for is what it would have fetched.
    assert.ok(asked.has("zod") && asked.has("smol-toml"), [...asked].join());
    for (const name of TEST_ONLY) {
      assert.ok(!asked.has(name), `asked for ${name}`);
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("deno.lock, which the daemon's and clients' commands run with, pins deno.json's imports and their dependencies, nothing else", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    imports: Record<string, string>;
  };
  const lock = JSON.parse(await Deno.readTextFile(`${ROOT}deno.lock`)) as {
    specifiers: Record<string, string>;
    npm: Record<string, { dependencies?: string[] }>;
  };
  const named = (key: string) => key.slice(0, key.indexOf("@", 1));
  const keyOf = (dependency: string) =>
    Object.keys(lock.npm).find((key) =>
      dependency.includes("@", 1)
        ? key === dependency || key.startsWith(`${dependency}_`)
        : named(key) === dependency
    );
  // `npm:name@version/path` or `npm:/name@version/`: the package pinned.
  const wanted = Object.values(config.imports).map((target) => {
    const spec = target.replace(/^npm:\/?/, "");
    const end = spec.indexOf("/", spec.indexOf("@", 1));
    return `npm:${end === -1 ? spec : spec.slice(0, end)}`;
  });
  assert.deepEqual(
    Object.keys(lock.specifiers).sort(),
    [...new Set(wanted)].sort(),
  );
  const reached = new Set<string>();
  const next = Object.entries(lock.specifiers).map(([spec, version]) =>
    `${named(spec.slice("npm:".length))}@${version}`
  );
  for (let key = next.pop(); key !== undefined; key = next.pop()) {
    if (reached.has(key)) continue;
    reached.add(key);
    for (const dependency of lock.npm[key]?.dependencies ?? []) {
      const found = keyOf(dependency);
      assert.ok(found, `${key} needs ${dependency}, which is not pinned`);
      next.push(found);
    }
  }
  assert.deepEqual(Object.keys(lock.npm).sort(), [...reached].sort());
  for (const name of TEST_ONLY) {
    assert.ok(
      !Object.keys(lock.npm).some((key) => named(key) === name),
      `${name} pinned`,
    );
  }
});

/** The daemon's check of its MCP grants: a server it may run starts, a missing command is left out, a present one without a grant stops the start. */
import assert from "node:assert/strict";
import { inheritedEnv } from "../support/daemon_harness.ts";

const PROBE = new URL("../fixtures/mcp/plan_probe.ts", import.meta.url)
  .pathname;

async function plan(grants: string[], configDir: string, servers: object) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      ...grants,
      PROBE,
      configDir,
      JSON.stringify(servers),
    ],
    env: inheritedEnv(),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

Deno.test("planMcp under scoped grants: granted runs, missing is left out, present but not granted is a missing flag", async () => {
  const dir = Deno.realPathSync(await Deno.makeTempDir());
  try {
    const sh = Deno.realPathSync("/bin/sh");
    await Deno.writeTextFile(`${dir}/server`, "#!/bin/sh\n");
    await Deno.chmod(`${dir}/server`, 0o755);
    const result = await plan(
      [`--allow-run=${sh}`, "--allow-env=PATH", `--allow-read=${dir}`],
      dir,
      {
        granted: [sh, "-c", "true"],
        ghost: ["no-such-mcp-server-da-test"],
        gone: ["./missing"],
        ungranted: ["ls"],
        local: ["./server"],
      },
    );
    assert.deepEqual(
      result.servers.map((s: { name: string; executable: string }) => [
        s.name,
        s.executable,
      ]),
      [["granted", sh]],
    );
    assert.deepEqual(result.leftOut, [
      {
        name: "ghost",
        reason:
          "its executable no-such-mcp-server-da-test was not found on PATH",
      },
      {
        name: "gone",
        reason:
          `its executable ./missing is not there or not executable (a relative path starts at ${dir})`,
      },
    ]);
    assert.deepEqual(result.missing, [
      "--allow-run=ls",
      `--allow-run=${dir}/server`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

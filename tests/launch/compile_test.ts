/**
 * `deno task compile` (`main.ts launch compile`): the binary it builds, with
 * the derived flags baked in, starts and answers `ping`.
 *
 * `deno compile` needs its runtime, `denort`: from `DENORT_BIN`, from deno's
 * cache, or downloaded. Where none of those works (no network but the npm
 * registry, whose `deno` package ships no denort) the test is skipped, and
 * why is printed.
 */
import assert from "node:assert/strict";
import { daemonEnv, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { SocketClient } from "../support/socket_client.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const LAUNCHER = [
  "--quiet",
  "--no-prompt",
  "--allow-read",
  "--allow-env=HOME,PATH,TMPDIR,XDG_CONFIG_HOME,XDG_DATA_HOME,XDG_RUNTIME_DIR,XDG_STATE_HOME",
  "--allow-run=deno",
];
const WAIT_MS = 300_000;

/** Why `deno compile` cannot make a runnable binary here, or null when it can. */
async function compileUnavailable(): Promise<string | null> {
  const dir = await Deno.makeTempDir({ prefix: "da-compile-probe-" });
  try {
    const source = `${dir}/probe.ts`;
    await Deno.writeTextFile(source, `console.log("standalone " + 6 * 7);\n`);
    const built = await new Deno.Command(Deno.execPath(), {
      args: ["compile", "--quiet", "--output", `${dir}/probe`, source],
      cwd: dir,
      stdin: "null",
      signal: AbortSignal.timeout(WAIT_MS),
    }).output();
    if (!built.success) {
      const stderr = new TextDecoder().decode(built.stderr);
      const why = stderr.match(/error: (.*)/)?.[1] ?? `exit ${built.code}`;
      return `deno compile cannot get its runtime (denort): ${why.trim()}; ` +
        "set DENORT_BIN to a denort matching this deno to run it";
    }
    const ran = await new Deno.Command(`${dir}/probe`, {
      stdin: "null",
      stderr: "null",
      signal: AbortSignal.timeout(WAIT_MS),
    }).output();
    const said = new TextDecoder().decode(ran.stdout).trim();
    if (said !== "standalone 42") {
      return `the binary deno compile made does not run as a program (DENORT_BIN=${
        Deno.env.get("DENORT_BIN") ?? "unset"
      } is not a denort?)`;
    }
    return null;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const skipReason = await compileUnavailable();
if (skipReason !== null) {
  Deno.stderr.writeSync(
    new TextEncoder().encode(`compile_test skipped: ${skipReason}\n`),
  );
}

Deno.test({
  name:
    "deno task compile builds a binary with the flags baked in that answers ping" +
    (skipReason === null ? "" : ` (skipped: ${skipReason})`),
  ignore: skipReason !== null,
  async fn() {
    await using llm = await FakeLlm.start();
    const home = await Deno.makeTempDir({ prefix: "da-compile-" });
    try {
      const env = { ...inheritedEnv(), ...daemonEnv(home) };
      await Deno.mkdir(`${home}/run`, { mode: 0o700 });
      await Deno.mkdir(`${home}/config/desktop-assistant`, {
        recursive: true,
      });
      await Deno.writeTextFile(
        `${home}/config/desktop-assistant/config.toml`,
        `llm_url = ${JSON.stringify(llm.url)}\n`,
      );
      const binary = `${home}/dist/desktop-assistant`;
      const built = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          ...LAUNCHER,
          MAIN,
          "launch",
          "compile",
          "--output",
          binary,
        ],
        env,
        clearEnv: true,
        stdin: "null",
        signal: AbortSignal.timeout(WAIT_MS),
      }).output();
      assert.equal(
        built.code,
        0,
        new TextDecoder().decode(built.stderr),
      );

      const child = new Deno.Command(binary, {
        env,
        clearEnv: true,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const reader = child.stderr.pipeThrough(new TextDecoderStream())
        .getReader();
      let log = "";
      try {
        const deadline = AbortSignal.timeout(WAIT_MS);
        while (!/ info listening socket=/.test(log)) {
          assert.equal(deadline.aborted, false, log);
          const next = await reader.read();
          assert.ok(!next.done, `exited before listening:\n${log}`);
          log += next.value;
        }
        // The bundled tools are embedded; `date` runs from PATH.
        assert.match(log, /tools=[1-9]/);
        {
          await using client = await SocketClient.connect(
            `${home}/run/desktop-assistant.sock`,
          );
          await client.next("hello");
          await client.send({ type: "ping" });
          assert.equal((await client.next("pong")).pid, child.pid);
        }
        child.kill("SIGTERM");
        for (let next = await reader.read(); !next.done;) {
          log += next.value;
          next = await reader.read();
        }
        assert.equal((await child.status).code, 0, log);
        assert.match(log, / info exit code=0 reason=SIGTERM\n$/);
      } finally {
        try {
          child.kill("SIGKILL");
        } catch {
          // Ended already.
        }
        await reader.cancel().catch(() => {});
        await child.status;
      }
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
});

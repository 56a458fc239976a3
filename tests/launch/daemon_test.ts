/** Start-up of the daemon process: a second one on the same socket refuses and touches nothing. */
import assert from "node:assert/strict";
import { Daemon, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/**
 * The file's stat once it has stopped changing: the first daemon's own upkeep
 * (a checkpoint, index merges) writes it shortly after a save, and only a
 * change by the second daemon should count.
 */
async function settledStat(path: string): Promise<Deno.FileInfo> {
  let last = await Deno.stat(path);
  for (let quiet = 0; quiet < 3;) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = await Deno.stat(path);
    quiet = now.mtime?.getTime() === last.mtime?.getTime() ? quiet + 1 : 0;
    last = now;
  }
  return last;
}

Deno.test("a second daemon refuses while the first answers, and leaves the history alone", async () => {
  await using llm = await FakeLlm.start();
  await using first = await Daemon.start({ llmUrl: llm.url });
  await using client = await first.connect();
  await client.next("hello");
  await client.send({ type: "ask", text: "Keep this" });
  await client.until((e) => e.type === "state" && e.state === "idle");
  const before = await settledStat(first.paths.dbPath);

  const second = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...first.flags, MAIN, "serve"],
    env: { ...inheritedEnv(), ...first.env },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const log = new TextDecoder().decode(second.stderr);
  assert.equal(second.code, 1, log);
  assert.match(
    log,
    /another daemon is already listening on .*desktop-assistant\.sock/,
  );
  assert.doesNotMatch(
    log,
    /history|listening path=/,
    "it stopped before opening anything",
  );
  const after = await Deno.stat(first.paths.dbPath);
  assert.equal(after.mtime?.getTime(), before.mtime?.getTime());

  await client.send({ type: "ping" });
  assert.equal((await client.next("pong")).pid, first.child.pid);
});

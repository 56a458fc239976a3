/** Start-up of the daemon process: a second one on the same socket refuses and touches nothing. */
import assert from "node:assert/strict";
import { Daemon, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { running } from "../support/process_tree.ts";

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

const SLOW_CONVERTER = new URL("../fixtures/convert/slow.sh", import.meta.url)
  .pathname;

/** A daemon whose `application/x-slow` converter never finishes, and the FIFO it tells its pid on. */
async function slowConverter(llm: FakeLlm) {
  const fifos = await Deno.makeTempDir({ prefix: "da-fifo-" });
  const fifo = `${fifos}/pid`;
  const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
  assert.ok(made.success, "mkfifo");
  const daemon = await Daemon.start({
    llmUrl: llm.url,
    config: `tool_timeout = 600\n[convert]\n"application/x-slow" = ${
      JSON.stringify([SLOW_CONVERTER, fifo])
    }\n`,
  });
  return {
    daemon,
    /** The converter's pid, once it runs. */
    started: async () => Number((await Deno.readTextFile(fifo)).trim()),
    async [Symbol.asyncDispose]() {
      await daemon[Symbol.asyncDispose]();
      await Deno.remove(fifos, { recursive: true });
    },
  };
}

const SLOW_ASK = {
  type: "ask" as const,
  text: "Read this",
  files: [{
    name: "scan.slow",
    mime: "application/x-slow",
    data: btoa("bytes"),
  }],
  ref: "slow",
};

Deno.test("stop from the asker during a slow converter ends it at once: the ask answers convert_failed, the converter is gone, nothing is asked", async () => {
  await using llm = await FakeLlm.start();
  await using slow = await slowConverter(llm);
  await using client = await slow.daemon.connect();
  await client.next("hello");
  await client.send(SLOW_ASK);
  const pid = await slow.started();
  assert.ok(running(pid));
  const asked = performance.now();
  await client.send({ type: "stop" });
  const error = await client.next("error");
  assert.deepEqual(
    { code: error.code, message: error.message, ref: error.ref },
    {
      code: "convert_failed",
      message: "scan.slow: its converter was stopped",
      ref: "slow",
    },
  );
  assert.ok(performance.now() - asked < 5000, "within the kill's grace");
  assert.equal(running(pid), false, "the converter is gone");
  assert.deepEqual(llm.chats, []);
  // The connection goes on: the stop ran in its place, then the ping.
  await client.send({ type: "ping" });
  assert.equal((await client.next("pong")).pid, slow.daemon.child.pid);
  assert.doesNotMatch(slow.daemon.log, /scan\.slow/, "no file name logged");
});

Deno.test("a slow converter ends at shutdown, and the daemon exits at once", async () => {
  await using llm = await FakeLlm.start();
  await using slow = await slowConverter(llm);
  await using client = await slow.daemon.connect();
  await client.next("hello");
  await client.send(SLOW_ASK);
  const pid = await slow.started();
  const status = await slow.daemon.stop("SIGTERM");
  assert.equal(status.code, 0, slow.daemon.log);
  assert.equal(running(pid), false, "gone at shutdown");
  assert.match(slow.daemon.log, / info exit code=0 reason=SIGTERM\n$/);
});

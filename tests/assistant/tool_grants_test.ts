/**
 * What the daemon's derived grants allow a tool: run under the flags
 * `main.ts flags` derives, a timed-out tool is killed alone, or with its
 * whole process group where `tool_group_kill` widens the grant for it.
 */
import assert from "node:assert/strict";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { isIdle } from "../support/socket_client.ts";

const TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname;
type Body = { messages: { role: string; content: string | null }[] };

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
}

async function timedOutChildren(config: string): Promise<number[]> {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
    config,
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({ toolCalls: [{ name: "sleeper", arguments: "{}" }] }),
    reply({ content: ["It timed out."] }),
  );
  await client.send({ type: "ask", text: "Sleep" });
  await client.until(isIdle);
  const result =
    (llm.chats[1]!.body as Body).messages.find((m) => m.role === "tool")
      ?.content ?? "";
  assert.match(result, /^The tool sleeper was stopped after 0\.5 seconds/);
  return [...result.matchAll(/^child (\d+)$/gm)].map((m) => Number(m[1]));
}

Deno.test("under its derived flags the daemon kills a timed-out tool alone by default, and its whole group with tool_group_kill", async () => {
  const left = await timedOutChildren("");
  try {
    assert.equal(left.length, 2);
    assert.deepEqual(left.filter(alive), left, "measured: children live on");
  } finally {
    for (const pid of left) Deno.kill(pid, "SIGKILL");
  }
  const group = await timedOutChildren("tool_group_kill = true\n");
  assert.equal(group.length, 2);
  assert.deepEqual(group.filter(alive), []);
});

Deno.test("tool_group_kill without the grant for timeout refuses to start, naming the fix", async () => {
  await using llm = await FakeLlm.start();
  const home = await Deno.makeTempDir({ prefix: "da-test-" });
  try {
    const exact = await Daemon.start({
      llmUrl: llm.url,
      toolsDirs: [TOOLS],
      home,
    });
    await exact[Symbol.asyncDispose]();
    await assert.rejects(
      Daemon.start({
        llmUrl: llm.url,
        toolsDirs: [TOOLS],
        config: "tool_group_kill = true\n",
        flags: exact.flags,
        home,
      }),
      /tool_group_kill = true needs coreutils timeout on PATH and --allow-run for it/,
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

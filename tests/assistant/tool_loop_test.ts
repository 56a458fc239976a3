/** The tool loop end to end: rounds, the last round, bad arguments, and a stop while a tool runs. */
import assert from "node:assert/strict";
import { LocalDaemon } from "../support/assistant_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { isIdle } from "../support/socket_client.ts";
import { Store } from "../../src/store/store.ts";

const TOOLS = new URL("../fixtures/tools/", import.meta.url).pathname;
type Body = {
  messages: { role: string; content: string | null }[];
  tool_choice?: string;
  tools?: { function: { name: string } }[];
};

async function waitForFile(path: string): Promise<void> {
  // The tool is another process; its marker file is the only signal it gives.
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await Deno.stat(path);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${path} never appeared`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

Deno.test("after max_tool_rounds the last request says tool_choice none", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
    config: "max_tool_rounds = 2\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const call = () =>
    reply({
      toolCalls: [{ name: "echo_args", arguments: '{"text":"again"}' }],
    });
  llm.enqueue(call(), call(), reply({ content: ["Enough."] }));
  await client.send({ type: "ask", text: "Loop" });
  const events = await client.until(isIdle);

  const bodies = llm.chats.map((c) => c.body as Body);
  assert.equal(bodies.length, 3);
  assert.equal(bodies[0]!.tool_choice, undefined);
  assert.equal(bodies[1]!.tool_choice, undefined);
  assert.equal(bodies[2]!.tool_choice, "none");
  assert.ok(
    bodies.every((b) => b.tools?.some((t) => t.function.name === "echo_args")),
  );
  assert.equal(events.filter((e) => e.type === "tool" && e.done).length, 2);
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
});

Deno.test("bad arguments and unknown tools come back to the model as results", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({
      toolCalls: [
        { name: "typed", arguments: '{"name":"x","count":1.5}' },
        { name: "typed", arguments: '{"name":' },
        { name: "no_such_tool", arguments: "{}" },
      ],
    }),
    reply({ content: ["Sorry."] }),
  );
  await client.send({ type: "ask", text: "Try things" });
  await client.until(isIdle);
  const results = (llm.chats[1]!.body as Body).messages.filter((m) =>
    m.role === "tool"
  )
    .map((m) => m.content ?? "");
  assert.equal(results.length, 3);
  assert.match(results[0]!, /count/);
  assert.match(results[0]!, /integer/);
  assert.match(results[1]!, /JSON/);
  assert.match(results[2]!, /no_such_tool/);
  assert.match(results[2]!, /echo_args/, "the model is told which tools exist");
  // llama-server parses the arguments in the history: they go back as JSON.
  const calls = (llm.chats[1]!.body as {
    messages: { tool_calls?: { function: { arguments: string } }[] }[];
  }).messages.flatMap((m) => m.tool_calls ?? []).map((c) =>
    c.function.arguments
  );
  assert.deepEqual(calls, ['{"name":"x","count":1.5}', "{}", "{}"]);
});

Deno.test("arguments with shell syntax reach the tool literally", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const nasty = '"; rm -rf ~ # $(id) `id`';
  llm.enqueue(
    reply({
      toolCalls: [{
        name: "echo_args",
        arguments: JSON.stringify({ text: nasty }),
      }],
    }),
    reply({ content: ["ok"] }),
  );
  await client.send({ type: "ask", text: "Echo" });
  await client.until(isIdle);
  const result = (llm.chats[1]!.body as Body).messages.at(-1)!.content!;
  assert.ok(result.includes(`[${nasty}]`), result);
  assert.ok(result.includes(`[--label=${nasty}!]`), result);
  assert.ok(
    result.includes(`stdin=${JSON.stringify({ text: nasty })}`),
    result,
  );
  assert.doesNotMatch(result, /uid=\d+/);
});

Deno.test("stop while a tool runs: done at once, the tool finishes, its result never reaches the model", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    toolsDirs: [TOOLS],
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const gate = await Deno.makeTempDir({ prefix: "da-gate-" });
  try {
    llm.enqueue(
      reply({
        toolCalls: [{ name: "gate", arguments: JSON.stringify({ dir: gate }) }],
      }),
      reply({ content: ["Fresh answer."] }),
    );
    await client.send({ type: "ask", text: "Open the gate" });
    await client.until((e) => e.type === "tool" && e.done === false);
    await waitForFile(`${gate}/started`);

    await client.send({ type: "stop" });
    assert.deepEqual(await client.until(isIdle), [
      { type: "done", id: null, stopped: true },
      { type: "state", state: "idle" },
    ]);
    await Deno.writeTextFile(`${gate}/release`, "");
    await waitForFile(`${gate}/finished`);

    await client.send({ type: "ask", text: "Something else" });
    const events = await client.until(isIdle);
    assert.ok(
      !events.some((e) => e.type === "tool"),
      "the dropped tool reports nothing",
    );
    assert.equal(llm.chats.length, 2);
    const second = llm.chats[1]!.body as Body;
    assert.ok(!second.messages.some((m) => m.role === "tool"));
    assert.doesNotMatch(JSON.stringify(second), /gate result text/);
    assert.equal(
      events.filter((e) => e.type === "token").map((e) => e.delta).join(""),
      "Fresh answer.",
    );
  } finally {
    await Deno.remove(gate, { recursive: true });
  }
});

/** Whether a process still runs (a zombie has already died). */
Deno.test("a stored turn's unparsable tool-call arguments go back to the model as {}", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({ llmUrl: llm.url });
  {
    // As a version that kept the model's arguments verbatim saved it.
    using store = new Store(daemon.paths.dbPath);
    store.saveTurn(null, {
      user: "Weather?",
      reply: "Sorry.",
      tools: ["weather"],
      messages: [
        { role: "user", content: "[2026-11-30 09:00 UTC+00:00] Weather?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "c1",
            type: "function",
            function: { name: "weather", arguments: '{"place":' },
          }],
        },
        { role: "tool", tool_call_id: "c1", content: "[tool result not kept]" },
        { role: "assistant", content: "Sorry." },
      ],
    });
  }
  await using client = await daemon.connect();
  await client.next("hello");
  await client.send({ type: "open", id: 1 });
  await client.next("conversation");
  llm.enqueue(reply({ content: ["Sunny."] }));
  await client.send({ type: "ask", text: "Again?" });
  await client.until(isIdle);
  const sent = (llm.chats[0]!.body as {
    messages: { tool_calls?: { function: { arguments: string } }[] }[];
  }).messages.flatMap((m) => m.tool_calls ?? []).map((c) =>
    c.function.arguments
  );
  assert.deepEqual(sent, ["{}"]);
});

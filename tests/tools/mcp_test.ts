/** MCP servers as tool sources, end to end against real servers: the SDK-written fixture and a published one from npm. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Daemon, inheritedEnv } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { isIdle, type SocketClient } from "../support/socket_client.ts";
import {
  filesystemCommand,
  fixtureCommand,
  mcpTable,
} from "../support/mcp_fixture.ts";

type Message = { role: string; content: string | null };
type Body = {
  messages: Message[];
  tools?: {
    function: {
      name: string;
      description: string;
      parameters: { properties: Record<string, unknown>; required: string[] };
    };
  }[];
};

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

function body(llm: FakeLlm, index: number): Body {
  return llm.chats[index]!.body as Body;
}

/** The tool messages the model read in chat request `index`. */
function toolResults(llm: FakeLlm, index: number): string[] {
  return body(llm, index).messages.filter((m) => m.role === "tool").map((m) =>
    m.content ?? ""
  );
}

function offered(llm: FakeLlm, index: number): string[] {
  return (body(llm, index).tools ?? []).map((tool) => tool.function.name);
}

async function ask(
  client: SocketClient,
  text: string,
): Promise<Awaited<ReturnType<SocketClient["until"]>>> {
  await client.send({ type: "ask", text });
  return await client.until(isIdle);
}

Deno.test("a server's tools are offered as NAME__tool with its schema; arguments of every type reach it; history keeps a placeholder", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: mcpTable("fix", fixtureCommand(), { confirm: false }),
  });
  await using client = await daemon.connect();
  await client.next("hello");
  const args = {
    text: "héllo",
    ratio: 0.5,
    count: 3,
    flag: true,
    tags: ["a", "b"],
    point: { x: 1, y: 2 },
    nothing: null,
    color: "green",
  };
  llm.enqueue(
    reply({
      toolCalls: [{ name: "fix__types", arguments: JSON.stringify(args) }],
    }),
    reply({ content: ["Echoed."] }),
  );
  const events = await ask(client, "Echo everything");
  assert.deepEqual(
    events.filter((e) => e.type === "tool").map((e) => [e.name, e.done]),
    [["fix__types", false], ["fix__types", true]],
  );
  // Sorted by name, not in the server's order: the start of every prompt stays the same.
  assert.deepEqual(offered(llm, 0), [
    "fix__big",
    "fix__crash",
    "fix__fail",
    "fix__image",
    "fix__sleep",
    "fix__types",
  ]);
  const schema =
    body(llm, 0).tools!.find((tool) => tool.function.name === "fix__types")!
      .function;
  assert.equal(
    schema.description,
    "Echoes one argument of each JSON-schema type",
  );
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(schema.parameters.properties).map((
        [key, value],
      ) => [key, (value as { type: string }).type]),
    ),
    {
      text: "string",
      ratio: "number",
      count: "integer",
      flag: "boolean",
      tags: "array",
      point: "object",
      nothing: "null",
      color: "string",
    },
  );
  assert.deepEqual(schema.parameters.required, ["text", "count"]);
  const [result] = toolResults(llm, 1);
  assert.deepEqual(JSON.parse(result!), {
    args,
    kinds: {
      text: "string",
      ratio: "number",
      count: "number",
      flag: "boolean",
      tags: "array",
      point: "object",
      nothing: "null",
      color: "string",
    },
  });

  llm.enqueue(reply({ content: ["Hi."] }));
  await ask(client, "And now?");
  const bytes = new TextEncoder().encode(result!).length;
  assert.match(
    toolResults(llm, 2)[0]!,
    new RegExp(
      `^\\[tool result not kept: fix__types, ${bytes} bytes, 1 line, \\d+\\.\\d s, ok\\]$`,
    ),
  );
});

Deno.test("an error, an image, a long text and a call past its timeout each come back to the model in words", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "tool_output_limit = 300\n" +
      mcpTable("fix", fixtureCommand(), { confirm: false, timeout: 1 }),
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({
      toolCalls: [
        { name: "fix__fail", arguments: "{}" },
        { name: "fix__image", arguments: "" },
        { name: "fix__big", arguments: '{"bytes":5000}' },
        { name: "fix__sleep", arguments: '{"seconds":30}' },
        { name: "fix__types", arguments: "[1]" },
      ],
    }),
    reply({ content: ["Noted."] }),
  );
  const events = await ask(client, "Try them all");
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
  const [fail, image, big, sleep, bad] = toolResults(llm, 1);
  assert.equal(
    fail,
    "The tool fix__fail reported an error:\nthe fixture failed on purpose",
  );
  assert.equal(image, "[image: image/png, 69 bytes, not shown]\na green dot");
  assert.equal(
    big,
    `${"x".repeat(300)}\n[output cut: 5000 bytes, first 300 shown]`,
  );
  assert.equal(
    sleep,
    "The tool fix__sleep was stopped after 1 seconds, its time limit, and gave no complete result.",
  );
  assert.match(bad!, /must be one JSON object\. The tool did not run\./);
});

Deno.test("a server that exits mid-call: the model is told, the server is restarted, its tools work again", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: mcpTable("fix", fixtureCommand(), { confirm: false }),
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({ toolCalls: [{ name: "fix__crash", arguments: "{}" }] }),
    reply({ content: ["It broke."] }),
  );
  const events = await ask(client, "Crash it");
  assert.ok(events.some((e) => e.type === "done" && e.stopped === false));
  assert.equal(
    toolResults(llm, 1)[0],
    "The tool fix__crash failed: its MCP server fix exited during the call. It is restarted; the call was not completed.",
  );
  assert.match(
    daemon.log,
    /mcp server down server=fix reason="it exited with status 7" retry_ms=1000/,
  );
  await daemon.waitForLog(/info mcp server ready server=fix/, 2);
  llm.enqueue(
    reply({
      toolCalls: [{
        name: "fix__types",
        arguments: '{"text":"back","count":1}',
      }],
    }),
    reply({ content: ["Back."] }),
  );
  await ask(client, "Again");
  assert.match(toolResults(llm, 3).at(-1)!, /"text":"back"/);
});

Deno.test("a server whose command does not exist is left out; the daemon starts with the others, and check names it", async () => {
  await using llm = await FakeLlm.start();
  const config = mcpTable("ghost", ["no-such-mcp-server-da-test", "--stdio"]) +
    mcpTable("broken", fixtureCommand(["--fail-start"])) +
    mcpTable("fix", fixtureCommand(), { confirm: false });
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: 'confirm_tools = ["fix__fail", "fix__typo"]\n' + config,
  });
  assert.match(
    daemon.log,
    /mcp server left out server=ghost reason="its executable no-such-mcp-server-da-test was not found on PATH"/,
  );
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(reply({ content: ["Hi."] }));
  await ask(client, "Hello");
  const names = offered(llm, 0);
  assert.ok(names.includes("fix__types"), names.join());
  assert.ok(!names.some((name) => /^(ghost|broken)__/.test(name)));

  const check = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", ...daemon.flags, MAIN, "check"],
    env: { ...inheritedEnv(), ...daemon.env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(check.stdout);
  assert.equal(check.code, 1, out);
  assert.match(
    out,
    /^fail mcp ghost: left out: its executable no-such-mcp-server-da-test was not found on PATH$/m,
  );
  assert.match(
    out,
    /^fail mcp broken: failed: it exited with status 3 before it was ready \(stderr: fixture: refusing to start as asked\)$/m,
  );
  assert.match(
    out,
    /^ok {3}mcp fix: 6 tools \(fix__types, fix__fail, fix__sleep, fix__image, fix__big, fix__crash\)$/m,
  );
  assert.match(
    out,
    /^warn confirm_tools: fix__typo matches no tool file or MCP tool: /m,
  );
});

Deno.test("the derived --allow-run names each server's executable, and the daemon refuses to start without it", async () => {
  await using llm = await FakeLlm.start();
  const config = mcpTable("fix", fixtureCommand(), { confirm: false });
  await using daemon = await Daemon.start({ llmUrl: llm.url, config });
  const run = daemon.flags.find((flag) => flag.startsWith("--allow-run="));
  // The server's executable (deno), beside a document converter found on PATH.
  assert.ok(
    run?.slice("--allow-run=".length).split(",").includes(
      Deno.realPathSync(Deno.execPath()),
    ),
    run,
  );

  const flags = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "flags"],
    env: { ...inheritedEnv(), ...daemon.env },
    clearEnv: true,
    stdout: "piped",
  }).output();
  assert.ok(
    new TextDecoder().decode(flags.stdout).split("\n").includes(run!),
  );

  await daemon.stop();
  await assert.rejects(
    Daemon.start({
      llmUrl: llm.url,
      config,
      home: daemon.home,
      flags: daemon.flags.filter((flag) => flag !== run),
    }),
    /Started without --allow-run=\S+deno/,
  );
});

Deno.test("a published server from npm: the filesystem server reads a file in its dir and refuses one outside", async () => {
  const dir = await Deno.makeTempDir({ prefix: "da-mcp-fs-" });
  try {
    await Deno.writeTextFile(join(dir, "note.txt"), "buy oat milk\n");
    await using llm = await FakeLlm.start();
    // The first run may download the package: the handshake gets time.
    await using daemon = await Daemon.start({
      llmUrl: llm.url,
      config: mcpTable("fs", filesystemCommand(dir), {
        confirm: false,
        timeout: 120,
      }),
    });
    await daemon.waitForLog(/info mcp server ready server=fs/, 1, 150_000);
    await using client = await daemon.connect();
    await client.next("hello");
    llm.enqueue(
      reply({
        toolCalls: [
          {
            name: "fs__read_text_file",
            arguments: JSON.stringify({ path: join(dir, "note.txt") }),
          },
          {
            name: "fs__read_text_file",
            arguments: JSON.stringify({ path: "/etc/hostname" }),
          },
        ],
      }),
      reply({ content: ["Oat milk."] }),
    );
    await ask(client, "What is on my list?");
    assert.ok(offered(llm, 0).includes("fs__list_directory"));
    const [inside, outside] = toolResults(llm, 1);
    assert.equal(inside, "buy oat milk\n");
    assert.match(outside!, /^The tool fs__read_text_file reported an error:\n/);
    assert.match(outside!, /outside allowed directories/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("MCP tools wait for approval unless their server says confirm = false", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: mcpTable("fix", fixtureCommand()),
  });
  await using client = await daemon.connect();
  await client.next("hello");
  llm.enqueue(
    reply({
      toolCalls: [{ name: "fix__types", arguments: '{"text":"ok","count":2}' }],
    }),
    reply({ content: ["Done."] }),
  );
  await client.send({ type: "ask", text: "Use the fixture" });
  const confirm = (await client.until((e) => e.type === "confirm")).at(-1)!;
  assert.equal(confirm.tool, "fix__types");
  assert.deepEqual(confirm.args, { text: "ok", count: 2 });
  await client.send({ type: "approve", call: confirm.call, allow: true });
  await client.until(isIdle);
  assert.match(toolResults(llm, 1)[0]!, /"text":"ok"/);
});

/** Pids of processes whose argv holds `tag`. */
async function processesTagged(tag: string): Promise<number[]> {
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const argv = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (argv.split("\0").includes(tag)) pids.push(Number(entry.name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Waits until no process carries `tag`; the server is another process, and /proc is the only word it gives. */
async function noneLeft(tag: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await processesTagged(tag)).length > 0) {
    if (Date.now() > deadline) {
      throw new Error(`a server tagged ${tag} lives on`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test("the servers end with the daemon: at SIGTERM it ends them, after SIGKILL their input closes and they exit", async () => {
  await using llm = await FakeLlm.start();
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    const tag = `--tag=${crypto.randomUUID()}`;
    await using daemon = await Daemon.start({
      llmUrl: llm.url,
      config: mcpTable("fix", fixtureCommand([tag]), { confirm: false }),
    });
    assert.equal((await processesTagged(tag)).length, 1);
    const status = await daemon.stop(signal);
    if (signal === "SIGTERM") {
      assert.equal(status.code, 0);
      assert.deepEqual(await processesTagged(tag), [], "ended before the exit");
    }
    await noneLeft(tag);
  }
});

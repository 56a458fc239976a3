import assert from "node:assert/strict";
import { join } from "node:path";
import {
  clientFlags,
  DaemonClient,
  EventStream,
  noDaemonMessage,
} from "../../src/clients/client.ts";
import { AssistantError } from "../../src/base/errors.ts";
import { LineStream } from "../../src/streams/line_stream.ts";

const encoder = new TextEncoder();

/** A one-connection Unix socket server that plays `greet` and records what it reads. */
async function fakeDaemon(
  greet: string,
  run: (path: string, received: Promise<string>) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "da-client-" });
  const path = join(dir, "desktop-assistant.sock");
  const listener = Deno.listen({ transport: "unix", path });
  const received = Promise.withResolvers<string>();
  const serving = (async () => {
    const conn = await listener.accept();
    await conn.write(encoder.encode(greet));
    let text = "";
    for await (
      const chunk of conn.readable.pipeThrough(new TextDecoderStream())
    ) {
      text += chunk;
    }
    received.resolve(text);
  })();
  try {
    await run(path, received.promise);
  } finally {
    listener.close();
    await serving;
    await Deno.remove(dir, { recursive: true });
  }
}

const HELLO = JSON.stringify({
  type: "hello",
  state: "idle",
  model: null,
  ctx_used: null,
  ctx_max: null,
  id: null,
  turns: [],
  pending: null,
});

Deno.test("DaemonClient greets, sends commands as JSON lines and reads events in order", async () => {
  const events =
    `${HELLO}\n{"type":"user","text":"hi"}\n{"type":"token","delta":"yo"}\n`;
  await fakeDaemon(events, async (path, received) => {
    const client = await DaemonClient.connect({ path });
    assert.equal(client.hello.type, "hello");
    assert.equal(client.hello.state, "idle");
    await Promise.all([
      client.send({ type: "ask", text: "hi" }),
      client.send({ type: "stop" }),
    ]);
    assert.deepEqual(await client.next(), { type: "user", text: "hi" });
    assert.deepEqual(await client.next(), { type: "token", delta: "yo" });
    await client.close();
    assert.equal(await client.next(), null);
    assert.equal(
      await received,
      '{"type":"ask","text":"hi"}\n{"type":"stop"}\n',
    );
  });
});

Deno.test("DaemonClient.next is null once the daemon closes the connection", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "s.sock");
  using listener = Deno.listen({ transport: "unix", path });
  const accepted = listener.accept().then(async (conn) => {
    await conn.write(encoder.encode(HELLO + "\n"));
    conn.close();
  });
  await using client = await DaemonClient.connect({ path });
  await accepted;
  assert.equal(await client.next(), null);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a refusal before hello becomes an error naming the reason", async () => {
  await fakeDaemon(
    '{"type":"error","message":"too many clients (max 1)"}\n',
    async (path) => {
      await assert.rejects(
        DaemonClient.connect({ path }),
        (error) =>
          error instanceof AssistantError &&
          error.message ===
            "The daemon refused the connection: too many clients (max 1)",
      );
    },
  );
});

Deno.test("no socket file, or a stale one, says no daemon answers and how to start it", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "desktop-assistant.sock");
  await assert.rejects(
    DaemonClient.connect({
      env: (name) => name === "XDG_RUNTIME_DIR" ? dir : undefined,
    }),
    (error) =>
      error instanceof AssistantError &&
      error.message === noDaemonMessage(path) &&
      /start it with: deno task start \(or assistant\.sh start\)$/.test(
        error.message,
      ),
  );
  // A daemon killed outright leaves its socket file behind, refusing connections.
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `Deno.listen({ transport: "unix", path: ${JSON.stringify(path)} });` +
      `console.log("listening"); setInterval(() => {}, 1000);`,
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assert.match((await reader.read()).value ?? "", /listening/);
  child.kill("SIGKILL");
  await child.status;
  await reader.cancel();
  assert.ok((await Deno.lstat(path)).isSocket);
  await assert.rejects(DaemonClient.connect({ path }), {
    message: noDaemonMessage(path),
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a missing XDG_RUNTIME_DIR is named with the fix", async () => {
  await assert.rejects(
    DaemonClient.connect({ env: () => undefined }),
    /XDG_RUNTIME_DIR is not set/,
  );
});

Deno.test("a listener that never greets fails within the hello timeout", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "s.sock");
  using listener = Deno.listen({ transport: "unix", path });
  const accepted = listener.accept();
  await assert.rejects(
    DaemonClient.connect({ path, helloTimeoutMs: 50 }),
    /sent no greeting within 50 ms/,
  );
  (await accepted).close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a socket that speaks something else is refused as a bad greeting", async () => {
  await fakeDaemon("SSH-2.0-OpenSSH_9.6\n", async (path) => {
    await assert.rejects(DaemonClient.connect({ path }), /bad greeting/);
  });
});

Deno.test("EventStream parses lines and rejects non-events with the right error class", async () => {
  const parse = async (text: string) => {
    const out: unknown[] = [];
    const stream = ReadableStream.from([encoder.encode(text)])
      .pipeThrough(new LineStream({ maxBytes: 64 }))
      .pipeThrough(new EventStream());
    for await (const event of stream) out.push(event);
    return out;
  };
  assert.deepEqual(await parse('{"type":"pong"}\n\n{"type":"state"}'), [
    { type: "pong" },
    { type: "state" },
  ]);
  await assert.rejects(parse("nope\n"), SyntaxError);
  await assert.rejects(parse('{"kind":1}\n'), TypeError);
  await assert.rejects(parse(`{"type":"${"x".repeat(100)}"}\n`), RangeError);
});

Deno.test("clientFlags grant the socket and nothing else", () => {
  assert.deepEqual(clientFlags("/run/user/1000/desktop-assistant.sock"), [
    "--allow-net=unix:/run/user/1000/desktop-assistant.sock",
    "--allow-read=/run/user/1000/desktop-assistant.sock",
    "--allow-write=/run/user/1000/desktop-assistant.sock",
    "--allow-env=XDG_RUNTIME_DIR",
  ]);
  assert.throws(() => clientFlags("/tmp/a,b/s.sock"), AssistantError);
});

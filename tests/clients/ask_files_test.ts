import assert from "node:assert/strict";
import { join } from "node:path";
import { runAsk } from "../../src/clients/ask.ts";
import { terminalClientFlags } from "../../src/launch/client_flags.ts";
import {
  clientArgs,
  clientEnv,
  MAIN,
  runClient,
  startDaemon,
  tempHome,
  within,
} from "../support/client_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { PNG_1PX, sentContent, VISION } from "./files_fixture.ts";

/** `deno run` arguments for ask with the grants `deno task ask` gives it. */
function askArgs(socket: string, args: string[]): string[] {
  return [
    "run",
    "--quiet",
    ...terminalClientFlags("ask", socket, () => undefined),
    MAIN,
    "ask",
    ...args,
  ];
}

Deno.test("ask --file sends a text file and a picture with the question, read where the user started it", async () => {
  await using llm = await FakeLlm.start({ models: [VISION] });
  llm.enqueue(reply({ content: ["Seen", "."] }));
  await using daemon = await startDaemon(llm.url);
  await using home = await tempHome();
  await Deno.writeTextFile(join(home.path, "notes.txt"), "buy milk\n");
  // A picture named as another type is sent as the picture its bytes are.
  await Deno.writeFile(join(home.path, "dot.jpg"), PNG_1PX);
  const result = await runClient(
    askArgs(daemon.paths.socketPath, [
      "--file",
      "notes.txt",
      "--file",
      join(home.path, "dot.jpg"),
      "What are these?",
    ]),
    clientEnv(daemon.paths.runtimeDir, { INIT_CWD: home.path }),
  );
  assert.equal(result.stderr, "");
  assert.equal(result.stdout, "Seen.\n");
  assert.equal(result.code, 0);
  const { text, images } = sentContent(llm.chats[0]?.body);
  assert.match(text, /What are these\?\n\nFile notes\.txt:\n`+\nbuy milk\n/);
  assert.deepEqual(images, [`data:image/png;base64,${PNG_1PX.toBase64()}`]);
});

Deno.test("ask refuses a file it cannot read or that cannot go, names it, sends nothing and exits 1", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await startDaemon(llm.url);
  await using home = await tempHome();
  const big = new Uint8Array(500 * 1024).fill(0x61);
  await Deno.writeFile(join(home.path, "a.txt"), big);
  await Deno.writeFile(join(home.path, "b.txt"), big);
  await Deno.writeFile(join(home.path, "empty.txt"), new Uint8Array());
  const missing = join(home.path, "missing.txt");
  const cases: [string[], string][] = [
    [["--file", missing], `cannot read ${missing}: no such file\n`],
    [["--file", home.path], `cannot read ${home.path}: it is a directory\n`],
    [
      ["--file", join(home.path, "empty.txt")],
      `${join(home.path, "empty.txt")} is empty\n`,
    ],
    [
      ["--file", join(home.path, "a.txt"), "--file", join(home.path, "b.txt")],
      "the files are 1,000 KB together; one question carries at most about 750 KB\n",
    ],
    [
      Array(9).fill(["--file", join(home.path, "a.txt")]).flat(),
      "one question carries at most 8 files, not 9\n",
    ],
  ];
  for (const [files, said] of cases) {
    const result = await runClient(
      askArgs(daemon.paths.socketPath, [...files, "Well?"]),
      clientEnv(daemon.paths.runtimeDir),
    );
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stdout, "");
    assert.equal(result.stderr, said);
  }
  assert.equal(llm.chats.length, 0, "no question reached the model");
});

Deno.test("ask with a question over the line limit says so before sending it and exits 1 at once", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await startDaemon(llm.url);
  const question = "word ".repeat(250_000);
  const result = await within(
    runClient(
      clientArgs(daemon.paths.socketPath, ["ask"]),
      clientEnv(daemon.paths.runtimeDir),
      question,
    ),
    "ask to end",
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.equal(
    result.stderr,
    "the question is 1.2 MB; one question carries at most 1 MB (the daemon's line limit): shorten it\n",
  );
  assert.equal(llm.chats.length, 0);
  assert.doesNotMatch(daemon.log, /line_too_long|too long/);
});

/** A stand-in daemon that greets, then answers every line it reads with `line_too_long`, as the daemon does a line over its limit. */
async function refusingDaemon(): Promise<
  { dir: string; lines: () => number } & AsyncDisposable
> {
  const dir = await Deno.makeTempDir({ prefix: "da-refuse-" });
  const listener = Deno.listen({
    transport: "unix",
    path: join(dir, "desktop-assistant.sock"),
  });
  let lines = 0;
  let open: Deno.Conn | null = null;
  const served = (async () => {
    const conn = await listener.accept();
    open = conn;
    const write = (event: unknown) =>
      conn.write(new TextEncoder().encode(JSON.stringify(event) + "\n"));
    await write({
      type: "hello",
      state: "idle",
      model: null,
      ctx_used: null,
      ctx_max: null,
      id: null,
      turns: [],
      pending: null,
    });
    for await (
      const chunk of conn.readable.pipeThrough(new TextDecoderStream())
    ) {
      for (const _ of chunk.matchAll(/\n/g)) {
        lines++;
        await write({
          type: "error",
          code: "line_too_long",
          message: "line too long",
        });
      }
    }
  })();
  return {
    dir,
    lines: () => lines,
    [Symbol.asyncDispose]: async () => {
      listener.close();
      // A client still connected is let go, whatever it waits for.
      try {
        (open as Deno.Conn | null)?.close();
      } catch {
        // Closed by the client already.
      }
      await served.catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("ask ends with the daemon's line_too_long, on stderr, exit 1", async () => {
  await using daemon = await refusingDaemon();
  let stdout = "";
  let stderr = "";
  const text = (add: (s: string) => void) => ({
    write: (bytes: Uint8Array) => {
      add(new TextDecoder().decode(bytes));
      return Promise.resolve(bytes.length);
    },
  });
  const code = await within(
    runAsk(["A question"], {
      env: (name) => name === "XDG_RUNTIME_DIR" ? daemon.dir : undefined,
      stdout: text((s) => stdout += s),
      stderr: text((s) => stderr += s),
      interrupt: new AbortController().signal,
      terminal: { stdout: false, stderr: false },
    }),
    "ask to end",
  );
  assert.equal(code, 1);
  assert.equal(stdout, "");
  assert.equal(stderr, "line too long\n");
  assert.equal(daemon.lines(), 1);
});

/**
 * llama-server faults beyond tests/turn_errors_test.ts: a TCP reset
 * mid-stream, HTTP 500 with the body llama-server really sends, a drip of
 * one byte a second, and a server process that dies mid-stream and comes
 * back. Each ends the reply with its `error` (the drip completes), nothing
 * partial is saved, and the next `ask` works.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Daemon } from "../support/daemon_harness.ts";
import {
  type ChatContext,
  chunk,
  FakeLlm,
  fixture,
  httpError,
  reply,
  type Script,
} from "../support/fake_llm.ts";
import {
  isIdle,
  type Received,
  type SocketClient,
} from "../support/socket_client.ts";

const CAPTURES = new URL("../fixtures/llama-server/single/", import.meta.url)
  .pathname;
const LLM_PROCESS = new URL("../fixtures/llm_process.ts", import.meta.url)
  .pathname;

const tokens = (events: Received[]) =>
  events.filter((e) => e.type === "token").map((e) => e.delta).join("");

function storedReplies(daemon: Daemon): [string, string][] {
  const db = new DatabaseSync(daemon.paths.dbPath, { readOnly: true });
  try {
    return db.prepare("SELECT user, reply FROM turns ORDER BY id").all().map((
      row,
    ) => [String(row.user), String(row.reply)]);
  } finally {
    db.close();
  }
}

/** Asks, and checks the reply fails with exactly one turn error matching `message`. */
async function expectFailure(
  client: SocketClient,
  question: string,
  message: RegExp,
): Promise<Received[]> {
  await client.send({ type: "ask", text: question });
  const events = await client.until(isIdle);
  const errors = events.filter((e) => e.type === "error");
  assert.equal(errors.length, 1, JSON.stringify(events));
  assert.equal(errors[0]!.turn, true);
  assert.match(errors[0]!.message as string, message);
  assert.ok(
    !events.some((e) => e.type === "done"),
    "a failed reply has no done",
  );
  return events;
}

/** Asks, and checks the reply completes with `expected` as its text. */
async function expectReply(
  client: SocketClient,
  question: string,
  expected: string,
): Promise<void> {
  await client.send({ type: "ask", text: question });
  const events = await client.until(isIdle);
  assert.ok(!events.some((e) => e.type === "error"), JSON.stringify(events));
  assert.equal(tokens(events), expected);
  assert.equal(events.filter((e) => e.type === "done").length, 1);
  assert.equal(events.find((e) => e.type === "done")!.stopped, false);
}

Deno.test("HTTP 500 with llama-server's JSON body, or a bare one, is named; the next ask works", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  // Captured from a real llama-server: a template error on a streaming request.
  llm.enqueue(fixture(`${CAPTURES}err_bad_role_stream.sse`));
  await expectFailure(
    client,
    "First",
    /^llama-server answered 500: \n-+\nWhile executing CallExpression .*No user query found in messages\.$/s,
  );
  llm.enqueue(fixture(`${CAPTURES}err_bad_json.json`));
  await expectFailure(
    client,
    "Second",
    /^llama-server answered 500: \[json\.exception\.parse_error\.101\] parse error/,
  );
  llm.enqueue(httpError(500, "<html>upstream broke</html>"));
  await expectFailure(
    client,
    "Third",
    /^llama-server answered 500: Internal Server Error$/,
  );
  llm.enqueue(reply({ content: ["Fine ", "now."] }));
  await expectReply(client, "Fourth", "Fine now.");
  assert.deepEqual(storedReplies(daemon), [["Fourth", "Fine now."]]);
});

/** A reply whose middle arrives one byte a second, each byte resetting the stall timer. */
function drip(bytes: number): Script {
  return {
    *steps(context: ChatContext) {
      yield { send: chunk(context, { role: "assistant", content: null }) };
      yield { send: chunk(context, { content: "Slow " }) };
      const event = chunk(context, { content: "and steady." });
      const start = event.length - bytes - 2;
      yield { send: event.slice(0, start) };
      for (let i = start; i < event.length - 2; i++) {
        yield { delayMs: 1000 };
        yield { send: event[i]! };
      }
      yield { send: event.slice(-2) };
      yield { send: chunk(context, {}, "stop") };
      yield {
        send: chunk(context, null, null, {
          usage: { completion_tokens: 2, prompt_tokens: 15, total_tokens: 17 },
        }),
      };
      yield { send: "data: [DONE]\n\n" };
    },
  };
}

Deno.test("a drip of one byte a second outlasts stall_timeout and completes", async () => {
  await using llm = await FakeLlm.start();
  await using daemon = await Daemon.start({
    llmUrl: llm.url,
    config: "stall_timeout = 2\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");

  // Four bytes at one a second: longer in all than the 2 s limit.
  llm.enqueue(drip(4));
  await expectReply(client, "Take your time", "Slow and steady.");
  llm.enqueue(reply({ content: ["Next."] }));
  await expectReply(client, "And again", "Next.");
  assert.deepEqual(storedReplies(daemon), [
    ["Take your time", "Slow and steady."],
    ["And again", "Next."],
  ]);
  assert.doesNotMatch(daemon.log, /stalled/);
});

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A raw HTTP/1.1 stand-in for llama-server, one request per connection: the
 * captured model list and props, a full reply, or, when armed, a partial
 * reply that ends in a TCP reset (the socket closes with request bytes left
 * unread, so the kernel answers with RST instead of FIN).
 */
class ResettingLlm implements AsyncDisposable {
  readonly url: string;
  readonly #listener: Deno.TcpListener;
  readonly #tasks = new Set<Promise<void>>();
  readonly #accepting: Promise<void>;
  #armed: PromiseWithResolvers<void> | null = null;
  #abortsBefore: number | null = null;

  /**
   * Whether the kernel counted a close that had to send RST for unread data
   * since the armed connection closed. The socket's close, and so the count,
   * can land after `close()` returns and even after the daemon has reacted,
   * and the kernel offers no event for it: the count is read again for up to
   * two seconds.
   */
  async reset(): Promise<boolean> {
    const deadline = performance.now() + 2000;
    for (;;) {
      const counted = this.#abortsBefore !== null &&
        abortsOnClose() > this.#abortsBefore;
      if (counted || performance.now() > deadline) return counted;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  constructor() {
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.url = `http://127.0.0.1:${this.#listener.addr.port}`;
    this.#accepting = this.#accept();
  }

  /** Makes the next chat request end in a reset once `release` is called. */
  armReset(): () => void {
    const armed = Promise.withResolvers<void>();
    this.#armed = armed;
    return () => armed.resolve();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#armed?.resolve();
    this.#listener.close();
    await this.#accepting;
    await Promise.all([...this.#tasks]);
  }

  async #accept(): Promise<void> {
    for (;;) {
      let conn: Deno.TcpConn;
      try {
        conn = await this.#listener.accept();
      } catch {
        return;
      }
      const task = this.#serve(conn).catch(() => {}).finally(() => {
        try {
          conn.close();
        } catch {
          // Closed on purpose already.
        }
        this.#tasks.delete(task);
      });
      this.#tasks.add(task);
    }
  }

  async #serve(conn: Deno.TcpConn): Promise<void> {
    // Only the method is read first: a reset needs the rest left unread.
    const head = new Uint8Array(8);
    let got = 0;
    while (got < head.length) {
      const n = await conn.read(head.subarray(got));
      if (n === null) return;
      got += n;
    }
    const armed = this.#armed;
    // "POST /v1" is the chat; a POST /tokenize gets the 404 below.
    if (decoder.decode(head) === "POST /v1" && armed) {
      this.#armed = null;
      await write(conn, sseHead + events(["par", "tial "], false));
      await armed.promise;
      this.#abortsBefore = abortsOnClose();
      conn.close();
      return;
    }
    const request = await readRest(conn, head);
    const path = request.split(" ")[1] ?? "";
    if (request.startsWith("POST /v1/chat/completions")) {
      await write(conn, sseHead + events(["Fine ", "now."], true));
    } else if (path.startsWith("/v1/models") || path.startsWith("/props")) {
      const name = path.startsWith("/props") ? "get_props" : "get_v1_models";
      const body = await Deno.readFile(`${CAPTURES}${name}.json`);
      await write(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      );
      await write(conn, body);
    } else {
      await write(
        conn,
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
      );
    }
  }
}

// Chunked, as llama-server sends its streams.
/** Linux's count of closes answered with RST (TcpExt TCPAbortOnClose). */
function abortsOnClose(): number {
  const [keys = "", values = ""] = Deno.readTextFileSync("/proc/net/netstat")
    .split("\n");
  const at = keys.split(" ").indexOf("TCPAbortOnClose");
  return Number(values.split(" ")[at]);
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" +
  "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

function chunked(data: string): string {
  return `${encoder.encode(data).length.toString(16)}\r\n${data}\r\n`;
}

function events(texts: string[], complete: boolean): string {
  const context: ChatContext = {
    body: {},
    model: "/srv/models/tiny.gguf",
    includeUsage: true,
    id: "chatcmpl-reset",
    created: 0,
    promptTokens: 15,
    room: 4081,
  };
  let out = chunked(chunk(context, { role: "assistant", content: null }));
  for (const text of texts) out += chunked(chunk(context, { content: text }));
  if (complete) {
    out += chunked(chunk(context, {}, "stop")) + chunked("data: [DONE]\n\n") +
      "0\r\n\r\n";
  }
  return out;
}

async function write(conn: Deno.Conn, data: string | Uint8Array) {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  for (let at = 0; at < bytes.length;) {
    at += await conn.write(bytes.subarray(at));
  }
}

/** Reads the rest of a request: its head and a Content-Length body. */
async function readRest(conn: Deno.Conn, start: Uint8Array): Promise<string> {
  let text = decoder.decode(start);
  const buffer = new Uint8Array(64 * 1024);
  const complete = () => {
    const end = text.indexOf("\r\n\r\n");
    if (end === -1) return false;
    const length = Number(text.match(/^content-length: *(\d+)/im)?.[1] ?? 0);
    return encoder.encode(text.slice(end + 4)).length >= length;
  };
  while (!complete()) {
    const n = await conn.read(buffer);
    if (n === null) break;
    text += decoder.decode(buffer.subarray(0, n));
  }
  return text;
}

Deno.test("a TCP reset mid-stream ends the reply with an error; the next ask works", async () => {
  await using llm = new ResettingLlm();
  await using daemon = await Daemon.start({ llmUrl: llm.url });
  await using client = await daemon.connect();
  await client.next("hello");

  // Closing with unread data makes the kernel send a reset, but under load
  // it now and then closes in order instead: then the premise did not hold,
  // and the same fault is played again (at most three times in all).
  let reset = false;
  for (let attempt = 0; attempt < 3 && !reset; attempt++) {
    const release = llm.armReset();
    await client.send({ type: "ask", text: "Will it break" });
    const seen = await client.until((e) =>
      e.type === "token" && e.delta === "tial "
    );
    assert.equal(tokens(seen), "partial ");
    release();
    const events = await client.until(isIdle);
    assert.deepEqual(events, [
      {
        type: "error",
        code: "stream_closed_early",
        message: "llama-server closed the stream early",
        turn: true,
      },
      { type: "state", state: "idle" },
    ]);
    reset = await llm.reset();
  }
  assert.ok(reset, "the kernel sent a reset");
  // The cause in the log is a broken read (named by class and where it was
  // thrown, since a cause's message may quote the stream), not an orderly
  // end of the body.
  assert.match(
    daemon.log,
    /reply failed .*closed the stream early \(cause: TypeError(?: at [^"]*)?\)"/,
  );

  await expectReply(client, "Again", "Fine now.");
  assert.deepEqual(storedReplies(daemon), [["Again", "Fine now."]]);
});

interface LlmProcess {
  port: number;
  child: Deno.ChildProcess;
}

/** Starts tests/fixtures/llm_process.ts and waits for its `listening` line. */
async function startLlmProcess(
  port: number,
  mode: "hold" | "reply",
): Promise<LlmProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-net=127.0.0.1",
      LLM_PROCESS,
      String(port),
      mode,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  let text = "";
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  await reader.cancel();
  const match = text.match(/^listening (\d+)\n/);
  if (!match) {
    child.kill("SIGKILL");
    await child.status;
    throw new Error(`llm_process did not start: ${JSON.stringify(text)}`);
  }
  return { port: Number(match[1]), child };
}

Deno.test("llama-server killed mid-stream: an error, refused while it is down, then it comes back", async () => {
  const first = await startLlmProcess(0, "hold");
  const url = `http://127.0.0.1:${first.port}`;
  let second: LlmProcess | null = null;
  try {
    await using daemon = await Daemon.start({ llmUrl: url });
    await using client = await daemon.connect();
    await client.next("hello");

    await client.send({ type: "ask", text: "Start talking" });
    await client.until((e) => e.type === "token" && e.delta === "answer ");
    first.child.kill("SIGKILL");
    assert.equal((await first.child.status).signal, "SIGKILL");
    const events = await client.until(isIdle);
    assert.deepEqual(events, [
      {
        type: "error",
        code: "stream_closed_early",
        message: "llama-server closed the stream early",
        turn: true,
      },
      { type: "state", state: "idle" },
    ]);

    await expectFailure(
      client,
      "Anyone?",
      new RegExp(`^llama-server unreachable at ${url}$`),
    );

    second = await startLlmProcess(first.port, "reply");
    await expectReply(client, "Back?", "Back again.");
    assert.deepEqual(storedReplies(daemon), [["Back?", "Back again."]]);
  } finally {
    for (const llm of [first, second]) {
      if (!llm) continue;
      try {
        llm.child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
      await llm.child.status;
    }
  }
});

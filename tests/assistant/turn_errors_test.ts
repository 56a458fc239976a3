/**
 * Every way llama-server can fail a reply: each gives one `error` with
 * `turn: true`, state idle, nothing saved, and the next `ask` works.
 */
import assert from "node:assert/strict";
import { LocalDaemon } from "../support/assistant_harness.ts";
import {
  cut,
  FakeLlm,
  httpError,
  malformed,
  reply,
  type Script,
  stall,
  streamError,
} from "../support/fake_llm.ts";
import { isIdle } from "../support/socket_client.ts";
import type { ErrorCode } from "../../src/protocol/protocol.ts";

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  return port;
}

const CASES: {
  name: string;
  script: Script;
  code: ErrorCode;
  message: RegExp;
}[] = [
  {
    // The first question of a conversation: no history to leave out.
    name: "an HTTP 400 for a request longer than the context",
    script: httpError(400, {
      message:
        "request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it",
      type: "exceed_context_size_error",
      n_prompt_tokens: 5000,
      n_ctx: 4096,
    }),
    code: "question_too_long",
    message:
      /^the question is too long for the model's context \(5000 tokens, the context holds 4096\)$/,
  },
  {
    name: "an HTTP 400 with llama-server's error body",
    script: httpError(400, {
      message: "invalid 'tool_choice'",
      type: "invalid_request_error",
    }),
    code: "llama_http_error",
    message: /^llama-server answered 400: invalid 'tool_choice'$/,
  },
  {
    name: "an HTTP 503 while the model loads",
    script: httpError(503, {
      message: "Loading model",
      type: "unavailable_error",
    }),
    code: "llama_http_error",
    message: /^llama-server answered 503: Loading model$/,
  },
  {
    name: "an error chunk inside the stream",
    script: streamError("Context size has been exceeded.", {
      tokens: ["par", "tial"],
    }),
    code: "llama_error",
    message: /^llama-server error: Context size has been exceeded\.$/,
  },
  {
    name: "an HTTP 500 whose message quotes the turn",
    script: httpError(500, {
      message:
        "Failed to parse tool call arguments as JSON: Fine now, said the model",
      type: "server_error",
    }),
    code: "llama_http_error",
    message:
      /^llama-server answered 500: Failed to parse tool call arguments as JSON: Fine now, said the model$/,
  },
  {
    name: "an error chunk that quotes the turn",
    script: streamError("Failed to parse input at pos 0: <tool_call>Fine now"),
    code: "llama_error",
    message:
      /^llama-server error: Failed to parse input at pos 0: <tool_call>Fine now$/,
  },
  {
    name: "a malformed chunk",
    // Its text must not reach the log through the parse error's message.
    script: malformed({
      tokens: ["a"],
      data: "Fine now, said the private chunk",
    }),
    code: "malformed_stream",
    message: /^malformed stream$/,
  },
  {
    name: "a connection cut mid-stream",
    script: cut({ tokens: ["a", "b"] }),
    code: "stream_closed_early",
    message: /^llama-server closed the stream early$/,
  },
  {
    name: "a stall before the first byte",
    script: stall(),
    code: "llama_stalled",
    message: /^llama-server stalled$/,
  },
  {
    name: "a stall after some tokens",
    script: stall({ tokens: ["a"] }),
    code: "llama_stalled",
    message: /^llama-server stalled$/,
  },
];

Deno.test("each llama-server fault ends the reply with its error, then a good ask works", async (t) => {
  await using llm = await FakeLlm.start();
  await using daemon = await LocalDaemon.start({
    llmUrl: llm.url,
    config: "stall_timeout = 0.3\n",
  });
  await using client = await daemon.connect();
  await client.next("hello");

  for (const { name, script, code, message } of CASES) {
    await t.step(name, async () => {
      llm.enqueue(script, reply({ content: ["Fine ", "now."] }));
      await client.send({ type: "ask", text: `Question for ${name}` });
      const failed = await client.until(isIdle);
      const errors = failed.filter((e) => e.type === "error");
      assert.equal(errors.length, 1, JSON.stringify(failed));
      assert.equal(errors[0]!.turn, true);
      assert.equal(errors[0]!.code, code);
      assert.match(errors[0]!.message as string, message);
      assert.ok(
        !failed.some((e) => e.type === "done"),
        "a failed reply has no done",
      );

      await client.send({ type: "ask", text: "And now?" });
      const good = await client.until(isIdle);
      assert.equal(
        good.filter((e) => e.type === "token").map((e) => e.delta).join(""),
        "Fine now.",
      );
      assert.ok(good.some((e) => e.type === "done" && e.stopped === false));
    });
  }

  // Only the good replies were saved, all in the one conversation.
  await client.send({ type: "open", id: 1 });
  const opened = await client.next("conversation");
  assert.equal(opened.turns.length, CASES.length);
  assert.ok(
    opened.turns.every((turn) =>
      turn.user === "And now?" && turn.reply === "Fine now."
    ),
  );
  assert.doesNotMatch(
    daemon.log,
    /Question for|Fine now/,
    "no personal text in the log",
  );
});

Deno.test("an unreachable llama-server is named in the error, and the daemon recovers when it appears", async () => {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  await using daemon = await LocalDaemon.start({ llmUrl: url });
  await using client = await daemon.connect();
  await client.next("hello");

  await client.send({ type: "ask", text: "Anyone there?" });
  const failed = await client.until(isIdle);
  const error = failed.find((e) => e.type === "error");
  assert.deepEqual(error, {
    type: "error",
    code: "llama_unreachable",
    message: `llama-server unreachable at ${url}`,
    turn: true,
  });

  await using llm = await FakeLlm.start({ port });
  llm.enqueue(reply({ content: ["Here."] }));
  await client.send({ type: "ask", text: "Now?" });
  const good = await client.until(isIdle);
  assert.ok(good.some((e) => e.type === "done" && e.stopped === false));
});

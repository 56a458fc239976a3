/** The fake llama-server's context and tokens: the captured 400, length at the context end or max_tokens, /tokenize and /apply-template. */
import assert from "node:assert/strict";
import { log } from "../../src/base/log.ts";
import { FakeLlm, fixturesDir, reply } from "./fake_llm.ts";
import { events, post, shape, shapes } from "./fake_llm_sse.ts";

const FIXTURES = fixturesDir();
const noFixtures = FIXTURES === null;
if (noFixtures) {
  log.warn("llama-server captures not found: fixture tests are skipped");
}

/** A JSON capture of the single-model folder. */
function captured(name: string): unknown {
  return JSON.parse(Deno.readTextFileSync(`${FIXTURES}/single/${name}`));
}

Deno.test({
  name:
    "a prompt longer than the context gets the captured 400, with both sizes",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start({
      models: [{ id: "/srv/models/tiny.gguf", nCtx: 64 }],
    });
    const question = "word ".repeat(200);
    const response = await post(llm, {
      messages: [{ role: "user", content: question }],
      stream: true,
    });
    assert.equal(response.status, 400);
    assert.equal(
      response.headers.get("content-type"),
      "application/json; charset=utf-8",
    );
    const body = await response.json();
    const real = captured("err_prompt_too_long_nonstream.json") as {
      error: Record<string, unknown>;
    };
    assert.deepEqual(shape(body), shape(real));
    const prompt = llm.chats[0]!.promptTokens!;
    assert.ok(prompt > 200);
    assert.equal(body.error.n_prompt_tokens, prompt);
    assert.equal(body.error.n_ctx, 64);
    assert.equal(
      body.error.message,
      (real.error.message as string).replace("5011", String(prompt))
        .replace("4096", "64"),
    );
  },
});

Deno.test({
  name:
    "a reply that reaches the context end finishes with length at exactly n_ctx, as captured",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start({
      models: [{ id: "/srv/models/tiny.gguf", nCtx: 100 }],
    });
    llm.enqueue(reply({ content: Array(500).fill(" word") }));
    const text = await (await post(llm, {
      messages: [{ role: "user", content: "Tell me everything" }],
      stream: true,
      stream_options: { include_usage: true },
    })).text();
    const real = Deno.readTextFileSync(
      `${FIXTURES}/single/stream_context_end_length.sse`,
    );
    assert.deepEqual(shapes(text), shapes(real));
    const chunks = events(text).slice(0, -1).map((d) => JSON.parse(d));
    assert.equal(chunks.at(-2).choices[0].finish_reason, "length");
    const { usage } = chunks.at(-1);
    assert.equal(usage.total_tokens, 100);
    assert.equal(usage.prompt_tokens, llm.chats[0]!.promptTokens);
    assert.equal(usage.completion_tokens, chunks.length - 3);
  },
});

Deno.test({
  name:
    "max_tokens cuts a reply with length short of the context end, as captured",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: Array(50).fill(" word") }));
    const text = await (await post(llm, {
      messages: [{ role: "user", content: "Hi" }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 5,
    })).text();
    const real = Deno.readTextFileSync(
      `${FIXTURES}/single/stream_max_tokens_length.sse`,
    );
    assert.deepEqual(shapes(text), shapes(real));
    const chunks = events(text).slice(0, -1).map((d) => JSON.parse(d));
    assert.equal(chunks.at(-2).choices[0].finish_reason, "length");
    assert.equal(chunks.at(-1).usage.completion_tokens, 5);
    assert.ok(chunks.at(-1).usage.total_tokens < 4096);
    // Usage has the fields of the captured non-streamed answers too.
    const turn = captured("usage_turn1_nonstream.json") as { usage: unknown };
    assert.deepEqual(shape(chunks.at(-1).usage), shape(turn.usage));
  },
});

Deno.test({
  name:
    "tokenize and apply-template answer as captured; chat prompts count the template",
  ignore: noFixtures,
  async fn() {
    await using llm = await FakeLlm.start();
    const call = async (path: string, body: unknown) =>
      await (await fetch(llm.url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })).json();
    const plain = await call("/tokenize", {
      content: "Hello world, città <think>",
    });
    // The same form: `{tokens: [ids]}`; the ids are the fake's own.
    const real = captured("tokenize_specials.json") as { tokens: unknown[] };
    assert.deepEqual(Object.keys(plain), Object.keys(real));
    assert.ok(plain.tokens.length > 0);
    assert.ok(
      [...plain.tokens, ...real.tokens].every((id) => Number.isSafeInteger(id)),
    );
    const pieces = await call("/tokenize", {
      content: "Hello world",
      with_pieces: true,
    });
    assert.deepEqual(
      pieces.tokens.map((t: { piece: string }) => t.piece),
      (captured("tokenize_with_pieces.json") as {
        tokens: { piece: string }[];
      }).tokens.map((t) => t.piece),
    );
    const messages = [
      { role: "system", content: "You are helpful." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello!" },
      { role: "user", content: "How are you?" },
    ];
    const template = await call("/apply-template", { messages });
    assert.deepEqual(
      template,
      captured("apply_template.json") as { prompt: string },
    );
    // A chat prompt is the rendered template, counted with its specials.
    await (await post(llm, { messages })).text();
    const counted = await call("/tokenize", { content: template.prompt });
    assert.equal(llm.chats[0]!.promptTokens, counted.tokens.length);
  },
});

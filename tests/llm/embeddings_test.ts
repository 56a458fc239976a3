/** The embeddings endpoint: vectors in order, its context size, and every answer out of shape refused, every wait bounded. */
import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import { Embedder } from "../../src/llm/embeddings.ts";
import { FakeLlm } from "../support/fake_llm.ts";
import { EMBEDDING_SIZE } from "../support/fake_llm_wire.ts";

const signal = new AbortController().signal;

async function embeddingServer() {
  return await FakeLlm.start({
    models: [{ id: "/srv/models/embed.gguf", embeddings: true, nCtx: 512 }],
  });
}

async function failure(promise: Promise<unknown>): Promise<AssistantError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  assert.ok(error instanceof AssistantError, String(error));
  assert.equal(error.code, "embed_failed");
  return error;
}

Deno.test("a batch's vectors come back in order, named by the model that made them", async () => {
  await using llm = await embeddingServer();
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const { model, vectors } = await embedder.embed(
    ["one", "two", "one"],
    signal,
  );
  assert.equal(model, "/srv/models/embed.gguf");
  assert.equal(vectors.length, 3);
  assert.equal(vectors[0]!.length, EMBEDDING_SIZE);
  assert.deepEqual(vectors[0], vectors[2], "the same text, the same vector");
  assert.notDeepEqual(vectors[0], vectors[1]);
  // The configured model is sent, and names the vectors.
  const named = new Embedder({ url: llm.url, model: "e5", stallMs: 5000 });
  assert.equal((await named.embed(["x"], signal)).model, "e5");
  const body = llm.requests.at(-1)!.body as { model?: string };
  assert.equal(body.model, "e5");
  // Inputs are cut to about the model's context: two characters a token.
  assert.equal(await embedder.inputChars(signal), 1024);
});

Deno.test("a server without --embeddings, an error status, garbage and vectors out of shape are refused", async () => {
  await using plain = await FakeLlm.start();
  const without = new Embedder({ url: plain.url, model: "", stallMs: 5000 });
  assert.match(
    (await failure(without.embed(["x"], signal))).message,
    /^embedding server: it answered 501$/,
  );
  await using llm = await embeddingServer();
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const answers: [unknown, RegExp][] = [
    ["not json at all", /its answer is not JSON/],
    [{ data: [] }, /answered 0 vectors for 1 texts/],
    [{ data: [{ embedding: "x" }] }, /not a list of finite numbers/],
    [{ data: [{ embedding: [0.1, null] }] }, /not a list of finite numbers/],
    [{ data: [{ embedding: [] }] }, /not a list of finite numbers/],
  ];
  for (const [answer, message] of answers) {
    llm.override("/v1/embeddings", () =>
      new Response(
        typeof answer === "string" ? answer : JSON.stringify(answer),
      ));
    assert.match(
      (await failure(embedder.embed(["x"], signal))).message,
      message,
    );
  }
  llm.override("/v1/embeddings", () =>
    Response.json({
      data: [{ embedding: [0.1, 0.2] }, { embedding: [0.1, 0.2, 0.3] }],
    }));
  assert.match(
    (await failure(embedder.embed(["a", "b"], signal))).message,
    /differ in dimension/,
  );
});

Deno.test("a server that hangs is given up after stall_timeout; an unreachable one is named", async () => {
  await using llm = await embeddingServer();
  const hung = Promise.withResolvers<void>();
  llm.override("/v1/embeddings", async () => {
    await hung.promise;
    return new Response("{}");
  });
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 200 });
  assert.match(
    (await failure(embedder.embed(["x"], signal))).message,
    /did not answer in time/,
  );
  hung.resolve();
  await llm.stop();
  assert.match(
    (await failure(embedder.embed(["x"], signal))).message,
    new RegExp(`unreachable at ${llm.url}`),
  );
});

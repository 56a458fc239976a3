/**
 * The embeddings endpoint: vectors in order, named by the model's file,
 * inputs kept within what the server takes at once (a refused batch split,
 * a text too long halved), every answer out of shape refused, every wait
 * bounded.
 */
import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import { cutToTokens } from "../../src/llm/embed_inputs.ts";
import { Embedder } from "../../src/llm/embeddings.ts";
import { countTokens, FakeLlm } from "../support/fake_llm.ts";
import { EMBEDDING_SIZE } from "../support/fake_llm_wire.ts";

const signal = new AbortController().signal;

async function embeddingServer(ubatch?: number) {
  return await FakeLlm.start({
    models: [{
      id: "/srv/models/embed.gguf",
      embeddings: true,
      nCtx: 512,
      ...(ubatch === undefined ? {} : { ubatch }),
    }],
  });
}

/** The inputs of each embeddings request the server received. */
function batches(llm: FakeLlm): string[][] {
  return llm.requests.filter((r) => r.path === "/v1/embeddings")
    .map((r) => (r.body as { input: string[] }).input);
}

async function failure(promise: Promise<unknown>): Promise<AssistantError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  assert.ok(error instanceof AssistantError, String(error));
  assert.equal(error.code, "embed_failed");
  return error;
}

Deno.test("a batch's vectors come back in order, named by the model's file and their dimension", async () => {
  await using llm = await embeddingServer();
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const { name, dim, vectors } = await embedder.embed(
    ["one", "two", "one"],
    signal,
  );
  assert.equal(name, "/srv/models/embed.gguf");
  assert.equal(dim, EMBEDDING_SIZE);
  assert.equal(vectors.length, 3);
  assert.equal(vectors[0]!.length, EMBEDDING_SIZE);
  assert.deepEqual(vectors[0], vectors[2], "the same text, the same vector");
  assert.notDeepEqual(vectors[0], vectors[1]);
  // The configured model is sent, and names the vectors.
  const named = new Embedder({ url: llm.url, model: "e5", stallMs: 5000 });
  assert.equal((await named.embed(["x"], signal)).name, "e5");
  const body = llm.requests.at(-1)!.body as { model?: string };
  assert.equal(body.model, "e5");
});

Deno.test("an older server's answer names no model of its own: /props model_path names it, so a new model file is noticed", async () => {
  await using llm = await embeddingServer();
  let path = "/srv/models/first.gguf";
  llm.override("/props", () => Response.json({ model_path: path }));
  llm.override("/v1/embeddings", (_, record) => {
    const { input } = record.body as { input: string[] };
    return Response.json({
      model: "gpt-3.5-turbo",
      data: input.map((_, index) => ({ embedding: [0.5, 0.5], index })),
    });
  });
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  assert.equal((await embedder.embed(["x"], signal)).name, path);
  // The server comes back with another model: asked again after a failure.
  llm.override("/v1/embeddings", () => new Response("down", { status: 503 }));
  await failure(embedder.embed(["x"], signal));
  path = "/srv/models/second.gguf";
  llm.override(
    "/v1/embeddings",
    () =>
      Response.json({ model: "gpt-3.5-turbo", data: [{ embedding: [1, 0] }] }),
  );
  assert.deepEqual(
    await embedder.embed(["x"], signal),
    { name: path, dim: 2, vectors: [Float32Array.of(1, 0)] },
  );
});

Deno.test("a query of 100,000 characters is cut to what the server takes at once, and embedded", async () => {
  await using llm = await embeddingServer();
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  for (const text of ["word ".repeat(20_000), ".".repeat(100_000)]) {
    const { vectors } = await embedder.embed([text], signal);
    assert.equal(vectors[0]?.length, EMBEDDING_SIZE);
    const sent = batches(llm).at(-1)![0]!;
    assert.ok(text.startsWith(sent));
    assert.ok(countTokens(sent) <= 512, `${countTokens(sent)} tokens sent`);
  }
  assert.equal(batches(llm).length, 2, "one request each");
  // The estimate errs long: a letter and the space before it are a token
  // at most, any other character as many as its UTF-8 bytes.
  assert.equal(cutToTokens("ab cd", 2), "ab c");
  assert.equal(cutToTokens("日本語", 6), "日本");
  assert.equal(cutToTokens("😀😀", 4), "😀");
  assert.equal(cutToTokens("short", 100), "short");
});

Deno.test("a server of a smaller batch refuses a text: the batch is split and cut to the batch size it names, kept for later", async () => {
  await using llm = await embeddingServer(100);
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const long = ".".repeat(100_000);
  const { vectors } = await embedder.embed(["one", long, "three"], signal);
  assert.ok(vectors.every((vector) => vector?.length === EMBEDDING_SIZE));
  const sent = batches(llm);
  assert.equal(sent[0]!.length, 3, "the whole batch first");
  assert.ok(sent.length > 2, "then split");
  assert.ok(
    sent.slice(1).flat().every((input) => countTokens(input) <= 100),
  );
  // What it named is kept: the next long text goes at once.
  const before = sent.length;
  await embedder.embed([long], signal);
  assert.equal(batches(llm).length, before + 1);
  assert.ok(countTokens(batches(llm).at(-1)![0]!) <= 100);
});

Deno.test("a text still too long for a server that names no batch size is halved until it goes", async () => {
  await using llm = await embeddingServer();
  llm.override("/v1/embeddings", (_, record) => {
    const { input } = record.body as { input: string[] };
    if (input.some((text) => text.length > 100)) {
      return Response.json({
        error: { code: 500, message: "input is too large to process" },
      }, { status: 500 });
    }
    return Response.json({
      data: input.map((_, index) => ({ embedding: [1, index], index })),
    });
  });
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const { vectors } = await embedder.embed(["x".repeat(1000)], signal);
  assert.deepEqual(vectors, [Float32Array.of(1, 0)]);
  assert.deepEqual(batches(llm).map(([text]) => text!.length), [
    1000,
    500,
    250,
    125,
    62,
  ]);
});

Deno.test("a server that says its batch in /props is kept to it", async () => {
  await using llm = await embeddingServer(64);
  llm.override("/props", () =>
    Response.json({
      default_generation_settings: { n_ctx: 4096, n_ubatch: 64 },
      model_path: "/srv/models/embed.gguf",
    }));
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const { vectors } = await embedder.embed(["word ".repeat(1000)], signal);
  assert.equal(vectors[0]?.length, EMBEDDING_SIZE);
  assert.equal(batches(llm).length, 1, "never refused");
});

Deno.test("a text the server refuses outright is left without a vector; a blank one is never sent", async () => {
  await using llm = await embeddingServer();
  llm.override("/v1/embeddings", (_, record) => {
    const { input } = record.body as { input: string[] };
    if (input.includes("∅")) {
      return Response.json({
        error: {
          code: 400,
          message: "Input content cannot be empty",
          type: "invalid_request_error",
        },
      }, { status: 400 });
    }
    return Response.json({
      data: input.map((_, index) => ({ embedding: [index, 1], index })),
    });
  });
  const embedder = new Embedder({ url: llm.url, model: "", stallMs: 5000 });
  const { dim, vectors } = await embedder.embed(
    ["a", "∅", " \n ", "b"],
    signal,
  );
  assert.equal(dim, 2);
  assert.deepEqual(vectors.map((vector) => vector !== null), [
    true,
    false,
    false,
    true,
  ]);
  assert.deepEqual(batches(llm), [["a", "∅", "b"], ["a"], ["∅", "b"], ["∅"], [
    "b",
  ]]);
  // Every text refused: no vector, no dimension, and no error.
  assert.deepEqual(await embedder.embed(["∅"], signal), {
    name: "/srv/models/embed.gguf",
    dim: null,
    vectors: [null],
  });
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

Deno.test("a server that hangs is given up after stall_timeout, or a query's own bound; an unreachable one is named", async () => {
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
  // A query's bound of its own, however long stall_timeout is.
  const patient = new Embedder({ url: llm.url, model: "", stallMs: 600_000 });
  assert.match(
    (await failure(patient.embed(["x"], signal, { withinMs: 200 }))).message,
    /did not answer in time/,
  );
  hung.resolve();
  await llm.stop();
  assert.match(
    (await failure(embedder.embed(["x"], signal))).message,
    new RegExp(`unreachable at ${llm.url}`),
  );
});

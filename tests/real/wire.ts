/**
 * The tier's scenarios at the wire, for what the daemon does not use yet
 * (13.2's pictures, 13.4's embeddings): the same request to the real
 * server and to the fake, and what came back compared. Embeddings from a
 * server started with `--embeddings --pooling mean` and from one without;
 * a picture refused by a model served without `--mmproj`, and `/props`
 * saying so.
 */
import assert from "node:assert/strict";
import { shape } from "../support/fake_llm_sse.ts";
import { observe, type Scenario } from "./scenario.ts";

/** A 1×1 PNG, as a data URL. */
const PIXEL = "data:image/png;base64," +
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

type Embeddings = {
  model: string;
  data: { embedding: number[]; index: number }[];
  usage: { prompt_tokens: number; total_tokens: number };
};

const embeddings: Scenario = {
  name: "embeddings from a server started with --embeddings --pooling mean",
  real: { role: "embed", args: ["--embeddings", "--pooling", "mean"] },
  fake: {
    options: {
      models: [{ id: "/srv/models/tiny-embed.gguf", embeddings: true }],
    },
  },
  async run({ backend }) {
    const many = await backend.json("/v1/embeddings", {
      input: ["The weather in Paris", "a second text"],
    });
    const named = await backend.json("/v1/embeddings", {
      input: "one text",
      model: "embedder",
    });
    const body = many.body as Embeddings;
    return observe([], {
      status: [many.status, named.status],
      shape: shape(body),
      order: body.data.map((item) => item.index),
      width: body.data.map((item) => item.embedding.length),
      // The default normalisation: unit vectors.
      norms: body.data.map((item) =>
        Math.round(Math.hypot(...item.embedding) * 1000) / 1000
      ),
      counted: body.usage.prompt_tokens > 0 &&
        body.usage.total_tokens === body.usage.prompt_tokens,
      model: (named.body as Embeddings).model,
    });
  },
  check(seen) {
    assert.deepEqual(seen.extra.status, [200, 200]);
    assert.deepEqual(seen.extra.order, [0, 1]);
    assert.deepEqual(seen.extra.width, [64, 64]);
    assert.deepEqual(seen.extra.norms, [1, 1]);
    assert.equal(seen.extra.counted, true);
    assert.equal(seen.extra.model, "embedder", "the model named is echoed");
  },
};

const noEmbeddings: Scenario = {
  name: "embeddings from a server started without --embeddings: 501",
  real: { role: "shift" },
  fake: {},
  async run({ backend }) {
    const answer = await backend.json("/v1/embeddings", { input: "hello" });
    return observe([], { status: answer.status, body: answer.body });
  },
  check(seen) {
    assert.equal(seen.extra.status, 501);
    const error = (seen.extra.body as { error: { type: string } }).error;
    assert.equal(error.type, "not_supported_error");
  },
};

const picture: Scenario = {
  name:
    "a picture for a model served without --mmproj: refused, and /props says it reads no pictures",
  real: { role: "shift" },
  fake: {},
  async run({ backend }) {
    const props = await backend.json("/props");
    const answers = [];
    for (const stream of [true, false]) {
      const answer = await backend.json("/v1/chat/completions", {
        stream,
        messages: [{
          role: "user",
          content: [
            { type: "text", text: "What is in this picture?" },
            { type: "image_url", image_url: { url: PIXEL } },
          ],
        }],
      });
      answers.push({ status: answer.status, body: answer.body });
    }
    return observe([], {
      modalities: (props.body as { modalities?: unknown }).modalities,
      answers,
    });
  },
  check(seen) {
    assert.deepEqual(seen.extra.modalities, {
      vision: false,
      video: false,
      audio: false,
    });
    const answers = seen.extra.answers as {
      status: number;
      body: { error: { message: string } };
    }[];
    for (const answer of answers) {
      assert.equal(answer.status, 500);
      assert.match(answer.body.error.message, /^image input is not supported/);
    }
  },
};

/** The scenarios at the wire. */
export const WIRE_SCENARIOS: Scenario[] = [embeddings, noEmbeddings, picture];

import assert from "node:assert/strict";
import { AssistantError } from "../../src/base/errors.ts";
import {
  type Delta,
  deltaStream,
  MAX_PENDING_CHARS,
} from "../../src/llm/sse_stream.ts";
import { log } from "../../src/base/log.ts";
import { fixturesDir } from "../support/fake_llm.ts";

const FIXTURES = fixturesDir();
const noFixtures = FIXTURES === null;
if (noFixtures) {
  log.warn("llama-server captures not found: fixture tests are skipped");
}

function content(text: string): Delta {
  return { kind: "content", text };
}

/** Adjacent deltas of the same text kind joined, so splits do not matter. */
function merged(deltas: Delta[]): Delta[] {
  const out: Delta[] = [];
  for (const delta of deltas) {
    const last = out.at(-1);
    if (
      last && (delta.kind === "think" || delta.kind === "content") &&
      last.kind === delta.kind
    ) {
      last.text += delta.text;
    } else {
      out.push({ ...delta });
    }
  }
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("Expected a rejection");
}

Deno.test("an endless line without a break is a malformed stream, not unbounded memory", async () => {
  const piece = new TextEncoder().encode("a".repeat(1024 * 1024));
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode("data: "));
    },
    pull(controller) {
      // Bounded: past the limit the parser must have failed already.
      if (sent * piece.length > 2 * MAX_PENDING_CHARS) controller.close();
      else controller.enqueue(piece);
      sent++;
    },
  });
  const error = await rejection(Array.fromAsync(deltaStream(body)));
  assert.ok(error instanceof AssistantError, String(error));
  assert.equal(error.message, "malformed stream");
  assert.ok(sent * piece.length <= MAX_PENDING_CHARS + 4 * piece.length);
});

Deno.test({
  name: "delta stream reads a capture the same however its bytes are split",
  ignore: noFixtures,
  async fn() {
    const bytes = await Deno.readFile(
      `${FIXTURES}/single/stream_reasoning_enable_thinking_budget4.sse`,
    );
    const whole = await Array.fromAsync(
      deltaStream(ReadableStream.from([bytes])),
    );
    for (const size of [1, 2, 3, 7, 64]) {
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += size) {
        pieces.push(bytes.slice(at, at + size));
      }
      const split = await Array.fromAsync(
        deltaStream(ReadableStream.from(pieces), { stallMs: 60_000 }),
      );
      assert.deepEqual(split, whole, `pieces of ${size} bytes`);
    }
    assert.deepEqual(merged(whole), [
      { kind: "think", text: "Olympics Pearl660" },
      content(
        "Brigham app Cursedicator ethicIll horrible devised discreetmess",
      ),
      { kind: "finish", reason: "length" },
      { kind: "usage", used: 27, prompt: 13 },
      {
        kind: "timings",
        prompt_n: 1,
        cache_n: 12,
        predicted_n: 14,
        prompt_ms: 1.408,
        predicted_ms: 13.037,
      },
    ]);
  },
});

Deno.test({
  name: "delta stream keeps multi-byte characters split across reads",
  ignore: noFixtures,
  async fn() {
    const bytes = await Deno.readFile(
      `${FIXTURES}/single/stream_error_midstream_context_exceeded_concurrent_A.sse`,
    );
    // Small pieces over the head (where the multi-byte tokens are), then the rest.
    const head = 16_384;
    const read = async (size: number) => {
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < head; at += size) {
        pieces.push(bytes.slice(at, Math.min(at + size, head)));
      }
      pieces.push(bytes.slice(head));
      const seen: Delta[] = [];
      const error = await rejection((async () => {
        for await (const delta of deltaStream(ReadableStream.from(pieces))) {
          seen.push(delta);
        }
      })());
      assert.ok(error instanceof AssistantError);
      assert.equal(
        error.message,
        "llama-server error: Context size has been exceeded.",
      );
      return merged(seen);
    };
    const whole = await read(bytes.length);
    assert.equal(whole.length, 1);
    assert.ok(whole[0]?.kind === "content");
    assert.ok(whole[0].text.includes("018ル wins"));
    assert.deepEqual(await read(5), whole);
  },
});

/** The cost a captured stream reports, as the reply loop receives it. */
async function capturedCost(name: string): Promise<Delta[]> {
  const bytes = await Deno.readFile(`${FIXTURES}/${name}`);
  const deltas = await Array.fromAsync(
    deltaStream(ReadableStream.from([bytes])),
  );
  assert.equal(deltas.at(-1)?.kind, "timings", name);
  return deltas.filter((d) => d.kind === "timings" || d.kind === "usage");
}

Deno.test({
  name:
    "captured timings reach the reply loop, from the usage chunk or from the finish chunk",
  ignore: noFixtures,
  async fn() {
    // include_usage: the `choices: []` chunk carries usage and timings.
    assert.deepEqual(
      await capturedCost("prompt_cache/turn5_window_slid_n_cache_reuse_64.sse"),
      [{ kind: "usage", used: 461, prompt: 437 }, {
        kind: "timings",
        prompt_n: 53,
        cache_n: 384,
        predicted_n: 24,
        prompt_ms: 5.086,
        predicted_ms: 17.14,
      }],
    );
    // No include_usage: the finish chunk carries the timings.
    assert.deepEqual(
      await capturedCost("single/stream_content_no_include_usage.sse"),
      [{ kind: "usage", used: 19, prompt: 15 }, {
        kind: "timings",
        prompt_n: 1,
        cache_n: 14,
        predicted_n: 4,
        prompt_ms: 14.711,
        predicted_ms: 3.461,
      }],
    );
    // Timings on every chunk: the final ones only, once.
    assert.deepEqual(
      await capturedCost("single/stream_content_timings_per_token.sse"),
      [{ kind: "usage", used: 18, prompt: 15 }, {
        kind: "timings",
        prompt_n: 1,
        cache_n: 14,
        predicted_n: 3,
        prompt_ms: 1.574,
        predicted_ms: 2.587,
      }],
    );
  },
});

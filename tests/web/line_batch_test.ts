import assert from "node:assert/strict";
import { LineBatchStream } from "../../src/web/line_batch.ts";

async function run(chunks: (string | Uint8Array)[], maxLineBytes = 1024) {
  const encoder = new TextEncoder();
  const source = ReadableStream.from(
    chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c),
  );
  const out: string[] = [];
  for await (
    const group of source.pipeThrough(new LineBatchStream({ maxLineBytes }))
  ) {
    out.push(group);
  }
  return out;
}

Deno.test("the lines one read brought go out as one group; a part line waits for its end", async () => {
  assert.deepEqual(await run(['{"a":1}\n{"b":2}\n{"c"', ":3}\n"]), [
    '{"a":1}\n{"b":2}',
    '{"c":3}',
  ]);
  assert.deepEqual(await run(["{", '"x"', ":1", "}\n"]), ['{"x":1}']);
  // A line never goes out before its newline, even at the end.
  assert.deepEqual(await run(['{"a":1}\n{"unfinished']), ['{"a":1}']);
});

Deno.test("a character cut between two reads comes out whole", async () => {
  const bytes = new TextEncoder().encode('{"t":"città ✓"}\n');
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(
      await run([bytes.slice(0, cut), bytes.slice(cut)]),
      ['{"t":"città ✓"}'],
      `cut at ${cut}`,
    );
  }
});

Deno.test("a line longer than the bound errors the stream, held or whole", async () => {
  await assert.rejects(run(["x".repeat(20)], 10), RangeError);
  await assert.rejects(run(["ok\n" + "x".repeat(11) + "\n"], 10), RangeError);
  await assert.rejects(
    run(["x".repeat(6), "x".repeat(6) + "\n"], 10),
    RangeError,
  );
  assert.deepEqual(await run(["x".repeat(10) + "\n"], 10), ["x".repeat(10)]);
});

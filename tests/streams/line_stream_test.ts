import assert from "node:assert/strict";
import { type LineChunk, LineStream } from "../../src/streams/line_stream.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Runs chunks through a LineStream; lines come back as text, reports as `{tooLong}`. */
async function split(
  chunks: (string | Uint8Array)[],
  maxBytes = 16,
): Promise<(string | { tooLong: number })[]> {
  const input = ReadableStream.from(
    chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c),
  );
  const out = await Array.fromAsync(
    input.pipeThrough(new LineStream({ maxBytes })),
  );
  return out.map((chunk: LineChunk) =>
    "line" in chunk ? decoder.decode(chunk.line) : chunk
  );
}

Deno.test("lines split across chunks and several lines in one chunk", async () => {
  assert.deepEqual(await split(["ab", "c\nde", "f\ng\nh\n"]), [
    "abc",
    "def",
    "g",
    "h",
  ]);
});

Deno.test("one byte at a time", async () => {
  const text = '{"type":"ping"}\n{"a":1}\n';
  assert.deepEqual(await split([...text], 64), ['{"type":"ping"}', '{"a":1}']);
});

Deno.test("CRLF ends drop the \\r; a \\r inside a line stays", async () => {
  assert.deepEqual(await split(["a\r\nb\rc\r\n", "d\r", "\n"]), [
    "a",
    "b\rc",
    "d",
  ]);
});

Deno.test("empty lines are passed on, empty", async () => {
  assert.deepEqual(await split(["\n\na\n\r\n"]), ["", "", "a", ""]);
});

Deno.test("an unterminated last line is emitted at the end", async () => {
  assert.deepEqual(await split(["a\nlast"]), ["a", "last"]);
  assert.deepEqual(await split(["a\n"]), ["a"]);
});

Deno.test("a line of exactly maxBytes is accepted, with LF or CRLF", async () => {
  const max = "x".repeat(16);
  assert.deepEqual(await split([max + "\n", max + "\r\n", max]), [
    max,
    max,
    max,
  ]);
  // The \r and \n arriving in later chunks must not tip it over the limit.
  assert.deepEqual(await split([max, "\r", "\n", "ok\n"]), [max, "ok"]);
});

Deno.test("a line of maxBytes + 1 is reported once and skipped to the next newline", async () => {
  const over = "x".repeat(17);
  assert.deepEqual(await split([over + "\nnext\n"]), [
    { tooLong: 17 },
    "next",
  ]);
  assert.deepEqual(await split([over + "\r\nnext\n"]), [
    { tooLong: 18 },
    "next",
  ]);
  // A \r that is not followed by \n is content.
  assert.deepEqual(await split(["x".repeat(16) + "\rz\nnext\n"]), [
    { tooLong: 18 },
    "next",
  ]);
});

Deno.test("a long line is reported as soon as it passes the limit, before its newline", async () => {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const reader = readable.pipeThrough(new LineStream({ maxBytes: 16 }))
    .getReader();
  const writer = writable.getWriter();
  const writes = [writer.write(encoder.encode("y".repeat(40)))];
  const first = await reader.read();
  assert.deepEqual(first.value, { tooLong: 40 });
  // The rest of the line, in pieces, is swallowed; the next line comes through.
  writes.push(writer.write(encoder.encode("y".repeat(100))));
  writes.push(writer.write(encoder.encode("yy\nafter\n")));
  writes.push(writer.close());
  const second = await reader.read();
  assert.ok(second.value && "line" in second.value);
  assert.equal(decoder.decode(second.value.line), "after");
  assert.equal((await reader.read()).done, true);
  await Promise.all(writes);
});

Deno.test("a line growing in one-byte chunks is reported once", async () => {
  const chunks = [..."z".repeat(50)];
  assert.deepEqual(await split([...chunks, "\n", "ok\n"]), [
    { tooLong: 17 },
    "ok",
  ]);
});

Deno.test("an over-long line cut off by the end of input is reported once", async () => {
  assert.deepEqual(await split(["a\n", "b".repeat(30)]), [
    "a",
    { tooLong: 30 },
  ]);
});

Deno.test("bytes pass through untouched, invalid UTF-8 included", async () => {
  const out = await Array.fromAsync(
    ReadableStream.from([new Uint8Array([0xff, 0xfe, 0x0a, 0xc3, 0xa9, 0x0a])])
      .pipeThrough(new LineStream({ maxBytes: 8 })),
  );
  assert.deepEqual(out, [
    { line: new Uint8Array([0xff, 0xfe]) },
    { line: new Uint8Array([0xc3, 0xa9]) },
  ]);
});

Deno.test("a multi-megabyte input of short lines is split in linear time", async () => {
  const line = '{"type":"token","delta":"word"}\n';
  const big = encoder.encode(line.repeat(100_000));
  const chunks: Uint8Array[] = [];
  // Odd chunk size so lines straddle chunk boundaries.
  for (let i = 0; i < big.length; i += 65_537) {
    chunks.push(big.subarray(i, i + 65_537));
  }
  const out = await split(chunks, 1024);
  assert.equal(out.length, 100_000);
  assert.ok(out.every((l) => l === line.slice(0, -1)));
});

Deno.test("maxBytes must be a positive integer", () => {
  assert.throws(() => new LineStream({ maxBytes: 0 }), RangeError);
  assert.throws(() => new LineStream({ maxBytes: 1.5 }), RangeError);
});

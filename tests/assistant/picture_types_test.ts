/**
 * WebP and GIF pictures (13.2): like PNG and JPEG (attachments_test.ts),
 * a picture is a picture only when its bytes start as its type does; bytes
 * of another kind are `bad_file`, naming the file and the type it claims.
 */
import assert from "node:assert/strict";
import { readFiles, type Reading } from "../../src/assistant/attachments.ts";
import { AssistantError } from "../../src/base/errors.ts";
import type { Attachment } from "../../src/protocol/protocol.ts";

/** A 1×1 lossless WebP: `RIFF`, its size, `WEBP`, then a `VP8L` chunk. */
const WEBP = await Deno.readFile(
  new URL("../fixtures/files/dot.webp", import.meta.url),
);
/** A 1×1 GIF89a. */
const GIF = await Deno.readFile(
  new URL("../fixtures/files/dot.gif", import.meta.url),
);
const PNG = await Deno.readFile(
  new URL("../fixtures/files/red.png", import.meta.url),
);
const text = (s: string) => new TextEncoder().encode(s);
/** No converter for any type. */
const NO_CONVERTER: Reading = {
  converts: () => false,
  convert: () => Promise.reject(new Error("no converter")),
};
const NEVER = new AbortController().signal;

async function refusal(file: Attachment): Promise<AssistantError> {
  const error = await readFiles([file], NO_CONVERTER, NEVER).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof AssistantError, `${file.name} refused`);
  return error;
}

Deno.test("a WebP or a GIF whose bytes start as its type does is a picture, its bytes kept as sent", async () => {
  const gif87 = GIF.slice();
  gif87.set(text("GIF87a"));
  const read = await readFiles(
    [
      { name: "dot.webp", mime: "image/webp", data: WEBP },
      { name: "dot.gif", mime: "image/gif", data: GIF },
      { name: "old.gif", mime: "image/gif", data: gif87 },
    ],
    NO_CONVERTER,
    NEVER,
  );
  assert.deepEqual(read.map((f) => [f.name, f.kind, f.bytes]), [
    ["dot.webp", "image", WEBP.length],
    ["dot.gif", "image", GIF.length],
    ["old.gif", "image", gif87.length],
  ]);
  assert.equal(read[0]!.data, WEBP);
  assert.equal(read[1]!.data, GIF);
});

Deno.test("a WebP or a GIF whose bytes are something else is bad_file, naming the file and its type, even when they are text", async () => {
  // A RIFF file that is no WebP: a WAV's header.
  const wav = WEBP.slice();
  wav.set(text("WAVE"), 8);
  // A GIF signature of a version that does not exist.
  const gif88 = GIF.slice();
  gif88.set(text("GIF88a"));
  const cases: [Attachment, string][] = [
    [{ name: "a.webp", mime: "image/webp", data: PNG }, "image/webp"],
    [{ name: "b.webp", mime: "image/webp", data: wav }, "image/webp"],
    [{ name: "c.webp", mime: "image/webp", data: GIF }, "image/webp"],
    [{ name: "d.webp", mime: "image/webp", data: text("RIFF") }, "image/webp"],
    [{ name: "e.gif", mime: "image/gif", data: WEBP }, "image/gif"],
    [{ name: "f.gif", mime: "image/gif", data: gif88 }, "image/gif"],
    [
      { name: "g.gif", mime: "image/gif", data: text("a GIF, honest") },
      "image/gif",
    ],
    [{ name: "h.gif", mime: "image/gif", data: PNG }, "image/gif"],
  ];
  for (const [file, mime] of cases) {
    const error = await refusal(file);
    assert.equal(error.code, "bad_file", file.name);
    assert.equal(
      error.message,
      `${file.name}: its bytes are not a picture of type ${mime}`,
    );
  }
});

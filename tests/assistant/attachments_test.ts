/** What a file sent with a question becomes, in the order 13.2 gives, and how it rides in the question. */
import assert from "node:assert/strict";
import {
  fenceFor,
  questionContent,
  readFiles,
  type Reading,
  withPictures,
} from "../../src/assistant/attachments.ts";
import { AssistantError } from "../../src/base/errors.ts";

const PNG = await Deno.readFile(
  new URL("../fixtures/files/red.png", import.meta.url),
);
const text = (s: string) => new TextEncoder().encode(s);
/** A signal never aborted: nothing here is stopped. */
const NEVER = new AbortController().signal;

/** A reading whose converter serves `types` and records what it converted. */
function converting(types: string[]): Reading & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    converts: (mime) => types.includes(mime),
    convert: (mime, name) => {
      seen.push(`${name} ${mime}`);
      return Promise.resolve(`converted ${name}`);
    },
  };
}

async function refused(
  files: Parameters<typeof readFiles>[0],
  reading: Reading = converting([]),
): Promise<AssistantError> {
  const error = await readFiles(files, reading, NEVER).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof AssistantError, String(error));
  return error;
}

Deno.test("text is any type whose bytes are UTF-8 without NUL; a picture must be the picture it claims", async () => {
  const read = await readFiles(
    [
      { name: "a.json", mime: "application/json", data: text('{"a":1}') },
      { name: "b.ts", mime: "application/octet-stream", data: text("let b;") },
      { name: "red.png", mime: "image/png", data: PNG },
    ],
    converting([]),
    NEVER,
  );
  assert.deepEqual(read.map((f) => [f.name, f.kind, f.text, f.bytes]), [
    ["a.json", "text", '{"a":1}', 7],
    ["b.ts", "text", "let b;", 6],
    ["red.png", "image", null, PNG.length],
  ]);
  assert.equal(read[2]!.data, PNG);
  assert.equal(read[0]!.data, null, "a text keeps no bytes besides its text");
});

Deno.test("a type with a converter is converted even when its bytes are text", async () => {
  const reading = converting(["application/pdf", "text/csv"]);
  const read = await readFiles(
    [
      { name: "r.pdf", mime: "application/pdf", data: text("%PDF-1.4") },
      { name: "t.csv", mime: "text/csv", data: text("a,b\n1,2") },
    ],
    reading,
    NEVER,
  );
  assert.deepEqual(read.map((f) => [f.kind, f.text]), [
    ["converted", "converted r.pdf"],
    ["converted", "converted t.csv"],
  ]);
  assert.deepEqual(reading.seen, ["r.pdf application/pdf", "t.csv text/csv"]);
});

Deno.test("each conversion is handed the signal that ends it", async () => {
  const stop = new AbortController();
  const given: AbortSignal[] = [];
  await readFiles(
    [{ name: "r.pdf", mime: "application/pdf", data: text("%PDF-1.4") }],
    {
      converts: () => true,
      convert: (_mime, _name, _bytes, signal) => {
        given.push(signal);
        return Promise.resolve("text");
      },
    },
    stop.signal,
  );
  assert.deepEqual(given, [stop.signal]);
});

Deno.test("bytes that are not the picture their type names are refused, even when they are text", async () => {
  const error = await refused([
    { name: "fake.png", mime: "image/png", data: text("just text") },
  ]);
  assert.equal(error.code, "bad_file");
  assert.equal(
    error.message,
    "fake.png: its bytes are not a picture of type image/png",
  );
  // A JPEG is not a PNG either.
  const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]);
  assert.equal(
    (await refused([{ name: "x.png", mime: "image/png", data: jpeg }])).code,
    "bad_file",
  );
  const [read] = await readFiles(
    [{ name: "x.jpg", mime: "image/jpeg", data: jpeg }],
    converting([]),
    NEVER,
  );
  assert.equal(read?.kind, "image");
});

Deno.test("an unknown binary type without a converter is refused with the file and its type named", async () => {
  const error = await refused([
    { name: "a.txt", mime: "text/plain", data: text("fine") },
    {
      name: "blob.bin",
      mime: "application/octet-stream",
      data: new Uint8Array([0xff, 0xfe, 0x00, 0x81]),
    },
  ]);
  assert.equal(
    error.message,
    "blob.bin: application/octet-stream is neither text nor a picture, and no converter is configured for it",
  );
  // NUL makes bytes that decode as UTF-8 no text.
  assert.equal(
    (await refused([{ name: "n", mime: "text/plain", data: text("a\0b") }]))
      .code,
    "bad_file",
  );
});

Deno.test("a file's text rides after the typed text in a fence longer than any backtick run inside it", () => {
  assert.equal(fenceFor("no ticks"), "```");
  assert.equal(fenceFor("a ```` b ` c"), "`````");
  const content = questionContent("[stamp] Look", [
    {
      name: "x.md",
      mime: "text/markdown",
      bytes: 3,
      kind: "text",
      text: "```js\nlet a;\n```",
      data: null,
    },
  ]);
  assert.equal(
    content,
    "[stamp] Look\n\nFile x.md:\n````\n```js\nlet a;\n```\n````",
  );
});

Deno.test("a picture is kept as a reference to its bytes and sent as a data URL", () => {
  const picture = {
    name: "red.png",
    mime: "image/png",
    bytes: PNG.length,
    kind: "image" as const,
    text: null,
    data: PNG,
  };
  const kept = questionContent("[stamp] What colour?", [picture]);
  assert.deepEqual(kept, [
    { type: "text", text: "[stamp] What colour?" },
    { type: "image_url", image_url: { url: "attachment:0" } },
  ]);
  const [sent] = withPictures(
    [{ role: "user", content: kept }],
    () => `data:image/png;base64,${PNG.toBase64()}`,
  );
  assert.deepEqual(sent, {
    role: "user",
    content: [
      { type: "text", text: "[stamp] What colour?" },
      {
        type: "image_url",
        image_url: { url: `data:image/png;base64,${PNG.toBase64()}` },
      },
    ],
  });
});

/** What the model reads of a `tools/call` result: text cut to the limit, everything else by type and size. */
import assert from "node:assert/strict";
import { base64Bytes, resultText } from "../../src/tools/mcp_result.ts";

Deno.test("text items are joined by newlines; other content is described by type and size", async () => {
  const audio = btoa("x".repeat(1000));
  const result = await resultText({
    content: [
      { type: "text", text: "first" },
      { type: "image", data: btoa("PNG!"), mimeType: "image/png" },
      { type: "audio", data: audio, mimeType: "audio/wav" },
      {
        type: "resource",
        resource: {
          uri: "file:///notes.md",
          mimeType: "text/markdown",
          text: "héllo",
        },
      },
      {
        type: "resource",
        resource: { uri: "file:///a.bin", blob: btoa("ab") },
      },
      { type: "resource_link", uri: "file:///b.txt", name: "b" },
      { type: "hologram" },
      { type: "text", text: "last" },
    ],
  }, 16384);
  assert.equal(
    result.content,
    [
      "first",
      "[image: image/png, 4 bytes, not shown]",
      "[audio: audio/wav, 1000 bytes, not shown]",
      "[resource file:///notes.md: text/markdown, 6 bytes, not shown]",
      "[resource file:///a.bin: 2 bytes, not shown]",
      "[resource link: file:///b.txt (b)]",
      "[hologram content, not shown]",
      "last",
    ].join("\n"),
  );
  assert.equal(result.lines, 8);
  assert.equal(result.bytes, new TextEncoder().encode(result.content).length);
});

Deno.test("text past the limit is cut on a character boundary with the runner's note; the measurements are of the whole", async () => {
  const text = "é".repeat(200);
  const result = await resultText({ content: [{ type: "text", text }] }, 255);
  assert.equal(
    result.content,
    `${"é".repeat(127)}\n[output cut: 400 bytes, first 254 shown]`,
  );
  assert.equal(result.bytes, 400);
  assert.equal(result.lines, 1);
});

Deno.test("structured content alone is given as JSON; no content at all says so", async () => {
  assert.equal(
    (await resultText({ content: [], structuredContent: { temp: 21 } }, 1000))
      .content,
    '{"temp":21}',
  );
  assert.deepEqual(await resultText({}, 1000), {
    content: "[no output]",
    bytes: 0,
    lines: 0,
  });
});

Deno.test("base64Bytes counts decoded bytes, padding and line breaks aside", () => {
  for (const raw of ["", "a", "ab", "abc", "abcd", "x".repeat(77)]) {
    assert.equal(base64Bytes(btoa(raw)), raw.length);
  }
  assert.equal(
    base64Bytes(`${btoa("abcdef")}\n${btoa("gh")}`.replace(/=/g, "")),
    8,
  );
});

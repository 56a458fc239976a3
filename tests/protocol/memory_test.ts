/** The memory commands, checked: text of 1 to 500 characters once trimmed, integer ids, string proposals, export formats. */
import assert from "node:assert/strict";
import { parseCommand } from "../../src/protocol/commands.ts";

function code(value: unknown): string {
  const parsed = parseCommand(value);
  return parsed.ok ? "ok" : parsed.code;
}

Deno.test("remember takes text of 1 to 500 characters once trimmed, and an optional integer id", () => {
  assert.deepEqual(parseCommand({ type: "remember", text: "  Likes tea \n" }), {
    ok: true,
    command: { type: "remember", text: "Likes tea" },
  });
  assert.deepEqual(
    parseCommand({ type: "remember", id: 4, text: "Likes coffee" }),
    { ok: true, command: { type: "remember", id: 4, text: "Likes coffee" } },
  );
  // 500 characters as a person counts them: an emoji is one.
  assert.equal(code({ type: "remember", text: "😀".repeat(500) }), "ok");
  for (const text of [undefined, 3, null, "", "   \n\t", "x".repeat(501)]) {
    assert.equal(code({ type: "remember", text }), "bad_memory", `${text}`);
  }
  assert.equal(code({ type: "remember", id: "4", text: "x" }), "bad_id");
  assert.equal(code({ type: "remember", id: 1.5, text: "x" }), "bad_id");
  assert.equal(code({ type: "forget", id: "x" }), "bad_id");
  assert.deepEqual(parseCommand({ type: "forget", id: 2 }), {
    ok: true,
    command: { type: "forget", id: 2 },
  });
  assert.deepEqual(parseCommand({ type: "memories" }), {
    ok: true,
    command: { type: "memories" },
  });
});

Deno.test("accept and refuse name a proposal; accept's own wording is a memory's text", () => {
  assert.deepEqual(
    parseCommand({ type: "accept", proposal: "p1", text: " Short " }),
    { ok: true, command: { type: "accept", proposal: "p1", text: "Short" } },
  );
  assert.equal(code({ type: "accept", proposal: "p1" }), "ok");
  assert.equal(
    code({ type: "accept", proposal: "p1", text: "" }),
    "bad_memory",
  );
  for (const proposal of [undefined, "", 3]) {
    assert.equal(code({ type: "accept", proposal }), "bad_proposal");
    assert.equal(code({ type: "refuse", proposal }), "bad_proposal");
  }
  assert.equal(code({ type: "refuse", proposal: "p9" }), "ok");
});

Deno.test("export_memories is Markdown when the format is absent, JSON when asked, and bad_format otherwise", () => {
  assert.deepEqual(parseCommand({ type: "export_memories" }), {
    ok: true,
    command: { type: "export_memories", format: "markdown" },
  });
  assert.equal(code({ type: "export_memories", format: "json" }), "ok");
  for (const format of [null, "csv", 1]) {
    assert.equal(code({ type: "export_memories", format }), "bad_format");
  }
});

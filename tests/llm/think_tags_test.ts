import assert from "node:assert/strict";
import type { Delta } from "../../src/llm/chat_deltas.ts";
import { ThinkTagStream } from "../../src/llm/think_tags.ts";

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

function throughThink(pieces: Delta[]): Promise<Delta[]> {
  return Array.fromAsync(
    ReadableStream.from(pieces).pipeThrough(new ThinkTagStream()),
  );
}

Deno.test("a leading think block split at every position routes to think deltas", async () => {
  const text = "<think>\nweighing é options</think>\n\nThe answer.";
  const expected = [
    { kind: "think", text: "weighing é options" },
    content("The answer."),
  ];
  for (let i = 0; i <= text.length; i++) {
    for (let j = i; j <= text.length; j++) {
      const pieces = [text.slice(0, i), text.slice(i, j), text.slice(j)]
        .map(content);
      const out = await throughThink(pieces);
      assert.ok(out.every((d) => d.kind !== "content" || d.text !== ""));
      assert.deepEqual(merged(out), expected, `split at ${i},${j}`);
    }
  }
});

Deno.test("think tags: a literal tag inside an answer is the answer's text", async () => {
  // Asked about think tags, a model writes them; only a reply that opens
  // with the tag is reasoning.
  const text = "The <think> tag marks reasoning; </think> closes it.";
  for (let i = 0; i <= text.length; i++) {
    const out = await throughThink(
      [text.slice(0, i), text.slice(i)].map(content),
    );
    assert.deepEqual(merged(out), [content(text)], `split at ${i}`);
  }
  // After the leading block, a second one is text too.
  assert.deepEqual(
    merged(
      await throughThink([content("<think>hm</think>Use <think>x</think>.")]),
    ),
    [{ kind: "think", text: "hm" }, content("Use <think>x</think>.")],
  );
});

Deno.test("think tags: a server that splits reasoning never has its content routed", async () => {
  const out = await throughThink([
    { kind: "think", text: "hm" },
    content("<think>also"),
    content("</think>done"),
  ]);
  assert.deepEqual(merged(out), [
    { kind: "think", text: "hm" },
    content("<think>also</think>done"),
  ]);
});

Deno.test("think tags: a tag prefix is held only until it cannot be a tag", async () => {
  assert.deepEqual(
    merged(
      await throughThink([
        content("  <thi"),
        { kind: "finish", reason: "stop" },
        content("x </think"),
      ]),
    ),
    [
      content("  <thi"),
      { kind: "finish", reason: "stop" },
      content("x </think"),
    ],
  );
  assert.deepEqual(
    merged(await throughThink([content("<thin"), content("g")])),
    [
      content("<thing"),
    ],
  );
});

Deno.test("think tags: tool calls inside an open block pass through in order", async () => {
  const call: Delta = { kind: "tool_call", index: 0, arguments: "{}" };
  const out = await throughThink([
    content("<think>also"),
    call,
    content("</think>done"),
  ]);
  assert.deepEqual(out, [
    { kind: "think", text: "also" },
    call,
    content("done"),
  ]);
});

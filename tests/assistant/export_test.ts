/** The export formats alone, from a record as the store gives it. */
import assert from "node:assert/strict";
import { marked, type Token } from "marked";
import {
  EXPORT_FORMAT,
  exportJson,
  exportMarkdown,
} from "../../src/assistant/export.ts";
import { localStamp } from "../../src/assistant/prompt.ts";
import type { ConversationRecord } from "../../src/store/store.ts";

const RECORD: ConversationRecord = {
  id: 4,
  title: "Trip  planning",
  created: 1_800_000_000,
  updated: 1_800_000_600,
  summary: null,
  turns: [
    {
      user: "Where to?\n\n# Not a heading",
      reply: "Lisbon.\n",
      tools: ["weather", "date"],
      at: 1_800_000_000,
    },
    { user: "And then?", reply: "", tools: [], at: 1_800_000_600 },
  ],
};

Deno.test("Markdown: the title, the dates, each question quoted, its tools and its reply", () => {
  const stamp = (s: number) => localStamp(new Date(s * 1000));
  assert.equal(
    exportMarkdown(RECORD),
    [
      "# Trip planning",
      `Conversation 4 · created ${stamp(1_800_000_000)} · updated ${
        stamp(1_800_000_600)
      } · 2 turns`,
      `## 1 · ${stamp(1_800_000_000)}`,
      "> Where to?\n>\n> # Not a heading",
      "*Tools used: weather, date*",
      "Lisbon.",
      `## 2 · ${stamp(1_800_000_600)}`,
      "> And then?",
      "*(no reply)*",
    ].join("\n\n") + "\n",
  );
  assert.match(
    exportMarkdown({ ...RECORD, title: "", turns: [] }),
    /^# Conversation 4\n\n.* · 0 turns\n$/,
  );
});

Deno.test("JSON: the desktop-assistant/1 document, fields in order", () => {
  const text = exportJson(RECORD);
  assert.ok(text.endsWith("}\n"));
  const document = JSON.parse(text);
  assert.deepEqual(Object.keys(document), [
    "format",
    "id",
    "title",
    "created",
    "updated",
    "summary",
    "turns",
  ]);
  assert.equal(document.format, EXPORT_FORMAT);
  assert.equal(document.summary, null);
  assert.deepEqual(document.turns, RECORD.turns);
});

const SUMMARIZED: ConversationRecord = {
  ...RECORD,
  summary: {
    text: "  They planned a trip to **Lisbon**.\n",
    turns: 1,
    tokens: 9,
  },
};

Deno.test("JSON: the summary is its text and the turns it covers", () => {
  const document = JSON.parse(exportJson(SUMMARIZED));
  assert.deepEqual(document.summary, {
    text: "  They planned a trip to **Lisbon**.\n",
    turns: 1,
  });
  assert.deepEqual(document.turns, RECORD.turns);
});

Deno.test("Markdown: the summary comes before the turns it covers and says which", () => {
  const stamp = (s: number) => localStamp(new Date(s * 1000));
  const text = exportMarkdown(SUMMARIZED);
  assert.ok(
    text.includes(
      [
        "## Summary of turn 1",
        "They planned a trip to **Lisbon**.",
        `## 1 · ${stamp(1_800_000_000)}`,
      ].join("\n\n"),
    ),
    text,
  );
  // Every turn is still there in full.
  assert.ok(text.includes("> Where to?\n>\n> # Not a heading"));
  assert.ok(text.includes("> And then?"));
  assert.deepEqual(
    blocks(text).map((token) =>
      token.type === "heading" ? `h${token.depth}` : token.type
    ),
    [
      "h1",
      "paragraph",
      "h2", // the summary
      "paragraph",
      "h2", // turn 1: question, tools, reply
      "blockquote",
      "paragraph",
      "paragraph",
      "h2", // turn 2
      "blockquote",
      "paragraph",
    ],
  );
  const two = exportMarkdown({
    ...SUMMARIZED,
    summary: { text: "", turns: 2, tokens: null },
  });
  assert.match(
    two,
    /\n## Summary of turns 1–2\n\n\*\(empty summary\)\*\n\n## 1 · /,
  );
});

/** The top-level Markdown blocks of a text, as a CommonMark parser reads them. */
function blocks(markdown: string): Token[] {
  return marked.lexer(markdown).filter((token) => token.type !== "space");
}

Deno.test("Markdown: a question stays quoted whatever its line ends", () => {
  const lines = ["first line", "# Not a heading", "", "- not a list", "```"];
  for (const end of ["\n", "\r\n", "\r"]) {
    const user = lines.join(end);
    const text = exportMarkdown({
      ...RECORD,
      turns: [{ user, reply: "Reply.", tools: [], at: 1_800_000_000 }],
    });
    const label = JSON.stringify(end);
    assert.ok(
      text.includes(
        "> first line\n> # Not a heading\n>\n> - not a list\n> ```\n",
      ),
      label,
    );
    // Read back: the header, the turn's heading, the quote, the reply.
    const read = blocks(text);
    assert.deepEqual(
      read.map((token) => token.type),
      ["heading", "paragraph", "heading", "blockquote", "paragraph"],
      label,
    );
    assert.equal(read[4]?.raw.trim(), "Reply.", label);
  }
  // U+2028 and U+2029 end no Markdown line: they stay inside the quoted one.
  const separated = exportMarkdown({
    ...RECORD,
    turns: [{
      user: "one\u2028# two\u2029three",
      reply: "Reply.",
      tools: [],
      at: 1_800_000_000,
    }],
  });
  assert.ok(separated.includes("> one\u2028# two\u2029three\n"));
  assert.deepEqual(
    blocks(separated).map((token) => token.type),
    ["heading", "paragraph", "heading", "blockquote", "paragraph"],
  );
});

Deno.test("Markdown: a turn's picture by its name and type, a file's text in a fence it cannot close", () => {
  const text = exportMarkdown({
    ...RECORD,
    turns: [{
      user: "What are these?",
      reply: "A dot and notes.",
      tools: [],
      at: 1_800_000_000,
      attached: [
        {
          name: "dot.png",
          mime: "image/png",
          bytes: 68,
          kind: "image",
          text: null,
          data: null,
        },
        {
          name: "notes.md",
          mime: "text/markdown",
          bytes: 17,
          kind: "text",
          text: "```\ncode\n```",
          data: null,
        },
      ],
    }],
  });
  assert.match(text, /\n\*Picture: dot\.png \(image\/png\)\*\n/);
  assert.match(text, /\n\*File: notes\.md\*\n\n````\n```\ncode\n```\n````\n/);
  assert.ok(!text.includes("iVBOR"), "no picture bytes");
});

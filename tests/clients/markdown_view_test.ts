import assert from "node:assert/strict";
import { renderMarkdown } from "../../src/clients/markdown.ts";
import { MarkdownView } from "../../src/clients/markdown_view.ts";
import { MARKDOWN_REPLY, modelTokens } from "../support/markdown_reply.ts";
import { Screen } from "../support/screen.ts";

/** More kinds of block: a setext heading, a quote, a loose list, an untagged fence with a blank line and a tab, indented code, wide characters. */
const MORE = [
  "Title\n===",
  "> quoted `code`\n> and **bold** text that goes on",
  "- one\n\n- two, loose",
  "```\nno language\n\n\tindented by a tab\n```",
  "    indented code",
  "wide 中文字符 and 😀 emoji, then a tab\there",
].join("\n\n");

const SPLITS: Record<string, (text: string) => string[]> = {
  "model tokens": modelTokens,
  characters: (text) => [...text],
  lines: (text) => text.split(/(?<=\n)/),
};

async function streamed(
  tokens: string[],
  columns: number,
  rows = 60,
): Promise<string[]> {
  const view = new MarkdownView({ columns: () => columns, rows: () => rows });
  using screen = new Screen({ columns, rows });
  // A terminal reads a stream: one write of it all shows the same.
  await screen.write(
    tokens.map((token) => view.push(token)).join("") + view.end(),
  );
  assert.ok(view.atLineStart);
  return screen.lines();
}

async function whole(text: string, columns: number): Promise<string[]> {
  using screen = new Screen({ columns, rows: 60 });
  await screen.write(renderMarkdown(text, columns));
  return screen.lines();
}

Deno.test("streamed in any pieces at any width, the screen ends as the reply drawn whole", async () => {
  for (const text of [MARKDOWN_REPLY, `${MARKDOWN_REPLY}\n\n${MORE}`]) {
    for (const columns of [80, 41, 20]) {
      const expected = await whole(text, columns);
      for (const [name, split] of Object.entries(SPLITS)) {
        assert.deepEqual(
          await streamed(split(text), columns),
          expected,
          `${name} at ${columns} columns`,
        );
      }
    }
  }
});

Deno.test("a finished block is never redrawn; each redraw is one synchronized write for a completed line", async () => {
  const blocks = MARKDOWN_REPLY.split("\n\n");
  const columns = 60;
  const view = new MarkdownView({ columns: () => columns, rows: () => 60 });
  const erased: number[] = [];
  using screen = new Screen({
    columns,
    rows: 60,
    onErase: (line) => erased.push(line),
  });
  // Screen lines of the blocks before `index`, drawn.
  const linesBefore = (index: number) =>
    index === 0
      ? 0
      : renderMarkdown(blocks.slice(0, index).join("\n\n"), columns)
        .split("\n").length - 1;
  let sent = "";
  let redraws = 0;
  for (const token of modelTokens(MARKDOWN_REPLY)) {
    // A block is finished once a complete line of the next one has arrived.
    const complete = sent.slice(0, sent.lastIndexOf("\n") + 1);
    const finished = blocks.findIndex((_, index) => {
      const next = blocks[index + 1]?.split("\n")[0];
      return next === undefined || !complete.startsWith(
        `${blocks.slice(0, index + 1).join("\n\n")}\n\n${next}\n`,
      );
    });
    const before = erased.length;
    const out = view.push(token);
    sent += token;
    await screen.write(out);
    for (const line of erased.slice(before)) {
      assert.ok(
        line >= linesBefore(finished),
        `a redraw at line ${line} reached block ${finished - 1}, finished`,
      );
    }
    if (out.includes("\x1b[J")) {
      redraws++;
      assert.ok(token.includes("\n"), `redrew for ${JSON.stringify(token)}`);
      assert.ok(out.startsWith("\x1b[?2026h") && out.endsWith("\x1b[?2026l"));
    }
  }
  await screen.write(view.end());
  assert.ok(redraws > 0 && redraws <= MARKDOWN_REPLY.split("\n").length);
  assert.deepEqual(screen.lines(), await whole(MARKDOWN_REPLY, columns));
});

Deno.test("text is written as it comes, and a plain line that completes is only ended", () => {
  const view = new MarkdownView({ columns: () => 80, rows: () => 24 });
  assert.equal(view.push("Hello"), "Hello");
  assert.equal(view.push(" world"), " world");
  assert.equal(view.atLineStart, false);
  // Drawn, the line is the same text: the cursor only moves on.
  assert.equal(view.push(".\nNext"), ".\nNext");
  assert.equal(view.end(), "\n");
});

Deno.test("a redraw reaches no further up than the screen's top", async () => {
  // A table taller than the screen, whose columns widen at its last row.
  const rows = ["| a | b |", "| - | - |"];
  for (let i = 0; i < 30; i++) rows.push(`| ${i} | x |`);
  rows.push("| a much wider cell | y |");
  const text = rows.join("\n");
  const view = new MarkdownView({ columns: () => 40, rows: () => 10 });
  const erased: number[] = [];
  using screen = new Screen({
    columns: 40,
    rows: 10,
    onErase: (line) => erased.push(line),
  });
  for (const token of modelTokens(text)) await screen.write(view.push(token));
  await screen.write(view.end());
  const expected = await whole(text, 40);
  // The screen shows the table's end as drawn whole; the rows scrolled
  // off stay as first drawn, and none is drawn twice.
  assert.deepEqual(screen.lines().slice(-9), expected.slice(-9));
  assert.equal(screen.lines().length, expected.length);
  assert.ok(erased.length > 0);
});

Deno.test("escape sequences from the model show as visible symbols, in code and in text", async () => {
  const text =
    "Say \x1b]0;title\x07 hi\n\n```sh\nprintf '\x1b[31mred\x1b[0m'\n```";
  const view = new MarkdownView({ columns: () => 40, rows: () => 24 });
  let out = "";
  for (const token of modelTokens(text)) out += view.push(token);
  out += view.end();
  assert.ok(!out.includes("\x1b]"), "an OSC sequence passed");
  assert.ok(!out.includes("\x1b[31m"), "the model's red passed");
  assert.ok(!out.includes("\x07"), "a bell passed");
  using screen = new Screen({ columns: 40, rows: 24 });
  await screen.write(out);
  assert.deepEqual(screen.text().filter((line) => /title|printf/.test(line)), [
    "Say ␛]0;title␇ hi",
    "printf '␛[31mred␛[0m'",
  ]);
});

Deno.test("end() readies the view for the next reply, which starts without a blank line", () => {
  const view = new MarkdownView({ columns: () => 80, rows: () => 24 });
  view.push("First **reply**\n\nsecond para\n");
  view.end();
  assert.equal(view.end(), "");
  const out = view.push("Next\n");
  assert.equal(out, "Next\n");
});

Deno.test("Markdown nested past the parser's depth shows as sent, no text lost, and the next reply is drawn again", async () => {
  const deep = `${">".repeat(6000)} deep\n\nafter **that**`;
  const view = new MarkdownView({ columns: () => 80, rows: () => 24 });
  let out = "";
  for (const token of [...modelTokens(deep), "\n"]) out += view.push(token);
  out += view.end();
  using screen = new Screen({ columns: 80, rows: 24 });
  await screen.write(out);
  assert.deepEqual(screen.text().slice(-3), [
    `${">".repeat(6000)} deep`,
    "",
    "after **that**",
  ]);
  assert.equal(view.push("**next**\n"), "\x1b[1mnext\x1b[0m\n");
  assert.equal(
    renderMarkdown(deep, 80),
    `${">".repeat(6000)} deep\n\nafter **that**\n`,
  );
});

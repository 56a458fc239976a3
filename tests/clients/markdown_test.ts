import assert from "node:assert/strict";
import { CodeHighlighter } from "../../src/clients/code_highlight.ts";
import { renderMarkdown } from "../../src/clients/markdown.ts";
import {
  screenRows,
  showControls,
  textWidth,
} from "../../src/clients/terminal_text.ts";
import { MARKDOWN_REPLY } from "../support/markdown_reply.ts";
import { Screen } from "../support/screen.ts";

async function shown(text: string, columns = 80): Promise<Screen> {
  const screen = new Screen({ columns, rows: 60 });
  await screen.write(renderMarkdown(text, columns));
  return screen;
}

Deno.test("headings, emphasis, inline code, struck text and links are styled; a link shows its URL beside its text", async () => {
  using screen = await shown(
    "# Top\n\n## Second\n\n**bold** *em* `code` ~~gone~~ [the docs](https://example.com/x) <https://auto.example> ![a chart](chart.png)",
  );
  assert.equal(screen.styleOf("Top"), "1;4;35");
  assert.equal(screen.styleOf("Second"), "1;35");
  assert.equal(screen.styleOf("bold"), "1");
  assert.equal(screen.styleOf("em"), "3");
  assert.equal(screen.styleOf("code"), "33");
  assert.equal(screen.styleOf("gone"), "9");
  assert.equal(screen.styleOf("the docs"), "4;34");
  assert.deepEqual(
    screen.text(),
    [
      "Top",
      "",
      "Second",
      "",
      "bold em code gone the docs (https://example.com/x) https://auto.example [image: a chart] (chart.png)",
    ].map((line) => line.length > 80 ? line : line).flatMap((line) =>
      // The last line wraps at the width, between words.
      line.length > 80
        ? [
          "bold em code gone the docs (https://example.com/x) https://auto.example [image:",
          "a chart] (chart.png)",
        ]
        : [line]
    ),
  );
});

Deno.test("a fenced block is highlighted by its language tag; an unknown tag shows plain text", async () => {
  using screen = await shown(
    "```python\ndef f(x):\n    return 'hi'  # note\n```\n\n```nosuchlang\ndef f\n```",
  );
  assert.equal(screen.styleOf("def"), "35");
  assert.equal(screen.styleOf("'hi'"), "32");
  assert.equal(screen.styleOf("# note"), "2");
  assert.deepEqual(screen.text().slice(-3), [
    "── nosuchlang " + "─".repeat(66),
    "def f",
    "─".repeat(80),
  ]);
  assert.equal(screen.lines().at(-2), "def f");
});

Deno.test("a code block highlighted line by line equals the block highlighted whole; a comment keeps its colour on its later lines", () => {
  const lines = [
    "const a = `template",
    "  ${b} still`;",
    "/* a comment",
    "   over lines */",
    "function f(",
    "  x: number,",
    ") {}",
  ];
  const whole = new CodeHighlighter("ts").highlight(lines);
  const stepwise = new CodeHighlighter("ts");
  let last: string[] = [];
  for (let n = 1; n <= lines.length; n++) {
    last = stepwise.highlight(lines.slice(0, n));
  }
  assert.deepEqual(last, whole);
  assert.equal(whole[3], "\x1b[2m   over lines */\x1b[0m");
  // A changed line redoes what follows it.
  const changed = [...lines.slice(0, 2), "let c = 1;", ...lines.slice(3)];
  assert.deepEqual(
    stepwise.highlight(changed),
    new CodeHighlighter("ts").highlight(changed),
  );
});

Deno.test("tables fit the width: the widest columns wrap, every cell's words kept", async () => {
  for (const columns of [80, 60, 44, 32, 20]) {
    const lines = renderMarkdown(MARKDOWN_REPLY, columns).split("\n");
    const table = lines.filter((line) => /[┌│├└]/.test(line));
    assert.ok(table.length >= 6, `${columns}: ${lines.join("\n")}`);
    for (const line of table) {
      assert.ok(textWidth(line) <= columns, `${columns}: ${line}`);
    }
    // Too narrow for its longest words, a column cuts them.
    if (columns < 32) continue;
    using screen = await shown(MARKDOWN_REPLY, columns);
    const words = screen.text().filter((line) => line.startsWith("│"))
      .flatMap((line) => line.split(/[│\s]+/)).filter(Boolean);
    for (
      const word
        of "seconds before a stalled read fails and the next one starts"
          .split(" ")
    ) {
      assert.ok(words.includes(word), `${columns}: ${word} lost`);
    }
  }
  using screen = await shown(MARKDOWN_REPLY, 80);
  assert.deepEqual(
    screen.text().filter((line) => /^[┌│├└]/.test(line)).slice(0, 4),
    [
      "┌─────────┬─────────┬──────────────────────────────────────────────────────────┐",
      "│ Option  │ Default │ Meaning                                                  │",
      "├─────────┼─────────┼──────────────────────────────────────────────────────────┤",
      "│ timeout │      30 │ seconds before a stalled read fails and the next one     │",
    ],
  );
});

Deno.test("lists nest with their own bullets, numbers align, tasks show a box; quotes have a bar", async () => {
  using screen = await shown(
    "- a\n  - b\n    - c\n- [ ] todo\n- [x] done\n\n9. nine\n10. ten\n\n> quoted\n> lines",
  );
  assert.deepEqual(screen.text(), [
    "• a",
    "  ◦ b",
    "    ▪ c",
    "• ☐ todo",
    "• ☑ done",
    "",
    " 9. nine",
    "10. ten",
    "",
    "│ quoted",
    "│ lines",
  ]);
});

Deno.test("character references are decoded; one to a control character shows as its symbol", async () => {
  const out = renderMarkdown(
    "a &amp; b &lt;c&gt; &#x263A; &#27;[31m `&#27;`",
    80,
  );
  assert.ok(!out.includes("\x1b[31m"), out);
  using screen = await shown("a &amp; b &lt;c&gt; &#x263A; &#27;[31m `&#27;`");
  assert.deepEqual(screen.text(), ["a & b <c> ☺ ␛[31m &#27;"]);
});

Deno.test("control characters are shown, not obeyed; widths count wide and combining characters", () => {
  assert.equal(
    showControls("a\x1b[2Jb\r\nc\x07\x7f\u009b\td"),
    "a␛[2Jb\nc␇␡\ufffd\td",
  );
  assert.equal(textWidth("abc"), 3);
  assert.equal(textWidth("中文"), 4);
  assert.equal(textWidth("e\u0301"), 1);
  assert.equal(textWidth("\x1b[1mbold\x1b[0m"), 4);
  assert.equal(screenRows("", 10), 1);
  assert.equal(screenRows("x".repeat(10), 10), 1);
  assert.equal(screenRows("x".repeat(11), 10), 2);
});

Deno.test("prose wraps at a readable width on a wide screen; code and tables keep the screen's", async () => {
  const words = "the quick brown fox jumps over the lazy dog ".repeat(8).trim();
  const code = "x".repeat(150);
  using screen = await shown(
    `${words}\n\n- ${words}\n\n> ${words}\n\n\`\`\`\n${code}\n\`\`\``,
    200,
  );
  const text = screen.text();
  const prose = text.filter((line) => line.includes("quick"));
  assert.ok(prose.length >= 9, text.join("\n"));
  for (const line of prose) {
    assert.ok(textWidth(line) <= 82, `${line.length}: ${line}`);
  }
  assert.ok(text.includes(code), "a code line is never wrapped");
  // A narrow screen is narrower than the readable width: it wins.
  using narrow = await shown(words, 40);
  assert.ok(narrow.text().every((line) => line.length <= 40));
});

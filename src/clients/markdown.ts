/**
 * Markdown as terminal lines: marked parses it, and each block token becomes
 * styled lines fitted to the width: headings, emphasis, inline code, code
 * blocks highlighted by their language tag, lists, block quotes, tables
 * within the width, and links as their text with the URL beside it. The
 * text reaching here already shows its control characters as symbols.
 */
import { Lexer, type Token, type Tokens } from "marked";
import { CodeHighlighter, codeLanguage, style } from "./code_highlight.ts";
import {
  expandTabs,
  graphemes,
  showControls,
  textWidth,
} from "./terminal_text.ts";

/** Link reference definitions, as marked collects them. */
export type Links = Record<
  string,
  { href: string | null; title: string | null }
>;

/** A run of text in one style (SGR parameters; "" for none). */
interface Span {
  text: string;
  sgr: string;
}

const HEADING = ["1;4;35", "1;35", "1;36", "1", "1", "1"];
const STRONG = "1";
const EM = "3";
const DEL = "9";
const CODE = "33";
const LINK = "4;34";
const DIM = "2";
const BULLETS = ["•", "◦", "▪"];
const FENCE_END = /(?:^|\n) {0,3}(?:`{3,}|~{3,})[ \t]*\n?$/;
const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));/g;
const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
};

/** marked's block tokens for the source; known link definitions carry over from earlier text. */
export function lexMarkdown(source: string, links: Links = {}): Token[] & {
  links: Links;
} {
  const lexer = new Lexer();
  Object.assign(lexer.tokens.links, links);
  return lexer.lex(source) as Token[] & { links: Links };
}

/** The whole of a reply rendered at once: its lines, each ended by a newline. */
export function renderMarkdown(text: string, width: number): string {
  const lines = new MarkdownRenderer().document(showControls(text), width);
  return lines.map((line) => `${line}\n`).join("");
}

/** Renders marked's tokens as styled lines; keeps the highlighting of the last code block, which a stream renders again as it grows. */
export class MarkdownRenderer {
  #code: CodeHighlighter | null = null;

  /** The lines of a whole document, blocks apart by a blank line. */
  document(source: string, width: number): string[] {
    const lines: string[] = [];
    for (const token of lexMarkdown(source)) {
      const block = this.block(token, width);
      if (block.length === 0) continue;
      if (lines.length > 0) lines.push("");
      lines.push(...block);
    }
    return lines;
  }

  /** The lines of one block token; `open` marks one still arriving (an unclosed fence draws no closing rule). */
  block(token: Token, width: number, open = false, depth = 0): string[] {
    const t = token as Tokens.Generic;
    switch (token.type) {
      case "space":
      case "def":
        return [];
      case "heading":
        return wrap(
          inline(t.tokens ?? [], HEADING[(t.depth as number) - 1] ?? "1"),
          width,
        );
      case "paragraph":
        return wrap(inline(t.tokens ?? []), width);
      case "text":
        return wrap(inline(t.tokens ?? [t]), width);
      case "code":
        return this.#codeBlock(token as Tokens.Code, width, open);
      case "blockquote": {
        const inner = this.#blocks(t.tokens ?? [], width - 2, false, depth);
        const bar = style("│", DIM);
        return inner.map((line) => line === "" ? bar : `${bar} ${line}`);
      }
      case "list":
        return this.#list(token as Tokens.List, width, depth);
      case "table":
        return table(token as Tokens.Table, width);
      case "hr":
        return [style("─".repeat(Math.max(1, width)), DIM)];
      case "html":
        return showControls(t.text).replace(/\n+$/, "").split("\n");
      default:
        return wrap([{ text: t.raw, sgr: "" }], width);
    }
  }

  /** Blocks inside a list item or quote: a blank line apart unless the list is tight. */
  #blocks(
    tokens: Token[],
    width: number,
    tight: boolean,
    depth: number,
  ): string[] {
    const lines: string[] = [];
    for (const token of tokens) {
      const block = this.block(token, width, false, depth);
      if (block.length === 0) continue;
      if (lines.length > 0 && !tight) lines.push("");
      lines.push(...block);
    }
    return lines;
  }

  #codeBlock(token: Tokens.Code, width: number, open: boolean): string[] {
    let text = token.text;
    const closed = token.codeBlockStyle !== "indented" &&
      FENCE_END.test(token.raw.trimEnd() + "\n") &&
      token.raw.trimEnd().includes("\n");
    if (token.codeBlockStyle === "indented") text = text.replace(/\n+$/, "");
    // marked keeps an open fence's trailing newline; the closed fence does not.
    else if (!closed && text.endsWith("\n")) text = text.slice(0, -1);
    const lines = text === ""
      ? []
      : showControls(text).split("\n").map(expandTabs);
    const tag = token.lang ?? "";
    if (!this.#code || this.#code.language !== codeLanguage(tag)) {
      this.#code = new CodeHighlighter(tag);
    }
    const label = tag.trim().split(/\s+/)[0] ?? "";
    const rule = Math.max(1, width);
    const top = label === ""
      ? "─".repeat(rule)
      : `── ${label} ${"─".repeat(Math.max(0, rule - textWidth(label) - 4))}`;
    const out = [style(top, DIM), ...this.#code.highlight(lines)];
    if (!open || closed) out.push(style("─".repeat(rule), DIM));
    return out;
  }

  #list(token: Tokens.List, width: number, depth: number): string[] {
    const first = token.start === "" ? 1 : Number(token.start);
    // Numbers align on their right; each item's text starts after its marker.
    const numbers = token.items.map((_, index) => `${first + index}.`);
    const numberWidth = Math.max(...numbers.map((n) => n.length));
    const lines: string[] = [];
    token.items.forEach((item, index) => {
      if (index > 0 && token.loose) lines.push("");
      let marker = token.ordered
        ? numbers[index]!.padStart(numberWidth)
        : BULLETS[depth % BULLETS.length]!;
      if (item.task) marker += item.checked ? " ☑" : " ☐";
      const indent = textWidth(marker) + 1;
      const body = this.#blocks(
        item.tokens.filter((t) => t.type !== "checkbox"),
        width - indent,
        !item.loose,
        depth + 1,
      );
      if (body.length === 0) lines.push(marker);
      body.forEach((line, at) => {
        if (at === 0) lines.push(`${marker} ${line}`);
        else lines.push(line === "" ? "" : " ".repeat(indent) + line);
      });
    });
    return lines;
  }
}

/** Inline tokens as styled spans; a line break stays one, as the model wrote it. */
function inline(tokens: Token[], sgr = ""): Span[] {
  const spans: Span[] = [];
  // marked decodes character references (`&#27;` is ESC): the rule holds after it too.
  const add = (text: string, extra = "") =>
    spans.push({
      text: showControls(text),
      sgr: [sgr, extra].filter(Boolean).join(";"),
    });
  const nested = (token: Tokens.Generic, extra: string) =>
    spans.push(
      ...inline(token.tokens ?? [], [sgr, extra].filter(Boolean).join(";")),
    );
  for (const token of tokens) {
    const t = token as Tokens.Generic;
    switch (token.type) {
      case "text":
        if (t.tokens) nested(t, "");
        else add(entities(t.text));
        break;
      case "escape":
        add(entities(t.text));
        break;
      case "strong":
        nested(t, STRONG);
        break;
      case "em":
        nested(t, EM);
        break;
      case "del":
        nested(t, DEL);
        break;
      case "codespan":
        add(t.text.replace(/\n/g, " "), CODE);
        break;
      case "br":
        add("\n");
        break;
      case "link": {
        nested(t, LINK);
        const href = String(t.href ?? "");
        const shown = t.text as string;
        if (href !== "" && href !== shown && href !== `mailto:${shown}`) {
          add(` (${href})`, DIM);
        }
        break;
      }
      case "image":
        add(`[image: ${t.text}]`, DIM);
        if (t.href) add(` (${t.href})`, DIM);
        break;
      case "checkbox":
        break;
      default:
        add((t.raw ?? "").replace(/\n/g, " "));
    }
  }
  return spans;
}

function entities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(ENTITY, (whole, decimal, hex, name) => {
    if (name !== undefined) return NAMED[name] ?? whole;
    const code = Number.parseInt(decimal ?? hex, decimal ? 10 : 16);
    // A numeric reference to a control character stays as written.
    if (code < 0x20 || (code >= 0x7f && code < 0xa0) || code > 0x10ffff) {
      return whole;
    }
    return String.fromCodePoint(code);
  });
}

/** Word-wraps spans to the width: breaks at spaces, a word wider than the line is cut. */
function wrap(spans: Span[], width: number): string[] {
  const max = Math.max(1, width);
  const lines: Span[][] = [[]];
  let column = 0;
  let space: Span | null = null;
  let word: Span[] = [];
  let wordWidth = 0;
  const line = () => lines[lines.length - 1]!;
  const breakLine = () => {
    lines.push([]);
    column = 0;
    space = null;
  };
  const flush = () => {
    if (word.length === 0) return;
    if (column > 0 && column + (space ? 1 : 0) + wordWidth > max) breakLine();
    if (column > 0 && space) {
      line().push(space);
      column += 1;
    }
    space = null;
    if (column + wordWidth <= max) {
      line().push(...word);
      column += wordWidth;
      word = [];
      wordWidth = 0;
      return;
    }
    // Wider than a line: cut it where the line ends.
    for (const piece of word) {
      for (const char of graphemes(piece.text)) {
        const w = textWidth(char);
        if (column + w > max && column > 0) breakLine();
        line().push({ text: char, sgr: piece.sgr });
        column += w;
      }
    }
    word = [];
    wordWidth = 0;
  };
  for (const span of spans) {
    for (const part of span.text.split(/(\n|[ \t]+)/)) {
      if (part === "") continue;
      if (part === "\n") {
        flush();
        breakLine();
      } else if (/^[ \t]+$/.test(part)) {
        flush();
        if (column > 0) space = { text: " ", sgr: span.sgr };
      } else {
        word.push({ text: part, sgr: span.sgr });
        wordWidth += textWidth(part);
      }
    }
  }
  flush();
  while (lines.length > 1 && lines[lines.length - 1]!.length === 0) lines.pop();
  return lines.map(join);
}

/** Spans as one styled line, runs of one style merged. */
function join(spans: Span[]): string {
  let out = "";
  let run = "";
  let sgr = "";
  for (const span of spans) {
    if (span.sgr !== sgr) {
      out += style(run, sgr);
      run = "";
      sgr = span.sgr;
    }
    run += span.text;
  }
  return out + style(run, sgr);
}

function spansWidth(spans: Span[]): number {
  return spans.reduce((sum, span) => sum + textWidth(span.text), 0);
}

/** A table with borders, its columns narrowed (longest first) until it fits the width. */
function table(token: Tokens.Table, width: number): string[] {
  const header = token.header.map((cell) => inline(cell.tokens, STRONG));
  const rows = token.rows.map((row) => row.map((cell) => inline(cell.tokens)));
  const count = header.length;
  const natural = header.map((cell, column) =>
    Math.max(
      1,
      spansWidth(cell),
      ...rows.map((row) => spansWidth(row[column] ?? [])),
    )
  );
  const words = header.map((cell, column) =>
    Math.max(
      1,
      longestWord(cell),
      ...rows.map((row) => longestWord(row[column] ?? [])),
    )
  );
  const widths = fit(natural, words, Math.max(count, width - (3 * count + 1)));
  const border = (left: string, middle: string, right: string) =>
    style(
      left + widths.map((w) => "─".repeat(w + 2)).join(middle) + right,
      DIM,
    );
  const bar = style("│", DIM);
  const row = (cells: Span[][]): string[] => {
    const wrapped = widths.map((w, column) => wrap(cells[column] ?? [], w));
    const height = Math.max(...wrapped.map((lines) => lines.length));
    const lines: string[] = [];
    for (let at = 0; at < height; at++) {
      const parts = widths.map((w, column) =>
        align(wrapped[column]![at] ?? "", w, token.align[column] ?? null)
      );
      lines.push(`${bar} ${parts.join(` ${bar} `)} ${bar}`);
    }
    return lines;
  };
  return [
    border("┌", "┬", "┐"),
    ...row(header),
    border("├", "┼", "┤"),
    ...rows.flatMap(row),
    border("└", "┴", "┘"),
  ];
}

/** Column widths within the room: each keeps its longest word where it can, and the widest give up the most. */
function fit(natural: number[], words: number[], room: number): number[] {
  const sum = (widths: number[]) => widths.reduce((a, b) => a + b, 0);
  if (sum(natural) <= room) return natural;
  let floor = natural.map((w, column) => Math.min(w, words[column]!));
  if (sum(floor) > room) floor = natural.map(() => 0);
  // The room above the floors is shared out up to a common cap.
  const extra = natural.map((w, column) => w - floor[column]!);
  const used = (cap: number) =>
    sum(floor) + extra.reduce((total, w) => total + Math.min(w, cap), 0);
  let cap = 0;
  while (used(cap + 1) <= room && cap < Math.max(...extra)) cap++;
  let left = room - used(cap);
  return natural.map((_, column) => {
    let w = floor[column]! + Math.min(extra[column]!, cap);
    if (extra[column]! > cap && left > 0) {
      left--;
      w++;
    }
    return Math.max(1, w);
  });
}

function longestWord(spans: Span[]): number {
  const text = spans.map((span) => span.text).join("");
  return Math.max(0, ...text.split(/\s+/).map(textWidth));
}

function align(
  line: string,
  width: number,
  how: "left" | "center" | "right" | null,
): string {
  const gap = Math.max(0, width - textWidth(line));
  if (how === "right") return " ".repeat(gap) + line;
  if (how === "center") {
    const left = Math.floor(gap / 2);
    return " ".repeat(left) + line + " ".repeat(gap - left);
  }
  return line + " ".repeat(gap);
}

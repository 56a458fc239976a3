/**
 * Markdown as terminal lines: marked parses it, and each block token becomes
 * styled lines fitted to the width: headings, emphasis, inline code, code
 * blocks highlighted by their language tag, lists, block quotes, tables
 * within the width, and links as their text with the URL beside it; prose
 * wraps at no more than a readable width however wide the screen. No
 * control character from the text reaches the screen: each shows as a
 * symbol.
 */
import { Lexer, type Token, type Tokens } from "marked";
import { CodeHighlighter, codeLanguage, style } from "./code_highlight.ts";
import { inline, STYLE, wrap } from "./markdown_inline.ts";
import { table } from "./markdown_table.ts";
import { expandTabs, showControls, textWidth } from "./terminal_text.ts";
import { READABLE_COLUMNS } from "./line_wrap.ts";

/** Link reference definitions, as marked collects them. */
export type Links = Record<
  string,
  { href: string | null; title: string | null }
>;

const HEADING = ["1;4;35", "1;35", "1;36", "1", "1", "1"];
const BULLETS = ["•", "◦", "▪"];
const FENCE_END = /(?:^|\n) {0,3}(?:`{3,}|~{3,})[ \t]*\n?$/;

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
  const source = showControls(text);
  let lines: string[];
  try {
    lines = new MarkdownRenderer().document(source, width);
  } catch {
    // Nested past the parser's depth: the text as sent, never lost.
    lines = source.replace(/\n$/, "").split("\n").map(expandTabs);
  }
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
      // Prose wraps at a readable width; code, tables and rules take the screen's.
      case "heading":
        return wrap(
          inline(t.tokens ?? [], HEADING[(t.depth as number) - 1] ?? "1"),
          Math.min(width, READABLE_COLUMNS),
        );
      case "paragraph":
        return wrap(inline(t.tokens ?? []), Math.min(width, READABLE_COLUMNS));
      case "text":
        return wrap(inline(t.tokens ?? [t]), Math.min(width, READABLE_COLUMNS));
      case "code":
        return this.#codeBlock(token as Tokens.Code, width, open);
      case "blockquote": {
        const inner = this.#blocks(
          t.tokens ?? [],
          width - 2,
          false,
          depth,
          open,
        );
        const bar = style("│", STYLE.dim);
        return inner.map((line) => line === "" ? bar : `${bar} ${line}`);
      }
      case "list":
        return this.#list(token as Tokens.List, width, depth, open);
      case "table":
        return table(token as Tokens.Table, width);
      case "hr":
        return [style("─".repeat(Math.max(1, width)), STYLE.dim)];
      case "html":
        return showControls(t.text).replace(/\n+$/, "").split("\n");
      default:
        return wrap(
          [{ text: t.raw, sgr: "" }],
          Math.min(width, READABLE_COLUMNS),
        );
    }
  }

  /** Blocks inside a list item or quote, a blank line apart unless the list is tight; the last one is open when they are. */
  #blocks(
    tokens: Token[],
    width: number,
    tight: boolean,
    depth: number,
    open: boolean,
  ): string[] {
    const lines: string[] = [];
    for (const [index, token] of tokens.entries()) {
      const last = open && index === tokens.length - 1;
      const block = this.block(token, width, last, depth);
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
    const out = [style(top, STYLE.dim), ...this.#code.highlight(lines)];
    if (!open || closed) out.push(style("─".repeat(rule), STYLE.dim));
    return out;
  }

  #list(
    token: Tokens.List,
    width: number,
    depth: number,
    open: boolean,
  ): string[] {
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
        open && index === token.items.length - 1,
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

/**
 * Inline Markdown as styled terminal text: marked's inline tokens become
 * runs of text in one style each, and runs are word-wrapped to a width.
 */
import type { Token, Tokens } from "marked";
import { style } from "./code_highlight.ts";
import { graphemes, showControls, textWidth } from "./terminal_text.ts";

/** A run of text in one style (SGR parameters; "" for none). */
export interface Span {
  text: string;
  sgr: string;
}

/** SGR parameters of the inline styles and of the client's own marks. */
export const STYLE = {
  strong: "1",
  em: "3",
  del: "9",
  code: "33",
  link: "4;34",
  dim: "2",
};

const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));/g;
const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: "\u00a0",
};

/** Inline tokens as styled spans; a line break stays one, as the model wrote it. */
export function inline(tokens: Token[], sgr = ""): Span[] {
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
        nested(t, STYLE.strong);
        break;
      case "em":
        nested(t, STYLE.em);
        break;
      case "del":
        nested(t, STYLE.del);
        break;
      case "codespan":
        add(t.text.replace(/\n/g, " "), STYLE.code);
        break;
      case "br":
        add("\n");
        break;
      case "link": {
        nested(t, STYLE.link);
        const href = String(t.href ?? "");
        const shown = t.text as string;
        if (href !== "" && href !== shown && href !== `mailto:${shown}`) {
          add(` (${href})`, STYLE.dim);
        }
        break;
      }
      case "image":
        add(`[image: ${t.text}]`, STYLE.dim);
        if (t.href) add(` (${t.href})`, STYLE.dim);
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
export function wrap(spans: Span[], width: number): string[] {
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

/** Columns the spans take on one line. */
export function spansWidth(spans: Span[]): number {
  return spans.reduce((sum, span) => sum + textWidth(span.text), 0);
}

/** Columns of the widest word in the spans. */
export function longestWord(spans: Span[]): number {
  const text = spans.map((span) => span.text).join("");
  return Math.max(0, ...text.split(/\s+/).map(textWidth));
}

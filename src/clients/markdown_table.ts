/**
 * A Markdown table for the terminal: borders, a bold header, cells aligned
 * as the delimiter row says and word-wrapped in columns narrowed to fit
 * the width.
 */
import type { Tokens } from "marked";
import { style } from "./code_highlight.ts";
import {
  inline,
  longestWord,
  type Span,
  spansWidth,
  STYLE,
  wrap,
} from "./markdown_inline.ts";
import { textWidth } from "./terminal_text.ts";

/** A table with borders, its columns narrowed (longest first) until it fits the width. */
export function table(token: Tokens.Table, width: number): string[] {
  const header = token.header.map((cell) => inline(cell.tokens, STYLE.strong));
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
      STYLE.dim,
    );
  const bar = style("│", STYLE.dim);
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

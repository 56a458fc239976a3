/**
 * Chat's own lines fitted to the terminal: word-wrapped at spaces (a word
 * wider than the line is cut), styles carried over each break so a wrapped
 * line keeps its colour and the next line never inherits one it should not.
 */
import { graphemes, textWidth } from "./terminal_text.ts";

/** Prose is easiest to read at no more than this many columns. */
export const READABLE_COLUMNS = 80;

// deno-lint-ignore no-control-regex
const SGR = /\x1b\[[0-9;]*m/g;
// deno-lint-ignore no-control-regex
const SGR_OR_GRAPHEME = /(\x1b\[[0-9;]*m)/;
const RESET = "\x1b[0m";

/** The styles in force after `text`, given those in force before it. */
function stylesAfter(before: string, text: string): string {
  let active = before;
  for (const [sequence] of text.matchAll(SGR)) {
    active = sequence === RESET || sequence === "\x1b[m"
      ? ""
      : active + sequence;
  }
  return active;
}

/**
 * Wraps text (it may hold SGR styles and newlines) into lines of at most
 * `width` columns; lines after the first of each paragraph start with
 * `indent`. Runs of spaces inside a line are kept, those at a break dropped.
 */
export function wrapLine(text: string, width: number, indent = ""): string[] {
  const max = Math.max(1, width);
  const hang = textWidth(indent) < max ? indent : "";
  const lines: string[] = [];
  let active = "";
  const paragraphs = text.split("\n");
  paragraphs.forEach((paragraph, index) => {
    const firstLine = lines.length;
    let line = active;
    let used = 0;
    let gap = "";
    let fresh = true;
    const breakLine = () => {
      lines.push(active === "" ? line : line + RESET);
      line = hang + active;
      used = textWidth(hang);
      gap = "";
      fresh = true;
    };
    for (const part of paragraph.split(/( +)/)) {
      if (part === "") continue;
      if (part.startsWith(" ")) {
        // Spaces that start a paragraph are its indent: kept.
        if (line === active && lines.length === firstLine) {
          line += part;
          used += part.length;
        } else gap = part;
        continue;
      }
      const size = textWidth(part);
      if (!fresh && used + gap.length + size > max) breakLine();
      if (!fresh) {
        line += gap;
        used += gap.length;
      }
      gap = "";
      if (used + size <= max) {
        line += part;
        used += size;
        active = stylesAfter(active, part);
      } else {
        // Wider than a whole line: cut where the line is full.
        for (const piece of part.split(SGR_OR_GRAPHEME)) {
          if (piece.startsWith("\x1b")) {
            line += piece;
            active = stylesAfter(active, piece);
            continue;
          }
          for (const grapheme of graphemes(piece)) {
            const w = textWidth(grapheme);
            if (used + w > max && used > textWidth(hang)) breakLine();
            line += grapheme;
            used += w;
          }
        }
      }
      fresh = false;
    }
    if (gap !== "" && used + gap.length <= max) line += gap;
    const last = index === paragraphs.length - 1;
    lines.push(active === "" || last ? line : line + RESET);
  });
  return lines;
}

/**
 * Joins parts with the separator on as few lines as fit the width, breaking
 * only between parts (a part wider than the line is wrapped on its own).
 */
export function packParts(
  parts: string[],
  width: number,
  separator = " · ",
): string[] {
  const lines: string[] = [];
  let line = "";
  for (const part of parts) {
    if (line === "") line = part;
    else if (textWidth(line + separator + part) <= width) {
      line += separator + part;
    } else {
      lines.push(...wrapLine(line, width));
      line = part;
    }
  }
  if (line !== "") lines.push(...wrapLine(line, width));
  return lines;
}

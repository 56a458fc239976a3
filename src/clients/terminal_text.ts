/**
 * What text from the model or a tool may reach the terminal, and how much
 * of the screen it takes there. One rule: no control character passes
 * through, so nothing but the client itself moves the cursor or sets a
 * style. Plain output drops them; a rendered reply shows them as visible
 * symbols instead, so a code block's escape sequence is read, not obeyed.
 */
import { eastAsianWidth } from "get-east-asian-width";

// deno-lint-ignore no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
// deno-lint-ignore no-control-regex
const STYLES = /\x1b\[[0-9;]*m/g;
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]$/u;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Columns between tab stops in rendered text. */
export const TAB_WIDTH = 4;

/** Removes control characters (escape sequences included) but newlines and tabs: text from the model never drives the terminal. */
export function sanitize(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(CONTROLS, "");
}

/** Replaces control characters but newlines and tabs by visible symbols (ESC shows as ␛): the same rule as {@link sanitize}, shown instead of dropped. */
export function showControls(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(CONTROLS, picture);
}

function picture(control: string): string {
  const code = control.charCodeAt(0);
  // C0 controls have pictures at U+2400; DEL at U+2421; C1 has none.
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  return code === 0x7f ? "\u2421" : "\ufffd";
}

/** Replaces tabs by spaces up to the next tab stop, counted from the line's start. */
export function expandTabs(line: string): string {
  if (!line.includes("\t")) return line;
  let out = "";
  let column = 0;
  for (const part of line.split(/(\t)/)) {
    if (part === "\t") {
      const spaces = TAB_WIDTH - (column % TAB_WIDTH);
      out += " ".repeat(spaces);
      column += spaces;
    } else {
      out += part;
      column += textWidth(part);
    }
  }
  return out;
}

/** Columns a character takes: 0 for combining marks, 2 for wide East Asian ones and emoji. */
export function charWidth(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x300) return code < 0x20 || (code >= 0x7f && code < 0xa0) ? 0 : 1;
  if (ZERO_WIDTH.test(char)) return 0;
  return eastAsianWidth(code);
}

/** Columns a line of plain text takes (no tabs or newlines in it). */
export function textWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  let width = 0;
  for (const char of text) width += charWidth(char);
  return width;
}

/** Columns a styled line takes: its SGR sequences take none. */
export function styledWidth(line: string): number {
  return textWidth(line.includes("\x1b") ? line.replace(STYLES, "") : line);
}

/** Screen rows a styled line takes at this width, counting the terminal's soft wrap (an empty line takes one). */
export function screenRows(line: string, columns: number): number {
  const width = styledWidth(line);
  return width === 0 ? 1 : Math.ceil(width / Math.max(1, columns));
}

/** The terminal's size, 80×24 when stdout is no terminal (or reports none). */
export function consoleSize(): { columns: number; rows: number } {
  try {
    const { columns, rows } = Deno.consoleSize();
    return { columns: columns || 80, rows: rows || 24 };
  } catch {
    return { columns: 80, rows: 24 };
  }
}

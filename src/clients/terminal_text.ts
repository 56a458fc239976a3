/**
 * What text from the model or a tool may reach the terminal, and how much
 * of the screen it takes there. One rule: no control character passes
 * through, so nothing but the client itself moves the cursor or sets a
 * style. Plain output drops them; a rendered reply shows them as visible
 * symbols instead, so a code block's escape sequence is read, not obeyed.
 */
// deno-lint-ignore no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
// deno-lint-ignore no-control-regex
const ESCAPES = /\x1b\[[0-9;?]*[@-~]/g;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
// Characters one column wide that never join a neighbour into one grapheme:
// Latin, punctuation, arrows, box drawing, shapes, control pictures.
const NARROW =
  /^[\x20-\x7e\u00a0-\u02ff\u2010-\u2027\u2030-\u205f\u2070-\u20cf\u2100-\u2bff]*$/;

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

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** The text's graphemes: what a person counts as one character each. */
export function graphemes(text: string): string[] {
  return Array.from(segmenter.segment(text), (part) => part.segment);
}

/** Columns a grapheme takes in a terminal: 2 for wide (CJK, emoji), 1 otherwise. */
export function graphemeWidth(grapheme: string): number {
  const code = grapheme.codePointAt(0) ?? 0;
  if (grapheme === "\n") return 1;
  const wide = (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf && code !== 0x303f) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1f64f) ||
    (code >= 0x1f900 && code <= 0x1f9ff) ||
    (code >= 0x20000 && code <= 0x3fffd);
  return wide ? 2 : 1;
}

/** Columns the text takes, escape sequences not counted. */
export function textWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  const plain = text.replace(ESCAPES, "");
  if (NARROW.test(plain)) return plain.length;
  return graphemes(plain).reduce((sum, g) => sum + graphemeWidth(g), 0);
}

/** Screen rows a styled line takes at this width, counting the terminal's soft wrap (an empty line takes one). */
export function screenRows(line: string, columns: number): number {
  const width = textWidth(line);
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

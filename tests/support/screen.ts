/**
 * A terminal emulator (xterm.js, headless) for checking what a person sees:
 * write a program's output to it, then read its lines, the scrollback
 * included, with each cell's style written back as one SGR sequence per
 * change, so two ways of drawing the same picture read the same.
 */
import xterm from "./xterm.ts";

// The package is CommonJS: its classes hang off the default export.
const { Terminal } = xterm;
type Terminal = InstanceType<typeof Terminal>;

/** Options of a {@link Screen}. */
export interface ScreenOptions {
  columns: number;
  rows: number;
  /** Called for each erase (`ESC [ J`) with the cursor's line in the whole buffer. */
  onErase?: (line: number) => void;
}

/** A headless terminal of a fixed size with a long scrollback. */
export class Screen implements Disposable {
  readonly #terminal: Terminal;

  /** A blank screen. */
  constructor(options: ScreenOptions) {
    this.#terminal = new Terminal({
      cols: options.columns,
      rows: options.rows,
      scrollback: 100_000,
      allowProposedApi: true,
      // Output from a pty has "\r\n"; from a render, "\n" alone.
      convertEol: true,
    });
    const onErase = options.onErase;
    if (onErase) {
      this.#terminal.parser.registerCsiHandler({ final: "J" }, () => {
        const buffer = this.#terminal.buffer.active;
        onErase(buffer.baseY + buffer.cursorY);
        return false;
      });
    }
  }

  /** Writes output as the terminal would receive it. */
  write(text: string): Promise<void> {
    return new Promise((resolve) => this.#terminal.write(text, resolve));
  }

  /** The cursor's line in the whole buffer. */
  get cursorLine(): number {
    const buffer = this.#terminal.buffer.active;
    return buffer.baseY + buffer.cursorY;
  }

  /** Every line, scrollback first, trailing blank lines left off; styles as SGR. */
  lines(): string[] {
    const buffer = this.#terminal.buffer.active;
    const lines: string[] = [];
    for (let y = 0; y < buffer.length; y++) {
      const line = buffer.getLine(y);
      if (!line) continue;
      // A soft-wrapped row continues the line above.
      const text = styledLine(line, this.#terminal.cols);
      if (line.isWrapped && lines.length > 0) lines[lines.length - 1] += text;
      else lines.push(text);
    }
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    return lines;
  }

  /** Every line as plain text. */
  text(): string[] {
    // deno-lint-ignore no-control-regex
    return this.lines().map((line) => line.replace(/\x1b\[[0-9;]*m/g, ""));
  }

  /** The style of the first cell showing `text` (SGR parameters, "" for none), or null when it is not on screen. */
  styleOf(text: string): string | null {
    let found: string | null = null;
    for (const line of this.lines()) {
      let sgr = "";
      // Every part but the first starts with an SGR sequence's parameters.
      line.split("\x1b[").forEach((part, index) => {
        let shown = part;
        if (index > 0) {
          const end = part.indexOf("m");
          sgr = part.slice(0, end).replace(/^0;?/, "");
          shown = part.slice(end + 1);
        }
        found ??= shown.includes(text) ? sgr : null;
      });
      if (found !== null) return found;
    }
    return null;
  }

  /** Frees the emulator. */
  [Symbol.dispose](): void {
    this.#terminal.dispose();
  }
}

type Line = NonNullable<
  ReturnType<Terminal["buffer"]["active"]["getLine"]>
>;
type Cell = NonNullable<ReturnType<Line["getCell"]>>;

function styledLine(line: Line, columns: number): string {
  let out = "";
  let current = "";
  let blank = "";
  for (let x = 0; x < columns; x++) {
    const cell = line.getCell(x);
    if (!cell || cell.getWidth() === 0) continue;
    const sgr = cellStyle(cell);
    const chars = cell.getChars() || " ";
    if (chars === " " && sgr === "") {
      // Trailing plain blanks are no part of the line.
      blank += " ";
      continue;
    }
    if (blank !== "") {
      if (current !== "") out += "\x1b[0m";
      current = "";
      out += blank;
      blank = "";
    }
    if (sgr !== current) {
      out += `\x1b[${sgr === "" ? "0" : `0;${sgr}`}m`;
      current = sgr;
    }
    out += chars;
  }
  return current === "" ? out : `${out}\x1b[0m`;
}

function cellStyle(cell: Cell): string {
  const codes: number[] = [];
  if (cell.isBold()) codes.push(1);
  if (cell.isDim()) codes.push(2);
  if (cell.isItalic()) codes.push(3);
  if (cell.isUnderline()) codes.push(4);
  if (cell.isInverse()) codes.push(7);
  if (cell.isStrikethrough()) codes.push(9);
  if (cell.isFgPalette()) {
    const color = cell.getFgColor();
    codes.push(color < 8 ? 30 + color : color < 16 ? 90 + color - 8 : 38);
    if (color >= 16) codes.push(5, color);
  }
  return codes.join(";");
}

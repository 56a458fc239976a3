/**
 * Where chat's text goes: its styles, the width its lines fit, and the
 * column the cursor is at. Every part of the rendering writes through one.
 */
import { type IndentedLine, type Styler, styler } from "./chat_lines.ts";
import { wrapLine } from "./line_wrap.ts";

/** What chat's text is fitted to. */
export interface ScreenOptions {
  /** ANSI colours and styles. */
  colors: boolean;
  /** A terminal's width: lines wrap at words to fit it. Absent for a transcript, whose lines stay whole. */
  columns?: (() => number) | null;
}

/** Chat's output as text: styled, fitted, and the cursor's column tracked. */
export class ChatScreen {
  readonly colors: boolean;
  readonly style: Styler;
  readonly #columns: (() => number) | null;
  #atLineStart = true;

  /** A screen at the start of a line. */
  constructor(options: ScreenOptions) {
    this.colors = options.colors;
    this.style = styler(options.colors);
    this.#columns = options.columns ?? null;
  }

  /** The columns lines fit: the terminal's, or Infinity for a transcript. */
  get width(): number {
    const columns = this.#columns?.();
    return columns && columns > 0 ? columns : Infinity;
  }

  /** True when the cursor is at the start of a line. */
  get atLineStart(): boolean {
    return this.#atLineStart;
  }

  /** Says where the cursor is after text written elsewhere (a Markdown view). */
  set atLineStart(value: boolean) {
    this.#atLineStart = value;
  }

  /** Moves to the start of a line if not there. */
  endLine(): string {
    return this.#atLineStart ? "" : this.write("\n");
  }

  /** A whole line, starting a new one first if needed, wrapped to the width with `indent` before each continuation. */
  line(text: string, indent = ""): string {
    const width = this.width;
    const body = width === Infinity
      ? text
      : wrapLine(text, width, indent).join("\n");
    return this.endLine() + this.write(`${body}\n`);
  }

  /** A dim line, or nothing for null. */
  dimLine(text: string | null): string {
    return text === null ? "" : this.line(this.style("dim", text), "  ");
  }

  /** Whole lines, each wrapped with its own indent. */
  lines(entries: IndentedLine[]): string {
    return entries.map((entry) => this.line(entry.text, entry.indent)).join(
      "",
    );
  }

  /** Text as it is, tracking whether it ends a line. */
  write(text: string): string {
    if (text !== "") {
      // deno-lint-ignore no-control-regex
      const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
      if (plain !== "") this.#atLineStart = plain.endsWith("\n");
    }
    return text;
  }
}

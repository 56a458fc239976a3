/**
 * A one-line editor for the chat prompt: grapheme-aware cursor movement,
 * deletion and kill commands, a history of submitted lines, and a renderer
 * that scrolls long lines sideways so the terminal never wraps them.
 */
import type { Key } from "./key_stream.ts";
import { graphemes, graphemeWidth, textWidth } from "./terminal_text.ts";

export { graphemeWidth, textWidth } from "./terminal_text.ts";

/** What a key did to the line. */
export type Edit =
  | { kind: "changed" }
  | { kind: "unchanged" }
  | { kind: "submit"; line: string }
  | { kind: "interrupt" }
  | { kind: "eof" }
  | { kind: "redraw" };

/** Options of a {@link LineEditor}. */
export interface LineEditorOptions {
  /** Lines kept for up/down; default 500. */
  historySize?: number;
  /** Lines of earlier runs, oldest first, for up/down. */
  history?: readonly string[];
}

/** A one-line editor: cursor movement, deletion, kill commands and a history of submitted lines. */
export class LineEditor {
  #chars: string[] = [];
  #cursor = 0;
  #scroll = 0;
  #history: string[] = [];
  #index = 0;
  #draft = "";
  readonly #historySize: number;

  /** Creates an empty editor. */
  constructor(options: LineEditorOptions = {}) {
    this.#historySize = options.historySize ?? 500;
    this.#history = (options.history ?? []).slice(-this.#historySize);
    this.#index = this.#history.length;
  }

  /** The text being edited. */
  get line(): string {
    return this.#chars.join("");
  }

  /** The cursor, in graphemes from the start. */
  get cursor(): number {
    return this.#cursor;
  }

  /** Lines submitted so far, oldest first. */
  get history(): readonly string[] {
    return this.#history;
  }

  /** Applies one key. */
  apply(key: Key): Edit {
    const changed: Edit = { kind: "changed" };
    const chars = this.#chars;
    switch (key.name) {
      case "text": {
        const added = graphemes(key.text);
        chars.splice(this.#cursor, 0, ...added);
        this.#cursor += added.length;
        return changed;
      }
      case "enter":
        return { kind: "submit", line: this.#submit() };
      case "backspace":
        if (this.#cursor === 0) return { kind: "unchanged" };
        chars.splice(--this.#cursor, 1);
        return changed;
      case "delete":
        if (this.#cursor === chars.length) return { kind: "unchanged" };
        chars.splice(this.#cursor, 1);
        return changed;
      case "eof":
        if (chars.length === 0) return { kind: "eof" };
        // Readline's Ctrl-D on a non-empty line deletes forward.
        return this.apply({ name: "delete" });
      case "left":
        return this.#move(this.#cursor - 1);
      case "right":
        return this.#move(this.#cursor + 1);
      case "home":
        return this.#move(0);
      case "end":
        return this.#move(chars.length);
      case "word-left":
        return this.#move(this.#wordStart());
      case "word-right":
        return this.#move(this.#wordEnd());
      case "kill-start":
        chars.splice(0, this.#cursor);
        this.#cursor = 0;
        return changed;
      case "kill-end":
        chars.splice(this.#cursor);
        return changed;
      case "kill-word": {
        const start = this.#wordStart();
        chars.splice(start, this.#cursor - start);
        this.#cursor = start;
        return changed;
      }
      case "up":
        return this.#recall(this.#index - 1);
      case "down":
        return this.#recall(this.#index + 1);
      case "interrupt":
        return { kind: "interrupt" };
      case "redraw":
        return { kind: "redraw" };
      case "ignore":
        return { kind: "unchanged" };
    }
  }

  /** Escapes that draw the prompt and the line on the current terminal row, the cursor in place; long lines scroll sideways. */
  render(prompt: string, columns: number): string {
    const promptWidth = textWidth(prompt);
    // The last column stays free, so the terminal never wraps the line.
    const room = Math.max(4, columns - promptWidth - 1);
    const widths = this.#chars.map(graphemeWidth);
    const span = (from: number, to: number) =>
      widths.slice(from, to).reduce((sum, w) => sum + w, 0);
    if (this.#cursor < this.#scroll) this.#scroll = this.#cursor;
    while (span(this.#scroll, this.#cursor) > room) this.#scroll++;
    let end = this.#scroll;
    let used = 0;
    while (end < widths.length && used + widths[end]! <= room) {
      used += widths[end]!;
      end++;
    }
    const shown = this.#chars.slice(this.#scroll, end)
      .map((g) => (g === "\n" ? "↵" : g)).join("");
    const column = promptWidth + span(this.#scroll, this.#cursor);
    return `\r${prompt}${shown}\x1b[K\r${column > 0 ? `\x1b[${column}C` : ""}`;
  }

  /** Puts text on the line to edit, the cursor at its end (`/edit`). */
  set(text: string): void {
    this.#chars = graphemes(text);
    this.#cursor = this.#chars.length;
    this.#scroll = 0;
  }

  /** Empties the line (after it was taken elsewhere). */
  clear(): void {
    this.#chars = [];
    this.#cursor = 0;
    this.#scroll = 0;
  }

  #move(to: number): Edit {
    const next = Math.max(0, Math.min(this.#chars.length, to));
    if (next === this.#cursor) return { kind: "unchanged" };
    this.#cursor = next;
    return { kind: "changed" };
  }

  #isSpace(index: number): boolean {
    return /^\s$/u.test(this.#chars[index] ?? " ");
  }

  #wordStart(): number {
    let at = this.#cursor;
    while (at > 0 && this.#isSpace(at - 1)) at--;
    while (at > 0 && !this.#isSpace(at - 1)) at--;
    return at;
  }

  #wordEnd(): number {
    let at = this.#cursor;
    const length = this.#chars.length;
    while (at < length && this.#isSpace(at)) at++;
    while (at < length && !this.#isSpace(at)) at++;
    return at;
  }

  #recall(index: number): Edit {
    if (index < 0 || index > this.#history.length) return { kind: "unchanged" };
    if (this.#index === this.#history.length) this.#draft = this.line;
    this.#index = index;
    const text = index === this.#history.length
      ? this.#draft
      : this.#history[index]!;
    this.#chars = graphemes(text);
    this.#cursor = this.#chars.length;
    this.#scroll = 0;
    return { kind: "changed" };
  }

  #submit(): string {
    const line = this.line;
    if (line.trim() !== "" && this.#history.at(-1) !== line) {
      this.#history.push(line);
      if (this.#history.length > this.#historySize) this.#history.shift();
    }
    this.#index = this.#history.length;
    this.#draft = "";
    this.clear();
    return line;
  }
}

/**
 * A reply's Markdown drawn as it streams. A block is final once marked
 * sees another block after it: it is drawn then and never touched again.
 * The block still arriving is drawn from its complete lines (a code block's
 * lines highlighted as each completes), and the line still arriving shows
 * as sent beneath it; when a line completes, only the screen lines that
 * change are redrawn, in one write. The screen at the end is the reply
 * rendered whole.
 */
import {
  lexMarkdown,
  type Links,
  MarkdownRenderer,
  renderMarkdown,
} from "./markdown.ts";
import { expandTabs, screenRows, showControls } from "./terminal_text.ts";

/** The screen a {@link MarkdownView} draws on. */
export interface MarkdownViewOptions {
  /** Terminal width, read at each update. */
  columns: () => number;
  /** Terminal height: a redraw reaches no further up than the screen's top. */
  rows: () => number;
}

// Terminals that know it show a redraw at once; the rest ignore the mode.
const SYNC_START = "\x1b[?2026h";
const SYNC_END = "\x1b[?2026l";

/** Turns a reply's text deltas into terminal output: {@link push} each delta, {@link end} once. */
export class MarkdownView {
  readonly #options: MarkdownViewOptions;
  #renderer = new MarkdownRenderer();
  /** Complete lines of the blocks not yet final. */
  #source = "";
  /** The line still arriving, controls shown. */
  #tail = "";
  /** Screen lines of the blocks not yet final. */
  #shown: string[] = [];
  /** The tail as the screen shows it, after those lines. */
  #tailShown = "";
  /** A final block has lines on screen: the next one starts after a blank line. */
  #drawn = false;
  #links: Links = {};
  /** The Markdown could not be drawn (nested past the parser's depth): the rest shows as sent. */
  #asSent = false;

  /** A view for one reply on this screen. */
  constructor(options: MarkdownViewOptions) {
    this.#options = options;
  }

  /** True when the cursor is at the start of a line. */
  get atLineStart(): boolean {
    return this.#tailShown === "";
  }

  /** Output for one delta of the reply. */
  push(delta: string): string {
    const text = showControls(delta);
    const newline = text.lastIndexOf("\n");
    if (this.#asSent) {
      this.#tailShown = newline === -1
        ? this.#tailShown + text
        : text.slice(newline + 1);
      return text;
    }
    // Most deltas only add to the line still arriving, shown as sent.
    if (newline === -1) {
      this.#tail += text;
      if (!text.includes("\t")) {
        this.#tailShown += text;
        return text;
      }
      // A tab's width depends on the column it starts at.
      const before = this.#tailShown.length;
      this.#tailShown = expandTabs(this.#tail);
      return this.#tailShown.slice(before);
    }
    this.#source += this.#tail + text.slice(0, newline + 1);
    this.#tail = text.slice(newline + 1);
    return this.#update(false);
  }

  /** Output that ends the reply: every block final, the cursor at a line's start. The view is then ready for another reply. */
  end(): string {
    this.#source += this.#tail;
    this.#tail = "";
    let out = "";
    if (this.#asSent) out = this.#tailShown === "" ? "" : "\n";
    else if (
      this.#source !== "" || this.#shown.length > 0 || this.#tailShown !== ""
    ) out = this.#update(true);
    this.#asSent = false;
    this.#renderer = new MarkdownRenderer();
    this.#source = "";
    this.#shown = [];
    this.#tailShown = "";
    this.#drawn = false;
    this.#links = {};
    return out;
  }

  /** Output for the lines that completed (all of them when final). */
  #update(final: boolean): string {
    const width = this.#options.columns();
    try {
      return this.#render(final, width);
    } catch {
      // Drawn or not, no text is lost: what is not final shows as sent.
      const lines = this.#source.split("\n").map(expandTabs);
      if (lines.at(-1) === "") lines.pop();
      const tail = expandTabs(this.#tail);
      const out = this.#draw(
        [...(this.#drawn ? [""] : []), ...lines],
        tail,
        width,
      );
      this.#asSent = true;
      this.#shown = [];
      this.#tailShown = tail;
      this.#source = this.#tail = "";
      return out;
    }
  }

  /** Renders the blocks not yet final, makes final those marked has seen the end of, and redraws what changed. */
  #render(final: boolean, width: number): string {
    const tokens = lexMarkdown(this.#source, this.#links);
    // The last block but blank space can still grow or change kind (a
    // paragraph turns into a heading or a table by its next line).
    const last = final ? -1 : tokens.findLastIndex((t) => t.type !== "space");
    let firstOpen = last === -1 ? tokens.length : last;
    // marked's tokens carry the source exactly; should they not, nothing is final yet.
    if (tokens.map((token) => token.raw).join("") !== this.#source) {
      firstOpen = 0;
    }
    const lines: string[] = [];
    let drawn = this.#drawn;
    let finalDrawn = drawn;
    let finalLines = 0;
    let finalSource = 0;
    tokens.forEach((token, index) => {
      if (last !== -1 && index > last) return;
      const block = this.#renderer.block(token, width, index === last);
      if (block.length > 0) {
        if (drawn) lines.push("");
        lines.push(...block);
        drawn = true;
      }
      if (index >= firstOpen) return;
      finalDrawn = drawn;
      finalLines = lines.length;
      finalSource += token.raw.length;
    });
    const tail = final ? "" : expandTabs(this.#tail);
    const out = this.#draw(lines, tail, width);
    this.#shown = lines.slice(finalLines);
    this.#tailShown = tail;
    this.#source = this.#source.slice(finalSource);
    this.#drawn = finalDrawn;
    Object.assign(this.#links, tokens.links);
    return out;
  }

  /** Output that turns the screen from the lines and tail shown into these. */
  #draw(lines: string[], tail: string, width: number): string {
    const old = this.#shown;
    let same = 0;
    while (
      same < old.length && same < lines.length && old[same] === lines[same]
    ) same++;
    const rows = (from: number) =>
      lines.slice(from).map((line) => `${line}\n`).join("");
    // The line that completed starts as shown: the rest of it is added.
    const next = lines[same];
    if (
      same === old.length && next !== undefined &&
      next.startsWith(this.#tailShown)
    ) {
      return `${next.slice(this.#tailShown.length)}\n${rows(same + 1)}${tail}`;
    }
    if (same === old.length && this.#tailShown === "") return tail;
    let from = same;
    let up = old.slice(from).reduce(
      (n, line) => n + screenRows(line, width),
      0,
    );
    if (this.#tailShown !== "") up += screenRows(this.#tailShown, width) - 1;
    // Lines scrolled off the top stay as they were; the screen is redrawn.
    const reach = Math.max(0, this.#options.rows() - 1);
    while (up > reach && from < old.length) {
      up -= screenRows(old[from]!, width);
      from++;
    }
    up = Math.min(up, reach);
    return `${SYNC_START}\r${up > 0 ? `\x1b[${up}A` : ""}\x1b[J${
      rows(from)
    }${tail}${SYNC_END}`;
  }
}

/** Replies' Markdown drawn for a screen: a view per streamed reply, and a stored reply rendered whole. */
export function markdownDrawing(options: MarkdownViewOptions): {
  view(): MarkdownView;
  render(text: string): string;
} {
  return {
    view: () => new MarkdownView(options),
    render: (text) => renderMarkdown(text, options.columns()),
  };
}

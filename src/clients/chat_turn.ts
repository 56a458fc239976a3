/**
 * One turn on chat's screen as it streams: the question, reasoning dimmed,
 * tool use as a status line, the answer (its Markdown drawn when asked),
 * the question for a call that waits for approval, and how the turn ended.
 */
import type {
  ConfirmView,
  Event,
  FileView,
  PendingView,
  TurnView,
} from "../protocol/events.ts";
import { filesText, formatArgs, oneLine, timingsText } from "./chat_lines.ts";
import type { ChatScreen } from "./chat_screen.ts";
import { READABLE_COLUMNS, wrapLine } from "./line_wrap.ts";
import { sanitize, textWidth } from "./terminal_text.ts";

/** Replies' Markdown for the screen: a view that draws one streamed reply, and a stored reply drawn whole. */
export interface MarkdownDrawing {
  view(): MarkdownReplyView;
  render(text: string): string;
}

/** Draws one streamed reply: output per delta, then output that ends it at a line's start. */
export interface MarkdownReplyView {
  push(delta: string): string;
  end(): string;
  readonly atLineStart: boolean;
}

type Section = "none" | "think" | "reply" | "tool" | "confirm";

/** Options of a {@link TurnRenderer}. */
export interface TurnOptions {
  /** Show the model's reasoning. */
  think: boolean;
  /** Draws replies' Markdown; absent, replies show as sent. */
  markdown?: MarkdownDrawing | null;
  /** Start with replies as sent even when Markdown can be drawn. */
  raw?: boolean;
}

/** The streaming turn's rendering, with the section the cursor is in. */
export class TurnRenderer {
  readonly #screen: ChatScreen;
  readonly #options: TurnOptions;
  #section: Section = "none";
  #toolOpen: string | null = null;
  /** The turn streaming is a retry or an edit: a stop leaves the last turn. */
  #replacing = false;
  #markdown: boolean;
  #view: MarkdownReplyView | null = null;
  /** Where the answer to a waiting call is typed: the column after its question. */
  #confirmColumn = 0;

  /** Draws turns on this screen. */
  constructor(screen: ChatScreen, options: TurnOptions) {
    this.#screen = screen;
    this.#options = options;
    this.#markdown = !!options.markdown && !options.raw;
  }

  /** Switches Markdown drawing for the next replies; the new state, or null where it cannot be drawn. */
  toggleMarkdown(): boolean | null {
    if (!this.#options.markdown) return null;
    this.#markdown = !this.#markdown;
    return this.#markdown;
  }

  /** A question, as the prompt showed it, then the files it carries; a retry or an edit says that it replaces the last turn. */
  user(text: string, replaces = false, files?: readonly FileView[]): string {
    const { style, width } = this.#screen;
    const [first = "", ...rest] = sanitize(text).split("\n");
    const more = rest.map((line) => `\n  ${line}`).join("");
    this.#section = "none";
    const note = replaces ? " " + style("dim", "(replaces the last turn)") : "";
    // A question is prose: it wraps at a readable width.
    const lines = wrapLine(
      `> ${first}${more}`,
      Math.min(width, READABLE_COLUMNS),
      "  ",
    );
    const body = lines.map((line) => style("bold", line)).join("\n");
    let out = this.#screen.line(body + note, "  ");
    if (files && files.length > 0) {
      out += this.#screen.line(style("cyan", filesText(files)), "  ");
    }
    return out;
  }

  /** A stored turn, as `open` and `hello` show it. */
  stored(turn: TurnView): string {
    const screen = this.#screen;
    let out = this.user(turn.user, false, turn.files);
    if (turn.tools.length > 0) {
      out += screen.line(
        screen.style("cyan", `[tools] ${turn.tools.map(sanitize).join(", ")}`),
        "  ",
      );
    }
    out += this.#markdown
      ? screen.endLine() + this.#options.markdown!.render(turn.reply)
      : screen.line(sanitize(turn.reply));
    return out + screen.write("\n");
  }

  /** The reply in flight as a newly connected client finds it. */
  pending(pending: PendingView, state: string): string {
    this.#replacing = pending.replaces === true;
    let out = this.user(pending.user, this.#replacing, pending.files);
    if (pending.think !== "") out += this.think(pending.think);
    pending.tools.forEach((name, index) => {
      const running = state === "tool" && index === pending.tools.length - 1;
      out += this.tool(name, false);
      if (!running) out += this.tool(name, true);
    });
    if (pending.reply !== "") out += this.token(pending.reply);
    return out;
  }

  /** The `user` event: the turn starts. */
  started(event: Extract<Event, { type: "user" }>): string {
    this.#replacing = event.replaces === true;
    return this.endSection() +
      this.user(event.text, this.#replacing, event.files);
  }

  /** A reasoning delta, dimmed. */
  think(delta: string): string {
    if (!this.#options.think || delta === "") return "";
    let out = "";
    if (this.#section !== "think") {
      out += this.endSection();
      this.#section = "think";
      if (!this.#screen.colors) out += this.#screen.write("(thinking) ");
    }
    return out + this.#screen.write(this.#screen.style("dim", sanitize(delta)));
  }

  /** An answer delta. */
  token(delta: string): string {
    if (delta === "") return "";
    let out = "";
    if (this.#section !== "reply") {
      out += this.endSection();
      this.#section = "reply";
      if (this.#markdown) this.#view = this.#options.markdown!.view();
    }
    if (this.#view) {
      out += this.#view.push(delta);
      this.#screen.atLineStart = this.#view.atLineStart;
      return out;
    }
    return out + this.#screen.write(sanitize(delta));
  }

  /** A tool starting, or done. */
  tool(name: string, done: boolean): string {
    const screen = this.#screen;
    const label = `[tool] ${sanitize(name)}`;
    if (!done) {
      const out = this.endSection() +
        screen.write(screen.style("cyan", `${label} …`));
      this.#section = "tool";
      this.#toolOpen = name;
      return out;
    }
    if (this.#toolOpen === name && this.#section === "tool") {
      this.#toolOpen = null;
      this.#section = "none";
      return screen.write(screen.style("cyan", " done") + "\n");
    }
    return this.endSection() +
      screen.line(screen.style("cyan", `${label} done`));
  }

  /** The turn's end: stopped, cut short, and a blank line after it. */
  done(event: Extract<Event, { type: "done" }>): string {
    const screen = this.#screen;
    let out = this.endSection();
    if (event.stopped) {
      const kept = this.#replacing ? ": the last turn stays" : "";
      out += screen.dimLine(`[stopped${kept}]`);
    }
    if (event.truncated) {
      const why = event.truncated_by === "max_tokens"
        ? "the reply reached max_tokens"
        : "the context is full";
      out += screen.line(screen.style("yellow", `[cut short: ${why}]`));
    }
    if (event.timings) out += screen.dimLine(timingsText(event.timings));
    this.#section = "none";
    this.#replacing = false;
    return out + screen.write("\n");
  }

  /** The question for a call that waits for approval; the answer is typed on the same line. */
  confirm(view: ConfirmView): string {
    const fact = view.tool === "remember" ? view.args?.text : undefined;
    // The model's own memory reads as what it keeps, not as a call.
    if (typeof fact === "string") {
      return this.question(`remember "${oneLine(fact)}"? [y/N] `);
    }
    return this.question(
      `run ${sanitize(view.tool)} ${formatArgs(view.args)}? [y/N] `,
    );
  }

  /** A yes-or-no question of chat's own; the answer goes on the same line. */
  question(question: string): string {
    const screen = this.#screen;
    const lines = wrapLine(question, screen.width, "  ");
    this.#confirmColumn = textWidth(lines.at(-1) ?? "");
    const out = this.endSection() +
      screen.write(
        lines.map((line) => screen.style("yellow", line)).join("\n"),
      );
    this.#section = "confirm";
    return out;
  }

  /** How an approval ended; `mine` when this client gave the answer. A timeout only ever declines. */
  approved(allow: boolean, mine: boolean): string {
    return this.answer(
      mine
        ? allow ? "allowed" : "declined"
        : allow
        ? "allowed (answered elsewhere)"
        : "declined (answered elsewhere or timed out)",
    );
  }

  /** The answer to the question just asked, after it (or under it, where it would not fit). */
  answer(text: string): string {
    const screen = this.#screen;
    if (this.#section === "confirm") {
      this.#section = "none";
      // The answer goes after the question, or under it where it would not fit.
      if (this.#confirmColumn + textWidth(text) > screen.width) {
        return screen.write("\n") + screen.dimLine(text);
      }
      return screen.write(screen.style("dim", text) + "\n");
    }
    return this.endSection() + screen.dimLine(`[${text}]`);
  }

  /** Closes the streaming section: reasoning and replies end their line. */
  endSection(): string {
    this.#section = "none";
    this.#toolOpen = null;
    if (this.#view) {
      const out = this.#view.end();
      this.#view = null;
      this.#screen.atLineStart = true;
      return out;
    }
    return this.#screen.endLine();
  }
}

/**
 * Turns daemon events into terminal text for the chat client: the
 * greeting, the conversation shown, each turn as it streams (chat_turn.ts)
 * and the status lines (chat_lines.ts), all fitted to the screen's width
 * (chat_screen.ts). Pure: it returns text and tracks the column.
 */
import type {
  BackendView,
  Event,
  MemoryView,
  SummaryView,
  TurnView,
} from "../protocol/events.ts";
import {
  backendText,
  conversationLines,
  headerParts,
  type IndentedLine,
  listeningNote,
  memoryLines,
  meterText,
  oneLine,
  resultLines,
  type StyleName,
  summaryNote,
} from "./chat_lines.ts";
import { ChatScreen } from "./chat_screen.ts";
import { type MarkdownDrawing, TurnRenderer } from "./chat_turn.ts";
import { packParts, READABLE_COLUMNS, wrapLine } from "./line_wrap.ts";
import { sanitize } from "./terminal_text.ts";

export { sanitize };
export type { MarkdownDrawing, MarkdownReplyView } from "./chat_turn.ts";

/** Options of a {@link Renderer}. */
export interface RendererOptions {
  /** ANSI colours and styles. */
  colors: boolean;
  /** Show the model's reasoning. */
  think: boolean;
  /** A terminal's height: a conversation switch scrolls what was shown up into the scrollback, so the new one starts on a clear screen and nothing is erased. Absent for a transcript. */
  screenRows?: (() => number) | null;
  /** A terminal's width: chat's own lines wrap at words to fit it. Absent for a transcript, whose lines stay whole. */
  columns?: (() => number) | null;
  /** Draws replies' Markdown (markdown_view.ts); absent, replies show as sent. */
  markdown?: MarkdownDrawing | null;
  /** Start with replies as sent even when Markdown can be drawn (`--raw`). */
  raw?: boolean;
}

/** What a `conversations` answer is the answer to (a delete's, which says so), and the conversation shown, marked in it. */
export type ListContext = { deleted?: number; current?: number | null } | null;

/** Event-to-text rendering with the state a stream needs (section, column). */
export class Renderer {
  readonly #options: RendererOptions;
  readonly #screen: ChatScreen;
  readonly #turn: TurnRenderer;
  /** The backend line as last shown: a change to a field it leaves out shows nothing. */
  #backend: string | null = null;

  /** Creates a renderer. */
  constructor(options: RendererOptions) {
    this.#options = options;
    this.#screen = new ChatScreen(options);
    this.#turn = new TurnRenderer(this.#screen, options);
  }

  /** Switches Markdown drawing for the next replies (`/raw`); the new state, or null where it cannot be drawn. */
  toggleMarkdown(): boolean | null {
    return this.#turn.toggleMarkdown();
  }

  /** True when the cursor is at the start of a line. */
  get atLineStart(): boolean {
    return this.#screen.atLineStart;
  }

  /** The columns chat's lines fit: the screen's, or Infinity for a transcript. */
  get width(): number {
    return this.#screen.width;
  }

  /** The greeting: the header, the current conversation and any reply in flight. */
  hello(event: Extract<Event, { type: "hello" }>): string {
    const screen = this.#screen;
    if (event.backend) this.#backend = backendText(event.backend);
    const header = packParts(
      headerParts(event.model, event.backend),
      screen.width,
    );
    let out = screen.line(screen.style("dim", header.join("\n")));
    out += this.#conversationBody(event.id, event.turns, event.private);
    if (event.ctx_used !== null && event.ctx_sent !== null) {
      out += screen.dimLine(meterText(
        event.ctx_used,
        event.ctx_max,
        event.ctx_sent,
        event.ctx_total ?? event.ctx_sent,
      ));
    }
    const pending = event.pending;
    // A reply that belongs to another conversation is not this one's turn.
    if (pending && pending.id === event.id) {
      out += this.#turn.pending(pending, event.state);
    } else if (pending) {
      out += screen.dimLine(
        `[a reply is streaming in conversation #${pending.id}]`,
      );
    }
    // Approvals are shared state: a waiting call is asked whichever
    // conversation is shown.
    const waiting = event.confirm ?? pending?.confirm;
    if (waiting) out += this.#turn.confirm(waiting);
    return out;
  }

  /** The question for a call that waits for approval; the answer is typed on the same line. */
  confirm(view: Parameters<TurnRenderer["confirm"]>[0]): string {
    return this.#turn.confirm(view);
  }

  /** How an approval ended; `mine` when this client gave the answer. */
  approved(allow: boolean, mine: boolean): string {
    return this.#turn.approved(allow, mine);
  }

  /** A yes-or-no question of chat's own, answered on the same line. */
  question(text: string): string {
    return this.#turn.question(text);
  }

  /** The answer to the question just asked. */
  answer(text: string): string {
    return this.#turn.answer(text);
  }

  /** Text for one event; `list` says what a `conversations` answer answers. */
  event(event: Event, list: ListContext = null): string {
    const screen = this.#screen;
    const turn = this.#turn;
    switch (event.type) {
      case "user":
        return turn.started(event);
      case "think":
        return turn.think(event.delta);
      case "token":
        return turn.token(event.delta);
      case "tool":
        return turn.tool(event.name, event.done);
      case "done":
        return turn.done(event);
      case "ctx": {
        const meter = meterText(
          event.used,
          event.max,
          event.sent,
          event.total,
          event.summarized,
        );
        return meter === null ? "" : turn.endSection() + screen.dimLine(meter);
      }
      case "error":
        return turn.endSection() + this.error(event.message);
      case "conversations":
        return turn.endSection() +
          (list?.deleted !== undefined
            ? screen.line(`deleted conversation #${list.deleted}`)
            : "") +
          screen.lines(
            conversationLines(event.items, screen.style, list?.current ?? null),
          );
      case "results":
        return turn.endSection() +
          screen.lines(resultLines(event.items, screen.style, screen.colors));
      case "conversation":
        return turn.endSection() +
          this.#conversation(event.id, event.turns, event.private);
      case "renamed":
        return turn.endSection() +
          screen.dimLine(
            `#${event.id} is now called "${oneLine(event.title)}"`,
          );
      case "hello":
        return turn.endSection() + this.hello(event);
      case "backend":
        return this.#backendLine(event);
      case "listening":
        return turn.endSection() + screen.dimLine(listeningNote(event.on));
      default:
        return "";
    }
  }

  /** `/memories`: each memory with its number, date and source. */
  memories(items: MemoryView[]): string {
    const screen = this.#screen;
    return this.#turn.endSection() +
      screen.lines(memoryLines(items, screen.style));
  }

  /** A question, as the prompt showed it; a retry or an edit says that it replaces the last turn. */
  user(text: string, replaces = false): string {
    return this.#turn.user(text, replaces);
  }

  /** Text shown as it is (an export), control characters removed, on lines of its own; on a terminal its prose wraps between words at a readable width, and its code blocks at the screen's. */
  block(text: string): string {
    const body = sanitize(text).replace(/\n$/, "");
    const width = this.#screen.width;
    let fenced = false;
    const lines = body.split("\n").flatMap((line) => {
      if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
      if (width === Infinity) return [line];
      return wrapLine(line, fenced ? width : Math.min(width, READABLE_COLUMNS));
    });
    return this.#turn.endSection() +
      this.#screen.write(`${lines.join("\n")}\n`);
  }

  /** A line in red. */
  error(message: string): string {
    const screen = this.#screen;
    return screen.line(
      screen.style("red", `error: ${sanitize(message)}`),
      "  ",
    );
  }

  /** Client text (help, usage, files attached) in dim lines; each entry's wrapped lines take its indent. Control characters are dropped: it may name a local file. */
  info(text: string | IndentedLine[]): string {
    const screen = this.#screen;
    const entries = typeof text === "string"
      ? sanitize(text).split("\n").map((line) => ({ text: line, indent: "" }))
      : text.map((entry) => ({ ...entry, text: sanitize(entry.text) }));
    return this.#turn.endSection() +
      screen.lines(
        entries.map(({ text, indent }) => ({
          text: screen.style("dim", text),
          indent,
        })),
      );
  }

  /** Moves to the start of a line if not there. */
  endLine(): string {
    return this.#screen.endLine();
  }

  /** The note that the conversation shown has a new summary. */
  summaryMade(view: SummaryView): string {
    return this.#turn.endSection() +
      this.#screen.dimLine(summaryNote(view.turns));
  }

  /** `/summary`: the summary of the conversation shown, or that it has none. */
  summary(view: SummaryView | null): string {
    const screen = this.#screen;
    const out = this.#turn.endSection();
    if (view === null) {
      return out +
        screen.dimLine(
          "no summary: the model is sent this conversation's turns as they are",
        );
    }
    const turns = `${view.turns} earlier turn${view.turns === 1 ? "" : "s"}`;
    const text = wrapLine(
      sanitize(view.text).trim(),
      Math.min(screen.width, READABLE_COLUMNS),
    );
    return out + screen.dimLine(`summary of the ${turns}:`) +
      screen.write(`${text.join("\n")}\n`);
  }

  /** The backend's state when what the line says changed (its url or context size alone do not show). */
  #backendLine(view: BackendView): string {
    const text = backendText(view);
    if (text === this.#backend) return "";
    this.#backend = text;
    const style: StyleName = view.state === "up"
      ? "dim"
      : view.state === "down"
      ? "red"
      : "yellow";
    const screen = this.#screen;
    return this.#turn.endSection() +
      screen.line(screen.style(style, text), "  ");
  }

  /** Another conversation: on a terminal, what was shown scrolls up into the scrollback (never erased), and the new one starts on a clear screen. */
  #conversation(
    id: number | null,
    turns: TurnView[],
    isPrivate: boolean | undefined,
  ): string {
    const rows = this.#options.screenRows?.() ?? 0;
    let out = "";
    if (rows > 1) {
      // From an empty line, rows - 1 newlines push every line above it off
      // the screen; the new conversation starts at the top.
      out = this.#screen.endLine() +
        this.#screen.write("\n".repeat(rows - 1)) + "\x1b[H";
    }
    return out + this.#conversationBody(id, turns, isPrivate, true);
  }

  #conversationBody(
    id: number | null,
    turns: TurnView[],
    isPrivate: boolean | undefined,
    announce = false,
  ): string {
    const count = `${turns.length} turn${turns.length === 1 ? "" : "s"}`;
    let header: string | null = null;
    if (isPrivate) {
      header = `── private conversation · not saved${
        turns.length > 0 ? ` · ${count}` : ""
      } ──`;
    } else if (id !== null) {
      header = `── conversation #${id} · ${count} ──`;
    } else if (announce) {
      header = "── new conversation ──";
    }
    let out = this.#screen.dimLine(header);
    for (const turn of turns) out += this.#turn.stored(turn);
    return out;
  }
}

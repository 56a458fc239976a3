/**
 * Turns daemon events into terminal text for the chat client: the
 * conversation, reasoning dimmed, the answer as it streams, tool use as a
 * status line, errors in red. Pure: it returns text and tracks the column.
 */
import type {
  BackendView,
  ConfirmView,
  Event,
  PendingView,
  TurnView,
} from "../protocol/protocol.ts";
import { sanitize } from "./terminal_text.ts";

export { sanitize };

/** Options of a {@link Renderer}. */
export interface RendererOptions {
  /** ANSI colours and styles. */
  colors: boolean;
  /** Show the model's reasoning. */
  think: boolean;
  /** Clear the screen when the conversation changes (a terminal, not a transcript). */
  clearOnSwitch: boolean;
  /** Draws replies' Markdown (markdown_view.ts); absent, replies show as sent. */
  markdown?: MarkdownDrawing | null;
  /** Start with replies as sent even when Markdown can be drawn (`--raw`). */
  raw?: boolean;
}

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

/** What a `conversations` answer is the answer to. */
export type ListContext = { deleted: number } | null;

const STYLE = {
  dim: "\x1b[2m",
  bold: "\x1b[1m",
  red: "\x1b[31m",
  cyan: "\x1b[36m",
  yellow: "\x1b[33m",
  reset: "\x1b[0m",
};

/** Longest rendering of a call's arguments in a prompt. */
const MAX_ARGS_SHOWN = 400;

/** A value as compact JSON with a space after each colon and comma: `{"place": "Paris"}`. */
export function formatArgs(value: unknown): string {
  const walk = (item: unknown): string => {
    if (Array.isArray(item)) return `[${item.map(walk).join(", ")}]`;
    if (typeof item === "object" && item !== null) {
      return `{${
        Object.entries(item).map(([key, inner]) =>
          `${JSON.stringify(key)}: ${walk(inner)}`
        ).join(", ")
      }}`;
    }
    return JSON.stringify(item) ?? "null";
  };
  const text = sanitize(walk(value)).replace(/\n/g, " ");
  return text.length > MAX_ARGS_SHOWN
    ? `${text.slice(0, MAX_ARGS_SHOWN - 1)}…`
    : text;
}

/** Local `YYYY-MM-DD HH:MM` of a Unix time in seconds. */
export function formatTime(seconds: number): string {
  const date = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${
    pad(date.getDate())
  } ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** Event-to-text rendering with the state a stream needs (section, column). */
export class Renderer {
  readonly #options: RendererOptions;
  #section: Section = "none";
  #atLineStart = true;
  #toolOpen: string | null = null;
  /** The turn streaming is a retry or an edit: a stop leaves the last turn. */
  #replacing = false;
  #markdown: boolean;
  #view: MarkdownReplyView | null = null;

  /** Creates a renderer. */
  constructor(options: RendererOptions) {
    this.#options = options;
    this.#markdown = !!options.markdown && !options.raw;
  }

  /** Switches Markdown drawing for the next replies (`/raw`); the new state, or null where it cannot be drawn. */
  toggleMarkdown(): boolean | null {
    if (!this.#options.markdown) return null;
    this.#markdown = !this.#markdown;
    return this.#markdown;
  }

  /** True when the cursor is at the start of a line. */
  get atLineStart(): boolean {
    return this.#atLineStart;
  }

  /** The greeting: the banner, the current conversation and any reply in flight. */
  hello(event: Extract<Event, { type: "hello" }>): string {
    const backend = event.backend;
    const model = backend
      ? ""
      : event.model === null
      ? ""
      : ` · ${modelName(event.model)}`;
    const state = backend ? ` · ${backendText(backend)}` : "";
    let out = this.#line(
      this.#style(
        "dim",
        `desktop-assistant${model}${state} · /help for commands`,
      ),
    );
    out += this.#conversationBody(event.id, event.turns, event.private);
    if (event.ctx_used !== null && event.ctx_sent !== null) {
      out += this.#meter(
        event.ctx_used,
        event.ctx_max,
        event.ctx_sent,
        event.ctx_total ?? event.ctx_sent,
      );
    }
    const pending = event.pending;
    // A reply that belongs to another conversation is not this one's turn.
    if (pending && pending.id === event.id) {
      out += this.#pending(pending, event.state);
    } else if (pending) {
      out += this.#line(
        this.#style(
          "dim",
          `[a reply is streaming in conversation #${pending.id}]`,
        ),
      );
    }
    // Approvals are shared state: a waiting call is asked whichever
    // conversation is shown.
    const waiting = event.confirm ?? pending?.confirm;
    if (waiting) out += this.confirm(waiting);
    return out;
  }

  /** The question for a call that waits for approval; the answer is typed on the same line. */
  confirm(view: ConfirmView): string {
    const out = this.#endSection() +
      this.#write(
        this.#style(
          "yellow",
          `run ${sanitize(view.tool)} ${formatArgs(view.args)}? [y/N] `,
        ),
      );
    this.#section = "confirm";
    return out;
  }

  /** How an approval ended; `mine` when this client gave the answer. */
  approved(allow: boolean, mine: boolean): string {
    const word = allow ? "allowed" : "declined";
    const text = mine ? word : `${word} (answered elsewhere or timed out)`;
    if (this.#section === "confirm") {
      this.#section = "none";
      return this.#write(this.#style("dim", text) + "\n");
    }
    return this.#endSection() + this.#line(this.#style("dim", `[${text}]`));
  }

  /** Text for one event; `list` says what a `conversations` answer answers. */
  event(event: Event, list: ListContext = null): string {
    switch (event.type) {
      case "user":
        this.#replacing = event.replaces === true;
        return this.#endSection() + this.user(event.text, this.#replacing);
      case "think":
        return this.#think(event.delta);
      case "token":
        return this.#token(event.delta);
      case "tool":
        return this.#tool(event.name, event.done);
      case "done": {
        let out = this.#endSection();
        if (event.stopped) {
          const kept = this.#replacing ? ": the last turn stays" : "";
          out += this.#line(this.#style("dim", `[stopped${kept}]`));
        }
        if (event.truncated) {
          const why = event.truncated_by === "max_tokens"
            ? "the reply reached max_tokens"
            : "the context is full";
          out += this.#line(this.#style("yellow", `[cut short: ${why}]`));
        }
        this.#section = "none";
        this.#replacing = false;
        return out + this.#write("\n");
      }
      case "ctx":
        return this.#meter(event.used, event.max, event.sent, event.total);
      case "error":
        return this.#endSection() + this.error(event.message);
      case "conversations":
        return this.#endSection() + this.#conversations(event.items, list);
      case "results":
        return this.#endSection() + this.#results(event.items);
      case "conversation":
        return this.#endSection() +
          this.#conversation(event.id, event.turns, event.private);
      case "renamed":
        return this.#endSection() +
          this.#line(
            this.#style(
              "dim",
              `#${event.id} is now called "${oneLine(event.title)}"`,
            ),
          );
      case "hello":
        return this.#endSection() + this.hello(event);
      case "backend":
        return this.#endSection() + this.#line(
          this.#style(
            event.state === "up"
              ? "dim"
              : event.state === "down"
              ? "red"
              : "yellow",
            backendText(event),
          ),
        );
      default:
        return "";
    }
  }

  /** A question, as the prompt showed it; a retry or an edit says that it replaces the last turn. */
  user(text: string, replaces = false): string {
    const [first = "", ...rest] = sanitize(text).split("\n");
    const more = rest.map((line) => `\n  ${line}`).join("");
    this.#section = "none";
    const note = replaces
      ? " " + this.#style("dim", "(replaces the last turn)")
      : "";
    return this.#line(this.#style("bold", `> ${first}${more}`) + note);
  }

  /** Text shown as it is (an export), control characters removed, on lines of its own. */
  block(text: string): string {
    const body = sanitize(text);
    return this.#endSection() +
      this.#write(body.endsWith("\n") ? body : `${body}\n`);
  }

  /** A line in red. */
  error(message: string): string {
    return this.#line(this.#style("red", `error: ${sanitize(message)}`));
  }

  /** A plain line of client text (help, usage). */
  info(text: string): string {
    return this.#endSection() + this.#line(this.#style("dim", text));
  }

  /** Moves to the start of a line if not there. */
  endLine(): string {
    return this.#atLineStart ? "" : this.#write("\n");
  }

  #pending(pending: PendingView, state: string): string {
    this.#replacing = pending.replaces === true;
    let out = this.user(pending.user, this.#replacing);
    if (pending.think !== "") out += this.#think(pending.think);
    pending.tools.forEach((name, index) => {
      const running = state === "tool" && index === pending.tools.length - 1;
      out += this.#tool(name, false);
      if (!running) out += this.#tool(name, true);
    });
    if (pending.reply !== "") out += this.#token(pending.reply);
    return out;
  }

  /** The context meter, shown only when the conversation no longer fits whole. */
  #meter(
    used: number,
    max: number | null,
    sent: number,
    total: number,
  ): string {
    if (sent >= total) return "";
    const size = max === null ? count(used) : `${count(used)}/${count(max)}`;
    return this.#endSection() +
      this.#line(
        this.#style("dim", `context ${size} · ${sent} of ${total} turns`),
      );
  }

  #think(delta: string): string {
    if (!this.#options.think || delta === "") return "";
    let out = "";
    if (this.#section !== "think") {
      out += this.#endSection();
      this.#section = "think";
      if (!this.#options.colors) out += this.#write("(thinking) ");
    }
    return out + this.#write(this.#style("dim", sanitize(delta)));
  }

  #token(delta: string): string {
    if (delta === "") return "";
    let out = "";
    if (this.#section !== "reply") {
      out += this.#endSection();
      this.#section = "reply";
      if (this.#markdown) this.#view = this.#options.markdown!.view();
    }
    if (this.#view) {
      out += this.#view.push(delta);
      this.#atLineStart = this.#view.atLineStart;
      return out;
    }
    return out + this.#write(sanitize(delta));
  }

  #tool(name: string, done: boolean): string {
    const label = `[tool] ${sanitize(name)}`;
    if (!done) {
      const out = this.#endSection() +
        this.#write(this.#style("cyan", `${label} …`));
      this.#section = "tool";
      this.#toolOpen = name;
      return out;
    }
    if (this.#toolOpen === name && this.#section === "tool") {
      this.#toolOpen = null;
      this.#section = "none";
      return this.#write(this.#style("cyan", " done") + "\n");
    }
    return this.#endSection() +
      this.#line(this.#style("cyan", `${label} done`));
  }

  /** Closes the streaming section: reasoning and replies end their line. */
  #endSection(): string {
    this.#section = "none";
    this.#toolOpen = null;
    if (this.#view) {
      const out = this.#view.end();
      this.#view = null;
      this.#atLineStart = true;
      return out;
    }
    return this.endLine();
  }

  #conversation(
    id: number | null,
    turns: TurnView[],
    isPrivate: boolean | undefined,
  ): string {
    const clear = this.#options.clearOnSwitch ? "\x1b[H\x1b[2J\x1b[3J" : "";
    if (clear) this.#atLineStart = true;
    return clear + this.#conversationBody(id, turns, isPrivate, true);
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
    let out = header === null ? "" : this.#line(this.#style("dim", header));
    for (const turn of turns) {
      out += this.user(turn.user);
      if (turn.tools.length > 0) {
        out += this.#line(
          this.#style("cyan", `[tools] ${turn.tools.map(sanitize).join(", ")}`),
        );
      }
      out += this.#markdown
        ? this.endLine() + this.#options.markdown!.render(turn.reply)
        : this.#line(sanitize(turn.reply));
      out += this.#write("\n");
    }
    return out;
  }

  #conversations(
    items: { id: number; title: string; updated: number }[],
    list: ListContext,
  ): string {
    let out = list ? this.#line(`deleted conversation #${list.deleted}`) : "";
    if (items.length === 0) {
      return out + this.#line(this.#style("dim", "no conversations yet"));
    }
    for (const item of items) {
      out += this.#line(
        `${this.#style("bold", `#${item.id}`.padStart(6))}  ${
          this.#style("dim", formatTime(item.updated))
        }  ${sanitize(item.title)}`,
      );
    }
    return out;
  }

  #results(items: { id: number; title: string; snippet: string }[]): string {
    if (items.length === 0) return this.#line(this.#style("dim", "no matches"));
    let out = "";
    for (const item of items) {
      out += this.#line(
        `${this.#style("bold", `#${item.id}`.padStart(6))}  ${
          sanitize(item.title)
        }`,
      );
      const snippet = sanitize(item.snippet).replace(/\s+/g, " ").trim();
      const marked = this.#options.colors
        ? snippet.replace(
          /\*\*(.+?)\*\*/g,
          `${STYLE.bold}${STYLE.yellow}$1${STYLE.reset}`,
        )
        : snippet;
      out += this.#line(`        ${marked}`);
    }
    return out;
  }

  #style(name: keyof typeof STYLE, text: string): string {
    if (!this.#options.colors || text === "") return text;
    return `${STYLE[name]}${text}${STYLE.reset}`;
  }

  /** A whole line, starting a new one first if needed. */
  #line(text: string): string {
    return this.endLine() + this.#write(`${text}\n`);
  }

  #write(text: string): string {
    if (text !== "") {
      // deno-lint-ignore no-control-regex
      const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
      if (plain !== "") this.#atLineStart = plain.endsWith("\n");
    }
    return text;
  }
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

function oneLine(text: string): string {
  return sanitize(text).replace(/\s+/g, " ").trim();
}

/** The llama-server state in a line: `backend up · model`, or the state and why. */
export function backendText(view: BackendView): string {
  if (view.state === "up") {
    return view.model === null
      ? "backend up"
      : `backend up · ${modelName(view.model)}`;
  }
  return view.message === null
    ? `backend ${view.state}`
    : `backend ${view.state}: ${sanitize(view.message)}`;
}

/** The name a person knows a model by: a file path's last part without `.gguf`. */
export function modelName(model: string): string {
  const base = model.split("/").pop() ?? model;
  return sanitize(base.replace(/\.gguf$/i, "") || model);
}

/**
 * Chat's status lines, apart from the conversation itself: the header, the
 * backend state, the context meter, a reply's timings, lists and search
 * results. Pure: each returns text (styled by the caller's styler) for the
 * renderer to fit to the screen.
 */
import type {
  BackendView,
  ConversationItem,
  FileView,
  MemoryView,
  SearchHit,
  Timings,
} from "../protocol/events.ts";
import { sanitize } from "./terminal_text.ts";
import { formatSize } from "./attachments.ts";

/** The styles chat uses. */
export const STYLE = {
  dim: "\x1b[2m",
  bold: "\x1b[1m",
  red: "\x1b[31m",
  cyan: "\x1b[36m",
  yellow: "\x1b[33m",
  reset: "\x1b[0m",
};

/** A style's name. */
export type StyleName = Exclude<keyof typeof STYLE, "reset">;

/** Styles text, or leaves it plain without colours. */
export type Styler = (name: StyleName, text: string) => string;

/** The styler for a terminal with colours, or one without. */
export function styler(colors: boolean): Styler {
  return (name, text) =>
    !colors || text === "" ? text : `${STYLE[name]}${text}${STYLE.reset}`;
}

/** A line and the indent its wrapped continuation lines take. */
export interface IndentedLine {
  text: string;
  indent: string;
}

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

/** The name a person knows a model by: a file path's last part without `.gguf`. */
export function modelName(model: string): string {
  const base = model.split("/").pop() ?? model;
  return sanitize(base.replace(/\.gguf$/i, "") || model);
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

/** The parts of the header line, joined by ` · ` where they fit. */
export function headerParts(
  model: string | null,
  backend: BackendView | undefined,
): string[] {
  const parts = ["desktop-assistant"];
  if (backend) parts.push(...backendText(backend).split(" · "));
  else if (model !== null) parts.push(modelName(model));
  parts.push("/help for commands");
  return parts;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** The context meter, once the conversation no longer fits whole: null while it does. */
export function meterText(
  used: number,
  max: number | null,
  sent: number,
  total: number,
  summarized = 0,
): string | null {
  if (sent >= total) return null;
  const size = max === null ? count(used) : `${count(used)}/${count(max)}`;
  const summary = summarized > 0 ? ` · ${summarized} in the summary` : "";
  return `context ${size} · ${sent} of ${total} turns${summary}`;
}

/** A reply's speed and prompt, from llama-server's timings: `12.5 tokens/s · prompt 35 read, 480 reused`. */
export function timingsText(timings: Timings): string | null {
  const parts: string[] = [];
  const { predicted_n: n, predicted_ms: ms } = timings;
  if (n > 0 && ms > 0) {
    const speed = n / (ms / 1000);
    parts.push(`${speed.toFixed(speed < 10 ? 1 : 0)} tokens/s`);
  }
  const read = Number.isFinite(timings.prompt_n) ? timings.prompt_n : null;
  const reused = Number.isFinite(timings.cache_n) ? timings.cache_n : null;
  if (read !== null && reused !== null) {
    parts.push(`prompt ${count(read)} read, ${count(reused)} reused`);
  }
  return parts.length === 0 ? null : parts.join(" · ");
}

/** The note when a summary is made or grows. */
export function summaryNote(turns: number): string {
  return `[the summary now covers ${turns} earlier turn${
    turns === 1 ? "" : "s"
  } · /summary shows it]`;
}

/** What the listening sign says when it changes. */
export function listeningNote(on: boolean): string {
  return on
    ? "[listening: speak your question; /talk stops]"
    : "[listening off]";
}

/** The `conversations` answer, a line per conversation; the current one (`current`) marked `*`. */
export function conversationLines(
  items: ConversationItem[],
  style: Styler,
  current: number | null = null,
): IndentedLine[] {
  if (items.length === 0) {
    return [{ text: style("dim", "no conversations yet"), indent: "" }];
  }
  return items.map((item) => {
    const number = `#${item.id}`.padStart(6);
    const shown = item.id === current ? "*" + number.replace(/^ /, "") : number;
    return {
      text: `${style("bold", shown)}  ${
        style("dim", formatTime(item.updated))
      }  ${oneLine(item.title)}`,
      indent: " ".repeat(8),
    };
  });
}

/** What each kind of file became, in words. */
const KIND_WORDS: Record<FileView["kind"], string> = {
  text: "text",
  image: "picture",
  converted: "converted to text",
};

/** A question's files in one line: `[files] notes.txt (2.1 KB, text), dot.png (95 bytes, picture)`. */
export function filesText(files: readonly FileView[]): string {
  return `[files] ${
    files.map((file) =>
      `${oneLine(file.name)} (${formatSize(file.bytes)}, ${
        KIND_WORDS[file.kind] ?? oneLine(String(file.kind))
      })`
    ).join(", ")
  }`;
}

/** The `results` answer: each hit's number and title, then its text with the matches marked. */
export function resultLines(
  items: SearchHit[],
  style: Styler,
  colors: boolean,
): IndentedLine[] {
  if (items.length === 0) {
    return [{ text: style("dim", "no matches"), indent: "" }];
  }
  const lines: IndentedLine[] = [];
  const indent = " ".repeat(8);
  for (const item of items) {
    // Words it does not contain found it: say so, or it reads as a miss.
    const meaning = item.by === "meaning"
      ? ` ${style("dim", "(by meaning)")}`
      : "";
    lines.push({
      text: `${style("bold", `#${item.id}`.padStart(6))}  ${
        oneLine(item.title)
      }${meaning}`,
      indent,
    });
    const mark = (match: string) =>
      colors ? `${STYLE.bold}${STYLE.yellow}${match}${STYLE.reset}` : match;
    lines.push({ text: indent + hitText(item, mark, colors), indent });
  }
  return lines;
}

/** The `memories` answer: each memory's number, date and text, and the conversation it came from. */
export function memoryLines(
  items: MemoryView[],
  style: Styler,
): IndentedLine[] {
  if (items.length === 0) {
    return [{
      text: style("dim", "no memories yet: /remember text keeps one"),
      indent: "",
    }];
  }
  return items.map((item) => {
    const from = item.source === null
      ? ""
      : ` ${style("dim", `(from #${item.source.id})`)}`;
    return {
      text: `${style("bold", `#${item.id}`.padStart(6))}  ${
        style("dim", formatTime(item.updated).slice(0, 10))
      }  ${oneLine(item.text)}${from}`,
      indent: " ".repeat(8),
    };
  });
}

/**
 * A hit's text on one line with each match passed through `mark`: from
 * `text` and `marks` when the daemon sends them (a reply's own `**bold**`
 * then stays as written), else from the `**` markers of `snippet`. Without
 * colours the snippet shows as sent, its markers showing the matches.
 */
export function hitText(
  hit: SearchHit,
  mark: (match: string) => string,
  colors = true,
): string {
  const spans = colors ? markedSpans(hit) : null;
  if (spans === null) {
    const snippet = oneLine(hit.snippet);
    return colors
      ? snippet.replace(/\*\*(.+?)\*\*/g, (_, m) => mark(m))
      : snippet;
  }
  let out = "";
  for (const [text, matched] of spans) {
    let shown = sanitize(text).replace(/\s+/g, " ");
    if (out === "" || out.endsWith(" ")) shown = shown.replace(/^ /, "");
    if (shown !== "") out += matched ? mark(shown) : shown;
  }
  return out.replace(/ $/, "");
}

/** `text` cut at its marks into [part, matched] pairs; null without usable marks. */
function markedSpans(hit: SearchHit): [string, boolean][] | null {
  const { text, marks } = hit;
  if (typeof text !== "string" || !Array.isArray(marks)) return null;
  const spans: [string, boolean][] = [];
  let at = 0;
  for (const mark of marks) {
    const [start, end] = Array.isArray(mark) ? mark : [];
    // Offsets in order, within the text, each span non-empty.
    if (
      !Number.isSafeInteger(start) || !Number.isSafeInteger(end) ||
      start! < at || end! <= start! || end! > text.length
    ) return null;
    if (start! > at) spans.push([text.slice(at, start), false]);
    spans.push([text.slice(start, end), true]);
    at = end!;
  }
  if (at < text.length) spans.push([text.slice(at), false]);
  return spans;
}

/** Text on one line: control characters gone, whitespace runs single spaces. */
export function oneLine(text: string): string {
  return sanitize(text).replace(/\s+/g, " ").trim();
}

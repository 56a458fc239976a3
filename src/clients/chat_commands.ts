/**
 * Chat's slash commands: `/help`'s text, each typed command read into what
 * it asks for (pure), and carried out through the session's few means.
 */
import type { ChatState } from "./chat_state.ts";
import type { Command } from "../protocol/commands.ts";
import type { IndentedLine } from "./chat_lines.ts";
import type { Renderer } from "./chat_render.ts";
import { splitPaths } from "./chat_attach.ts";

/** Conversations `/list` shows without a number. */
export const LIST_LIMIT = 20;
/** Hits `/search` asks for. */
export const SEARCH_LIMIT = 20;

const COMMANDS: [string, string][] = [
  ["/new", "start a new conversation"],
  [
    "/private",
    "start a private conversation: kept in memory only, never saved (the prompt says private while it lasts)",
  ],
  [
    "/list [N]",
    "the N most recent conversations (default 20; * marks the one shown)",
  ],
  ["/open N", "open conversation N"],
  ["/search words", "search every conversation"],
  [
    "/retry",
    "ask the last question again; the new reply replaces the last turn",
  ],
  [
    "/edit [question]",
    "change the last question (alone: puts it on the line to edit)",
  ],
  ["/rename N title", "give conversation N a title"],
  [
    "/attach [PATH…]",
    "send files with the next question (text, pictures, PDF; about 750 KB in all; the prompt counts them); alone: list them",
  ],
  ["/detach", "drop the attached files"],
  [
    "/export N [file]",
    "show conversation N as Markdown, or write it to a new file in the export folder (.json: JSON)",
  ],
  ["/delete N", "delete conversation N (after a y)"],
  [
    "/summary",
    "the summary of the earlier turns the model is no longer sent whole",
  ],
  [
    "/talk",
    "start or stop listening, for every client: the voice client records meanwhile and asks what it heard once listening stops; starting it stops a reply in flight (the prompt says listening meanwhile)",
  ],
  ["/raw", "replies as sent, or their Markdown drawn again"],
  ["/help", "this help, also /?; /quit leaves, also /exit"],
];

const NOTES = [
  "Anything else is a question (start it with // to begin with a /).",
  "A tool call that needs approval asks run TOOL {args}? [y/N]: y runs it, n or Enter declines (the model is told); any client may answer.",
  "Ctrl-C stops a reply; at the prompt Ctrl-C or Ctrl-D leaves (Ctrl-C while editing cancels the edit).",
  "Lines typed while a reply streams wait: each Enter queues one, and they run in order once the reply ends (Ctrl-C ends it sooner).",
  "When the daemon goes away chat waits for it to come back. Up and Down recall lines typed, in earlier runs too (never those of a private conversation).",
  "chat --raw starts with replies as sent; ask --render draws Markdown too.",
  "A dim 'context used/size · S of T turns' line: the model was sent only the S newest of T earlier turns, so the conversation fits its context (the older ones in a summary, when the daemon keeps one).",
  "A dim 'N tokens/s · prompt R read, C reused' line after a reply: how fast it came, and how much of the prompt llama-server read anew or took from its cache.",
];

/** Columns of the command names in `/help`, where the screen is wide enough for two columns. */
const NAME_COLUMNS = 18;

/** `/help` for a screen this wide: two columns where they fit, else each description under its command. */
export function helpLines(width: number): IndentedLine[] {
  const twoColumns = width - NAME_COLUMNS >= 30;
  const lines: IndentedLine[] = [];
  for (const [name, what] of COMMANDS) {
    if (twoColumns) {
      const indent = " ".repeat(NAME_COLUMNS);
      lines.push({ text: name.padEnd(NAME_COLUMNS) + what, indent });
    } else {
      lines.push({ text: name, indent: "" });
      lines.push({ text: `    ${what}`, indent: "    " });
    }
  }
  for (const note of NOTES) lines.push({ text: note, indent: "" });
  return lines;
}

/** What the session waits for after sending a command: its answer, or for a turn its `user` echo. */
export type Waiting =
  | { kind: "list" | "search" | "open" | "new" | "rename" | "turn" }
  | { kind: "delete"; id: number }
  | { kind: "export"; file: string | null }
  /** `/summary` of a conversation this chat has not seen summarised: from its JSON export. */
  | { kind: "summary" }
  | { kind: "listen" }
  /** `/attach` reading its files: nothing is sent, the prompt waits. */
  | { kind: "attach" };

/** What a typed `/command` asks for. */
export type ChatAction =
  | { kind: "help" }
  | { kind: "raw" }
  | { kind: "quit" }
  /** A command typed wrong: how it goes. */
  | { kind: "usage"; text: string }
  | { kind: "unknown"; name: string }
  /** A command for the daemon, and what the prompt waits for. */
  | { kind: "request"; wait: Waiting; command: Command }
  /** `/attach`: files for the next question; none lists them. */
  | { kind: "attach"; paths: string[] }
  | { kind: "detach" }
  /** `/delete N`, once the user says yes. */
  | { kind: "delete"; id: number }
  /** `/edit` alone: the last question goes on the line. */
  | { kind: "edit" }
  | { kind: "summary" }
  /** `/talk`: listening on when off, off when on. */
  | { kind: "talk" };

function numberOf(word: string | undefined): number | null {
  if (word === undefined || !/^\d+$/.test(word)) return null;
  const value = Number(word);
  return Number.isSafeInteger(value) ? value : null;
}

/** Reads a line that starts with one `/`. */
export function parseSlash(text: string): ChatAction {
  const [name = "", ...words] = text.split(/\s+/);
  const rest = words.join(" ");
  const id = numberOf(rest);
  const usage = (what: string): ChatAction => ({
    kind: "usage",
    text: `usage: ${what}`,
  });
  const request = (wait: Waiting, command: Command): ChatAction => ({
    kind: "request",
    wait,
    command,
  });
  switch (name) {
    case "/help":
    case "/?":
      return { kind: "help" };
    case "/raw":
      return { kind: "raw" };
    case "/summary":
      return { kind: "summary" };
    case "/talk":
      return { kind: "talk" };
    case "/quit":
    case "/exit":
      return { kind: "quit" };
    case "/new":
      return request({ kind: "new" }, { type: "new" });
    case "/private":
      return request({ kind: "new" }, { type: "new", private: true });
    case "/list": {
      const limit = rest === "" ? LIST_LIMIT : id;
      if (limit === null || limit < 1) return usage("/list [N]");
      const command: Command = {
        type: "list",
        limit: Math.min(limit, 10_000),
      };
      return request({ kind: "list" }, command);
    }
    case "/open":
      if (id === null) return usage("/open N (a number from /list)");
      return request({ kind: "open" }, { type: "open", id });
    case "/delete":
      if (id === null) return usage("/delete N (a number from /list)");
      return { kind: "delete", id };
    case "/attach": {
      const paths = splitPaths(text.slice(name.length));
      if (paths === null) return usage("/attach PATH… (a quote is not closed)");
      return { kind: "attach", paths };
    }
    case "/detach":
      return { kind: "detach" };
    case "/search":
      if (rest === "") return usage("/search words");
      return request({ kind: "search" }, {
        type: "search",
        q: rest,
        limit: SEARCH_LIMIT,
      });
    case "/retry":
      return request({ kind: "turn" }, { type: "retry" });
    case "/edit":
      return rest === ""
        ? { kind: "edit" }
        : request({ kind: "turn" }, { type: "edit", text: rest });
    case "/rename": {
      const target = numberOf(words[0]);
      const title = words.slice(1).join(" ");
      if (target === null || title === "") {
        return usage("/rename N title (N a number from /list)");
      }
      return request({ kind: "rename" }, { type: "rename", id: target, title });
    }
    case "/export": {
      const target = numberOf(words[0]);
      if (target === null) {
        return usage("/export N [file] (N a number from /list)");
      }
      const file = words.slice(1).join(" ") || null;
      const json = file?.toLowerCase().endsWith(".json") ?? false;
      return request({ kind: "export", file }, {
        type: "export",
        id: target,
        format: json ? "json" : "markdown",
      });
    }
    default:
      return { kind: "unknown", name };
  }
}

/** What carrying out a command needs of the session. */
export interface CommandHost {
  readonly renderer: Renderer;
  /** Shows text above the prompt. */
  print(text: string): void;
  /** Sends a command with a fresh ref; the prompt waits as `wait` says. */
  request(wait: Waiting, command: Command): void;
  /** What the chat knows of the shared state. */
  readonly shared: ChatState;
  /** Lines are edited in a terminal; piped ones are not. */
  readonly canEdit: boolean;
  /** Puts a question on the line to change; Enter sends it as `edit`. */
  edit(line: string): void;
  /** Reads files for the next question; none lists those waiting. */
  attach(paths: string[]): void;
  /** Drops the files waiting. */
  detach(): void;
  /** Asks whether to delete a conversation, and deletes it on yes. */
  confirmDelete(id: number): void;
  /** Ends the chat. */
  quit(): void;
}

/** Carries out a line that starts with one `/`. */
export function runSlash(text: string, host: CommandHost): void {
  const action = parseSlash(text);
  const { renderer } = host;
  switch (action.kind) {
    case "help":
      return host.print(renderer.info(helpLines(renderer.width)));
    case "raw": {
      const drawn = renderer.toggleMarkdown();
      return host.print(renderer.info(
        drawn === null
          ? "Markdown is drawn only on a colour terminal: replies show as sent"
          : drawn
          ? "Markdown drawn from the next reply on"
          : "Replies show as sent from the next one on; /raw draws Markdown again",
      ));
    }
    case "quit":
      return host.quit();
    case "usage":
      return host.print(renderer.error(action.text));
    case "unknown":
      return host.print(
        renderer.error(`unknown command ${action.name}: type /help`),
      );
    case "request":
      return host.request(action.wait, action.command);
    case "attach":
      return host.attach(action.paths);
    case "detach":
      return host.detach();
    case "delete":
      return host.confirmDelete(action.id);
    case "edit": {
      if (!host.canEdit) {
        return host.print(renderer.error(
          "usage: /edit new question (in a terminal, /edit alone puts the last question on the line)",
        ));
      }
      const last = host.shared.lastQuestion;
      if (last === null) {
        return host.print(renderer.error("nothing to edit: no question yet"));
      }
      // A question that starts with / was typed as //.
      return host.edit(last.startsWith("/") ? `/${last}` : last);
    }
    case "summary": {
      const { summary, id } = host.shared;
      if (summary !== undefined) return host.print(renderer.summary(summary));
      // Connected after it was made: a saved conversation's export has it.
      if (id === null) {
        return host.print(renderer.info(
          "no summary seen yet: one shows here once it is made",
        ));
      }
      return host.request({ kind: "summary" }, {
        type: "export",
        id,
        format: "json",
      });
    }
    case "talk":
      return host.request({ kind: "listen" }, {
        type: "listen",
        on: !host.shared.listening,
      });
  }
}

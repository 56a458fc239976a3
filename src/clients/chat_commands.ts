/**
 * Chat's slash commands: each typed command read into what it asks for
 * (pure), and carried out through the session's few means.
 */
import type { ChatState } from "./chat_state.ts";
import type { Command } from "../protocol/commands.ts";
import type { Ref } from "../protocol/protocol.ts";
import type { Renderer } from "./chat_render.ts";
import { splitPaths } from "./chat_attach.ts";
import { helpLines } from "./chat_help.ts";

/** Conversations `/list` shows without a number. */
export const LIST_LIMIT = 20;
/** Hits `/search` asks for. */
export const SEARCH_LIMIT = 20;

/** What the session waits for after sending a command: its answer, or for a turn its `user` echo. */
export type Waiting =
  | { kind: "list" | "search" | "open" | "new" | "rename" | "turn" }
  | { kind: "delete"; id: number }
  | { kind: "export"; file: string | null }
  /** `/summary` of a conversation this chat has not seen summarised: from its JSON export. */
  | { kind: "summary" }
  | { kind: "listen" }
  /** `/attach` reading its files: nothing is sent, the prompt waits. */
  | { kind: "attach" }
  /** `/memories`: the list to show. */
  | { kind: "memories" }
  /** A memory kept, rewritten or forgotten by this chat: a short line says so. */
  | { kind: "memory"; change: "kept" | "rewritten" | "forgotten"; id?: number }
  /** `/forget N`: the memories, to ask about N by its text. */
  | { kind: "forget"; id: number }
  /** This chat's answer to a proposal. */
  | { kind: "decide" };

/** A command sent, or work under way, that the prompt waits for. */
export type Awaiting = Waiting & { ref: Ref };

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
  /** `/forget N`, once the user says yes. */
  | { kind: "forget"; id: number }
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
      return search(words);
    case "/memories":
      return memories(words);
    case "/remember": {
      // Only `#N` names a memory to rewrite: a fact may start with a number.
      const target = words[0]?.startsWith("#")
        ? numberOf(words[0].slice(1))
        : null;
      if (target !== null) {
        const said = words.slice(1).join(" ");
        if (said === "") return usage("/remember #N text (N from /memories)");
        return request({ kind: "memory", change: "rewritten", id: target }, {
          type: "remember",
          id: target,
          text: said,
        });
      }
      if (rest === "") return usage("/remember text");
      return request({ kind: "memory", change: "kept" }, {
        type: "remember",
        text: rest,
      });
    }
    case "/forget":
      if (id === null) return usage("/forget N (a number from /memories)");
      return { kind: "forget", id };
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

const SEARCH_BY = { "--words": "words", "--meaning": "meaning" } as const;

/** `/search [--words | --meaning] words`. */
function search(words: string[]): ChatAction {
  const by = SEARCH_BY[words[0] as keyof typeof SEARCH_BY];
  const q = (by === undefined ? words : words.slice(1)).join(" ");
  if (q === "") {
    return {
      kind: "usage",
      text: "usage: /search [--words | --meaning] words",
    };
  }
  const command: Command = {
    type: "search",
    q,
    limit: SEARCH_LIMIT,
    ...(by === undefined ? {} : { by }),
  };
  return { kind: "request", wait: { kind: "search" }, command };
}

/** `/memories`, or `/memories export [file]` (JSON when the file's name ends in .json). */
function memories(words: string[]): ChatAction {
  if (words.length === 0) {
    return {
      kind: "request",
      wait: { kind: "memories" },
      command: { type: "memories" },
    };
  }
  if (words[0] !== "export") {
    return { kind: "usage", text: "usage: /memories [export [file]]" };
  }
  const file = words.slice(1).join(" ") || null;
  const json = file?.toLowerCase().endsWith(".json") ?? false;
  return {
    kind: "request",
    wait: { kind: "export", file },
    command: { type: "export_memories", format: json ? "json" : "markdown" },
  };
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
  /** Asks whether to forget a memory, and forgets it on yes. */
  confirmForget(id: number): void;
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
    case "forget":
      return host.confirmForget(action.id);
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

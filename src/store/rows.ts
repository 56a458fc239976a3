/**
 * What the history holds, as the store takes and gives it, and how a stored
 * row becomes one. A damaged column is logged (its turn's id, never its
 * text) and read as the least it can be, so it never hides its turn.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import { log } from "../base/log.ts";
import type { FileKind, TurnView } from "../protocol/protocol.ts";
import type { StoredMemoryBlock } from "./memories.ts";

/** A file sent with a question, as the history keeps it. */
export interface StoredFile {
  name: string;
  mime: string;
  /** Its size in bytes, as sent. */
  bytes: number;
  kind: FileKind;
  /** The text it gave the question; null for a picture. */
  text: string | null;
  /** A picture's bytes; null otherwise, and for a picture read back until it is asked for. */
  data: Uint8Array | null;
}

/** One finished turn, as saved at its `done`. */
export interface StoredTurn {
  user: string;
  reply: string;
  tools: string[];
  messages: ChatMessage[];
  /** The turn's size in the model's tokens as measured from llama-server; null when unknown. */
  tokens?: number | null;
  /** The files sent with its question, in order; absent or empty when none. */
  files?: readonly StoredFile[];
}

/** A conversation's running summary: what its first `turns` turns said, for the model in their place. */
export interface StoredSummary {
  /** The summary as the model wrote it. */
  text: string;
  /** How many of the conversation's first turns it covers (at least 1). */
  turns: number;
  /** Its size in the model's tokens; null when unknown. */
  tokens: number | null;
}

/** One row of the conversation list; `updated` is in Unix seconds. */
export interface ConversationItem {
  id: number;
  title: string;
  updated: number;
}

/** One turn of a {@link ConversationRecord}: `at` is when it was saved, in Unix seconds. */
export interface RecordedTurn extends TurnView {
  at: number;
  /** Its files with the text each gave (pictures without their bytes); absent when none. */
  attached?: StoredFile[];
}

/** A whole conversation with its dates (Unix seconds), as `export` writes it. */
export interface ConversationRecord {
  id: number;
  title: string;
  created: number;
  updated: number;
  /** The summary of its first turns; null when it has none. */
  summary: StoredSummary | null;
  turns: RecordedTurn[];
}

/** A conversation loaded back: turns for clients, messages per turn for the model. */
export interface OpenedConversation {
  id: number;
  turns: TurnView[];
  messages: ChatMessage[][];
  /** Each turn's measured size in tokens; null for turns saved before sizes were kept. */
  tokens: (number | null)[];
  /** Each turn's row in the history file. */
  rows: number[];
  /** Each turn's files, pictures without their bytes (`Store.fileData` reads them). */
  files: StoredFile[][];
  /** The summary of its first turns; null when it has none. */
  summary: StoredSummary | null;
  /** The memories its requests carry, kept at its first save; null when none was kept (saved before blocks were). */
  memory: StoredMemoryBlock | null;
}

type Row = Record<string, unknown>;

/** A turn row of `record`; `legacy` is the time of a turn saved before turns had one. */
export function recordedTurn(
  row: Row,
  legacy: number,
  files: StoredFile[] = [],
): RecordedTurn {
  return {
    user: String(row.user ?? ""),
    reply: String(row.reply ?? ""),
    tools: parseTools(row.tools, Number(row.id)),
    at: row.at === null ? legacy : Number(row.at),
    ...(files.length > 0
      ? { files: files.map(fileView), attached: files }
      : {}),
  };
}

/** The turn rows of `open`, in order: what clients see, what the model is sent, each one's size. */
export function openedTurns(
  rows: Row[],
  files: ReadonlyMap<number, StoredFile[]>,
): Pick<
  OpenedConversation,
  "turns" | "messages" | "tokens" | "rows" | "files"
> {
  const opened: Pick<
    OpenedConversation,
    "turns" | "messages" | "tokens" | "rows" | "files"
  > = { turns: [], messages: [], tokens: [], rows: [], files: [] };
  for (const row of rows) {
    const id = Number(row.id);
    const user = String(row.user ?? "");
    const reply = String(row.reply ?? "");
    const attached = files.get(id) ?? [];
    opened.turns.push({
      user,
      reply,
      tools: parseTools(row.tools, id),
      ...(attached.length > 0 ? { files: attached.map(fileView) } : {}),
    });
    opened.messages.push(parseMessages(row.messages, id, user, reply));
    opened.tokens.push(parseTokens(row.tokens));
    opened.rows.push(id);
    opened.files.push(attached);
  }
  return opened;
}

/** A file as clients are shown it. */
export function fileView(
  file: Pick<StoredFile, "name" | "mime" | "bytes" | "kind">,
): { name: string; mime: string; bytes: number; kind: FileKind } {
  return {
    name: file.name,
    mime: file.mime,
    bytes: file.bytes,
    kind: file.kind,
  };
}

/** A stored turn's `tools` column: its list of names, empty when unreadable. */
function parseTools(value: unknown, turn: number): string[] {
  try {
    const parsed: unknown = JSON.parse(String(value));
    if (
      Array.isArray(parsed) && parsed.every((t) => typeof t === "string")
    ) {
      return parsed;
    }
  } catch {
    // Reported below; a damaged list must not hide the turn.
  }
  log.warn("history turn has unreadable tools", { turn });
  return [];
}

/** A stored turn's `messages` column; when unreadable, its question and reply as the two messages they were. */
function parseMessages(
  value: unknown,
  turn: number,
  user: string,
  reply: string,
): ChatMessage[] {
  try {
    const parsed: unknown = JSON.parse(String(value));
    if (Array.isArray(parsed)) return parsed as ChatMessage[];
  } catch {
    // Reported below; the question and reply still make a usable history.
  }
  log.warn("history turn has unreadable messages", { turn });
  return [
    { role: "user", content: user },
    { role: "assistant", content: reply },
  ];
}

/** A stored size in tokens; null when none was kept (or it is not a count). */
export function parseTokens(value: unknown): number | null {
  return typeof value === "number" && value >= 0 ? value : null;
}

/**
 * What the history holds, as the store takes and gives it, and how a stored
 * row becomes one. A damaged column is logged (its turn's id, never its
 * text) and read as the least it can be, so it never hides its turn.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import { log } from "../base/log.ts";
import type { TurnView } from "../protocol/protocol.ts";

/** One finished turn, as saved at its `done`. */
export interface StoredTurn {
  user: string;
  reply: string;
  tools: string[];
  messages: ChatMessage[];
  /** The turn's size in the model's tokens as measured from llama-server; null when unknown. */
  tokens?: number | null;
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
}

/** A whole conversation with its dates (Unix seconds), as `export` writes it. */
export interface ConversationRecord {
  id: number;
  title: string;
  created: number;
  updated: number;
  turns: RecordedTurn[];
}

/** A conversation loaded back: turns for clients, messages per turn for the model. */
export interface OpenedConversation {
  id: number;
  turns: TurnView[];
  messages: ChatMessage[][];
  /** Each turn's measured size in tokens; null for turns saved before sizes were kept. */
  tokens: (number | null)[];
}

/** A stored turn's `tools` column: its list of names, empty when unreadable. */
export function parseTools(value: unknown, turn: number): string[] {
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
export function parseMessages(
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

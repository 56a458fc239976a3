/**
 * What a turn leaves after its end: the error clients are told when it
 * failed (and a log line that cannot quote it), and the count of a saved
 * turn's tokens, measured after its `done`.
 */
import { AssistantError, type ErrorCode } from "../base/errors.ts";
import { describeSafely, log } from "../base/log.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import type { Store } from "../store/store.ts";
import { type Conversation, recordTokens } from "./conversation.ts";
import type { TurnResult } from "./turn.ts";

/** The client's code and message for a failed turn; the log gets a line that cannot quote the turn. */
export function turnError(
  error: unknown,
  shutdown: boolean,
): { code: ErrorCode; message: string } {
  const answer: { code: ErrorCode; message: string } =
    error instanceof AssistantError
      ? { code: error.code ?? "reply_failed", message: error.message }
      : shutdown
      ? { code: "shutting_down", message: "the daemon is shutting down" }
      : { code: "reply_failed", message: "reply failed" };
  // AssistantError messages are written for clients; what they quote from
  // llama-server may repeat the turn, so the log leaves it out. Anything
  // else is named by class only.
  const reason = error instanceof AssistantError
    ? describeSafely(error)
    : errorName(error);
  log.warn("reply failed", { code: answer.code, error: reason });
  return answer;
}

/** What counting a saved turn needs. */
export interface TurnCount {
  store: Pick<Store, "setTurnTokens">;
  result: TurnResult;
  /** The conversations in memory that may hold the turn's messages. */
  holders: readonly Conversation[];
  messages: ChatMessage[];
  /** The turn's row in the history file; null for a private conversation. */
  row: number | null;
}

/**
 * Measures a saved turn's size and records it: in the history file, and in
 * the conversation in memory (where a later retry may have replaced the turn
 * meanwhile: then nothing changes). Never rejects.
 */
export async function countTurn(count: TurnCount): Promise<void> {
  let tokens: number | null;
  try {
    tokens = await count.result.count();
  } catch (error) {
    // The turn is saved; without its size the history estimates it.
    log.debug("turn count failed", { error: errorName(error) });
    return;
  }
  if (tokens === null) return;
  recordTokens(count.holders, count.messages, tokens);
  if (count.row !== null && count.store.setTurnTokens(count.row, tokens)) {
    log.debug("turn counted", { turn: count.row, tokens });
  }
}

/** An error's class and where it was thrown: its message might quote the turn. */
export function errorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const frame = error.stack?.split("\n")[1]?.trim();
  return frame ? `${error.name} ${frame}` : error.name;
}

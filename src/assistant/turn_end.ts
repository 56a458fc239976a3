/**
 * What a turn leaves after its end: the error clients are told when it
 * failed (and a log line that cannot quote it), and the count of a kept
 * turn's tokens, measured after its `done`.
 */
import { AssistantError, type ErrorCode } from "../base/errors.ts";
import { describeSafely, log } from "../base/log.ts";
import type { ContextPlan } from "./budget.ts";
import type { Conversation, HeldTurn } from "./conversation.ts";

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

/**
 * Measures a kept turn's size and records it with its conversation (which
 * keeps nothing when a retry replaced the turn meanwhile). Never rejects.
 */
export async function countTurn(
  conversation: Conversation,
  turn: HeldTurn,
  plan: ContextPlan,
): Promise<void> {
  let tokens: number | null;
  try {
    tokens = await plan.conclude(turn.messages);
  } catch (error) {
    // The turn is kept; without its size the history estimates it.
    log.debug("turn count failed", { error: errorName(error) });
    return;
  }
  if (tokens === null) return;
  if (conversation.count(turn, tokens) && turn.row !== null) {
    log.debug("turn counted", { turn: turn.row, tokens });
  }
}

/** An error's class and where it was thrown: its message might quote the turn. */
export function errorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const frame = error.stack?.split("\n")[1]?.trim();
  return frame ? `${error.name} ${frame}` : error.name;
}

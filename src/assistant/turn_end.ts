/**
 * What a turn leaves after its end: the error clients are told when it
 * failed (and a log line that cannot quote it), and the count of a kept
 * turn's tokens, measured after its `done`.
 */
import { AssistantError, type ErrorCode } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
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
  log.warn("reply failed", { code: answer.code, error: describeError(error) });
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
    log.debug("turn count failed", { error: describeError(error) });
    return;
  }
  if (tokens === null) return;
  if (conversation.count(turn, tokens) && turn.row !== null) {
    log.debug("turn counted", { turn: turn.row, tokens });
  }
}

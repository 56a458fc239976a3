/**
 * A request llama-server refuses for its length (400
 * `exceed_context_size_error`, naming the prompt's tokens and `n_ctx`) is
 * sent again at once with less: more history left out, then this turn's
 * results cut, at most twice, before any client has seen a token. One that
 * cannot be made to fit fails with the error naming both sizes.
 */
import { AssistantError, loggedName } from "../base/errors.ts";
import { log } from "../base/log.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import { contextOverflow } from "../llm/http_error.ts";
import type { ContextPlan } from "./budget.ts";

/** Times a request refused for its length is sent again. */
export const MAX_RESENDS = 2;

/** Sends the plan's request; when llama-server refuses it for its length, leaves out more and sends again at once, at most `MAX_RESENDS` times. */
export async function sendWithin<T>(
  plan: ContextPlan,
  send: (messages: ChatMessage[]) => Promise<T>,
): Promise<T> {
  for (let resends = 0;; resends++) {
    try {
      return await send(plan.request());
    } catch (error) {
      const overflow = contextOverflow(error);
      if (overflow === null) throw error;
      const { promptTokens, nCtx } = overflow;
      const sent = plan.sent;
      if (resends < MAX_RESENDS && plan.relieve(promptTokens, nCtx)) {
        log.info("request over the context, sent again with less", {
          prompt_tokens: promptTokens,
          n_ctx: nCtx,
          sent_before: sent,
          sent: plan.sent,
        });
        continue;
      }
      throw resends < MAX_RESENDS || plan.sent === 0
        ? tooLong(plan, promptTokens, nCtx, error)
        : error;
    }
  }
}

/** The error for a request that cannot be made to fit: the question alone, or with this turn's results. */
function tooLong(
  plan: ContextPlan,
  promptTokens: number,
  nCtx: number,
  cause: unknown,
): AssistantError {
  const what = plan.hasResults
    ? "this turn's tool results do not fit"
    : "the question is too long for";
  const largest = plan.hasResults ? null : plan.largestFile;
  const message = (name: string) =>
    `${what} the model's context (${promptTokens} tokens, the context holds ${nCtx})` +
    (largest === null
      ? ""
      : `; its largest file, ${name}, is about ${largest.tokens} tokens`);
  return new AssistantError(message(largest?.name ?? ""), {
    cause,
    code: plan.hasResults ? "tool_results_too_long" : "question_too_long",
    // The client is told the file's name; the log only its length.
    ...(largest === null ? {} : { forLog: message(loggedName(largest.name)) }),
  });
}

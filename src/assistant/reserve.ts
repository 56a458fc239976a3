/**
 * The tokens kept free for the reply in every request: the token limit
 * `[request]` sets, else `reply_reserve`, never more than half the context.
 */
import type { Config } from "../base/config.ts";
import type { Truncation } from "../protocol/protocol.ts";

/** The `[request]` keys that limit a reply's tokens, in the order llama-server reads them (the first one set counts). */
const TOKEN_LIMIT_KEYS = [
  "n_predict",
  "max_tokens",
  "max_completion_tokens",
] as const;

/** Where a reserve comes from: a token limit of `[request]`, else `reply_reserve`. */
export type ReserveSource = (typeof TOKEN_LIMIT_KEYS)[number] | "reply_reserve";

/** The reserve the config asks for, before the cap: the token limit `[request]` sets, else `reply_reserve`. */
export function wantedReserve(
  config: Pick<Config, "reply_reserve" | "request">,
): { tokens: number; from: ReserveSource } {
  for (const key of TOKEN_LIMIT_KEYS) {
    const max = config.request[key];
    // -1 and the like are llama-server's "no limit".
    if (typeof max === "number" && Number.isSafeInteger(max) && max > 0) {
      return { tokens: max, from: key };
    }
  }
  return { tokens: config.reply_reserve, from: "reply_reserve" };
}

/** The tokens kept free for the reply: the wanted reserve, at most half the context. */
export function replyReserve(
  nCtx: number,
  config: Pick<Config, "reply_reserve" | "request">,
): number {
  return Math.min(wantedReserve(config).tokens, Math.floor(nCtx / 2));
}

/**
 * Why a reply was cut short, if it was: the context end fills the context
 * exactly; short of it, the token limit the request set ran out
 * (`max_tokens`, whichever key set it).
 */
export function truncation(
  finish: string | null,
  usage: { used: number; prompt?: number } | null,
  nCtx: number | null,
  config: Pick<Config, "reply_reserve" | "request">,
): Truncation | null {
  if (finish !== "length") return null;
  const limit = wantedReserve(config);
  // Without a token limit of the request's, only the context ends a reply so.
  if (limit.from === "reply_reserve") return "context";
  if (
    usage?.prompt !== undefined && usage.used - usage.prompt >= limit.tokens
  ) {
    return "max_tokens";
  }
  // With one, the context only when it is seen to be full.
  const full = usage !== null && nCtx !== null && usage.used >= nCtx;
  return full ? "context" : "max_tokens";
}

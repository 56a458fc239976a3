/** The config keys a reply reads, from its request to its summary. */
import type { Config } from "../base/config.ts";

/** The config keys a turn reads (and its summary, made after it). */
export type TurnConfig = Pick<
  Config,
  | "thinking"
  | "system_prompt"
  | "history_turns"
  | "reply_reserve"
  | "max_tool_rounds"
  | "tool_timeout"
  | "tool_output_limit"
  | "request"
  | "cache_reuse"
  | "compact"
  | "summary_tokens"
>;

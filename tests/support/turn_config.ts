/** The config keys a reply reads, as the tests that build an Assistant or run a reply alone use them. */
import type { TurnConfig } from "../../src/assistant/turn.ts";

/** The defaults of a turn, with a short system prompt. */
export const TURN_CONFIG: TurnConfig = Object.freeze({
  thinking: true,
  system_prompt: "Be helpful.",
  history_turns: 10,
  reply_reserve: 1024,
  max_tool_rounds: 8,
  tool_timeout: 30,
  tool_output_limit: 16384,
  request: {},
  cache_reuse: 256,
  compact: false,
  summary_tokens: 400,
});

/**
 * The stable codes of the protocol's `error` events. Clients match on these,
 * never on the message, which is for people and may be reworded.
 */

/** Codes of the errors that answer a command; the connection stays open. */
export const COMMAND_ERROR_CODES = [
  "bad_command",
  "unknown_command",
  "bad_ref",
  "bad_text",
  "bad_query",
  "bad_id",
  "bad_limit",
  "bad_title",
  "bad_format",
  "bad_private",
  "bad_call",
  "bad_allow",
  "bad_on",
  "bad_file",
  "bad_memory",
  "bad_proposal",
  "no_such_conversation",
  "no_such_file",
  "no_such_memory",
  "no_such_proposal",
  "no_vision",
  "convert_failed",
  "bad_by",
  "meaning_off",
  "embed_failed",
  "no_such_call",
  "nothing_to_retry",
  "line_too_long",
  "command_failed",
  "too_many_clients",
] as const;

/** Codes of the errors that end the reply in flight (`turn: true`). */
export const TURN_ERROR_CODES = [
  "reply_failed",
  "save_failed",
  "shutting_down",
  "llama_unreachable",
  "llama_http_error",
  "llama_error",
  "malformed_stream",
  "malformed_model_list",
  "malformed_answer",
  "stream_closed_early",
  "llama_stalled",
  "no_model_loaded",
  "question_too_long",
  "tool_results_too_long",
] as const;

/** Every code an `error` event may carry. */
export type ErrorCode =
  | (typeof COMMAND_ERROR_CODES)[number]
  | (typeof TURN_ERROR_CODES)[number];

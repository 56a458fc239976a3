/**
 * llama-server's HTTP errors as the daemon reports them, and the one error a
 * reply can recover from: a request longer than the context
 * (400 `exceed_context_size_error`, which names both sizes).
 */
import { AssistantError } from "../base/errors.ts";
import { isRecord } from "../base/is_record.ts";

/** A request llama-server refused for its length: the cause of the AssistantError it becomes. */
export class ContextOverflow extends RangeError {
  /** Tokens of the refused prompt, as llama-server counted them. */
  readonly promptTokens: number;
  /** The context size llama-server holds. */
  readonly nCtx: number;

  /** Records the two sizes of a refusal. */
  constructor(promptTokens: number, nCtx: number) {
    super(
      `Request of ${promptTokens} tokens exceeds the context size of ${nCtx} tokens`,
    );
    this.name = "ContextOverflow";
    this.promptTokens = promptTokens;
    this.nCtx = nCtx;
  }
}

/** The ContextOverflow behind an error, or null when it is another failure. */
export function contextOverflow(error: unknown): ContextOverflow | null {
  if (!(error instanceof AssistantError)) return null;
  return error.cause instanceof ContextOverflow ? error.cause : null;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The message an error body carries, else the status text or the start of the body. */
function httpMessage(response: Response, body: unknown, text: string): string {
  if (isRecord(body)) {
    const error = body.error;
    if (isRecord(error) && typeof error.message === "string") {
      return error.message;
    }
    if (typeof error === "string") return error;
    if (typeof body.message === "string") return body.message;
  }
  if (response.statusText !== "") return response.statusText;
  const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 200);
  return excerpt === "" ? "no message" : excerpt;
}

/** The sizes of a 400 `exceed_context_size_error` body, or null. */
function overflowOf(status: number, body: unknown): ContextOverflow | null {
  if (status !== 400 || !isRecord(body) || !isRecord(body.error)) return null;
  const { type, n_prompt_tokens: prompt, n_ctx: nCtx } = body.error;
  if (type !== "exceed_context_size_error") return null;
  if (!Number.isSafeInteger(prompt) || !Number.isSafeInteger(nCtx)) {
    return null;
  }
  return new ContextOverflow(prompt as number, nCtx as number);
}

/** The AssistantError for an HTTP error answer: `llama-server answered <status>: <message>`. */
export function httpError(
  response: Response,
  text: string,
  path: string,
): AssistantError {
  const body = parsed(text);
  const quoted = httpMessage(response, body, text);
  const cause = overflowOf(response.status, body) ??
    new Error(`HTTP ${response.status} for ${path}`);
  return new AssistantError(
    `llama-server answered ${response.status}: ${quoted}`,
    { quoted, cause, code: "llama_http_error" },
  );
}

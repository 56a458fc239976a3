/**
 * One POST to an OpenAI-compatible audio server (`stt_url`, `tts_url`), with
 * the failures told in a sentence naming the key: unreachable, a status and
 * the server's own message, or a timeout.
 */
import { AssistantError } from "../base/errors.ts";

/** Characters of a server's error message shown. */
const MESSAGE_CHARS = 200;

/** The message in an error body: OpenAI's `{error: {message}}`, a `{message}`, `{detail}`, or the text itself. */
async function bodyMessage(response: Response): Promise<string> {
  let text = "";
  try {
    text = (await response.text()).trim();
  } catch {
    return "";
  }
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const error = body.error as Record<string, unknown> | string | undefined;
    const found = typeof error === "string"
      ? error
      : error?.message ?? body.message ?? body.detail;
    if (typeof found === "string") text = found;
  } catch {
    // Not JSON: the text as it is.
  }
  text = text.replace(/\s+/g, " ");
  return text.length > MESSAGE_CHARS
    ? `${text.slice(0, MESSAGE_CHARS)}…`
    : text;
}

/** What {@link postAudio} needs. */
export interface PostOptions {
  /** The config key that names the server, for messages. */
  key: string;
  /** The server, for messages: "transcription" or "speech". */
  what: string;
  /** The base URL. */
  base: string;
  /** The path appended to it. */
  path: string;
  body: BodyInit;
  headers?: HeadersInit;
  /** Ends the request; the call then rejects with the signal's reason. */
  signal: AbortSignal;
  /** Milliseconds before the request gives up. */
  timeoutMs: number;
  fetch?: typeof fetch;
}

/** POSTs and resolves to the response once its status is 2xx; AssistantError naming the key otherwise. */
export async function postAudio(options: PostOptions): Promise<Response> {
  const { key, what, base, signal } = options;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(`${base}${options.path}`, {
      method: "POST",
      body: options.body,
      ...(options.headers ? { headers: options.headers } : {}),
      signal: AbortSignal.any([signal, timeout]),
    });
  } catch (error) {
    signal.throwIfAborted();
    if (timeout.aborted) {
      throw new AssistantError(
        `${key}: the ${what} server at ${base} did not answer within ${
          options.timeoutMs / 1000
        } s: check it, or change ${key} in config.toml`,
        { cause: error },
      );
    }
    throw new AssistantError(
      `${key}: cannot reach the ${what} server at ${base} (${
        error instanceof Error ? error.message : String(error)
      }): start it, or change ${key} in config.toml`,
      { cause: error },
    );
  }
  if (!response.ok) {
    const message = await bodyMessage(response);
    throw new AssistantError(
      `${key}: the ${what} server at ${base} answered ${response.status}${
        message === "" ? "" : `: ${message}`
      }`,
    );
  }
  return response;
}

/** Reads a response body, turning an abort or a cut connection into the same kinds of error as {@link postAudio}. */
export async function readBody<T>(
  options: Pick<PostOptions, "key" | "what" | "base" | "signal">,
  read: () => Promise<T>,
): Promise<T> {
  try {
    return await read();
  } catch (error) {
    options.signal.throwIfAborted();
    throw new AssistantError(
      `${options.key}: the ${options.what} server at ${options.base} sent a broken answer (${
        error instanceof Error ? error.message : String(error)
      })`,
      { cause: error },
    );
  }
}

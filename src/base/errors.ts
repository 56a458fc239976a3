import type { ErrorCode } from "./error_codes.ts";

export type { ErrorCode } from "./error_codes.ts";

/** Options of an AssistantError. */
export interface AssistantErrorOptions extends ErrorOptions {
  /** Text inside the message quoted from llama-server: it may repeat the turn's words, so logs leave it out. */
  quoted?: string;
  /** The protocol's code for a client that receives it; absent for errors no client sees. */
  code?: ErrorCode;
  /** The message as a log may hold it, where it names what the user gave (a file's name, made with {@link loggedName}). */
  forLog?: string;
}

/** The daemon's one domain error: its message is safe to show to a client. */
export class AssistantError extends Error {
  /** The part of the message quoted from outside, if any. */
  readonly quoted: string | undefined;
  /** The protocol's stable code, when a client may receive it. */
  readonly code: ErrorCode | undefined;
  readonly #forLog: string | undefined;

  /** Creates an error whose message names the value and the fix. */
  constructor(message: string, options?: AssistantErrorOptions) {
    super(message, options);
    this.name = "AssistantError";
    this.quoted = options?.quoted;
    this.code = options?.code;
    this.#forLog = options?.forLog;
  }

  /** The message with the quoted text replaced by its length, and without the names the user gave: what a log may hold. */
  get loggable(): string {
    if (this.#forLog !== undefined) return this.#forLog;
    if (!this.quoted) return this.message;
    const bytes = new TextEncoder().encode(this.quoted).length;
    // The quote ends the message; an earlier match would be our own words.
    const at = this.message.lastIndexOf(this.quoted);
    return this.message.slice(0, at) +
      `[${bytes} bytes quoted from llama-server, not logged]` +
      this.message.slice(at + this.quoted.length);
  }
}

/** A name the user gave (a file's) as an error's `forLog` holds it: its length only, since names can be personal. */
export function loggedName(name: string): string {
  return `(a name of ${name.length} characters)`;
}

/** Errors outside AssistantError whose message was written to quote nothing personal or secret. */
const safeMessages = new WeakSet<Error>();

/** Marks an error whose message quotes nothing personal or secret (a config error's file, line and key), so the log may quote it; returns it. */
export function withSafeMessage<E extends Error>(error: E): E {
  safeMessages.add(error);
  return error;
}

/** Whether an error's message is safe for the log: an AssistantError's (less what it quotes from llama-server), or one marked by {@link withSafeMessage}. */
export function hasSafeMessage(error: Error): boolean {
  return error instanceof AssistantError || safeMessages.has(error);
}

/** Options of an AssistantError. */
export interface AssistantErrorOptions extends ErrorOptions {
  /** Text inside the message quoted from llama-server: it may repeat the turn's words, so logs leave it out. */
  quoted?: string;
}

/** The daemon's one domain error: its message is safe to show to a client. */
export class AssistantError extends Error {
  /** The part of the message quoted from outside, if any. */
  readonly quoted: string | undefined;

  /** Creates an error whose message names the value and the fix. */
  constructor(message: string, options?: AssistantErrorOptions) {
    super(message, options);
    this.name = "AssistantError";
    this.quoted = options?.quoted;
  }

  /** The message with the quoted text replaced by its length: what a log may hold. */
  get loggable(): string {
    if (!this.quoted) return this.message;
    const bytes = new TextEncoder().encode(this.quoted).length;
    return this.message.replace(
      this.quoted,
      `[${bytes} bytes quoted from llama-server, not logged]`,
    );
  }
}

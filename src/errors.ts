/** The daemon's one domain error: its message is safe to show to a client. */
export class AssistantError extends Error {
  /** Creates an error whose message names the value and the fix. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "AssistantError";
  }
}

/** The one rule for text from the daemon (the model's, a tool's, llama-server's) written to a terminal. */

// deno-lint-ignore no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** Removes control characters (escape sequences included) but newlines and tabs: text from the model never drives the terminal. */
export function sanitize(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(CONTROLS, "");
}

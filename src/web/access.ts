/**
 * Who may use the browser canvas: a request that names the random token in
 * its path, addresses the canvas by its own `Host` and, where it carries an
 * `Origin`, comes from the canvas's own page. Anything else is refused, so
 * no other web page, DNS-rebound name or local user without the token
 * drives the assistant. Pure checks, no I/O.
 */

/** Bytes of randomness in a token: 256 bits. */
const TOKEN_BYTES = 32;

/** A fresh random token, URL-safe base64 without padding (43 characters). */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(TOKEN_BYTES));
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(
    /=+$/,
    "",
  );
}

/** Compares a given token with the real one in time that does not depend on where they differ (the length is public). */
export function sameSecret(given: string, expected: string): boolean {
  if (given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) {
    diff |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  }
  return diff === 0;
}

/** What the canvas accepts: its token and its own address. */
export interface AccessRules {
  token: string;
  /** `127.0.0.1:PORT`: the only `Host` accepted. */
  host: string;
}

/** Why a request was refused; logged as a word, never with the request. */
export type Refusal = "host" | "origin" | "token";

/** The outcome of a check: the path after the token, or why it was refused. */
export type Access =
  | { ok: true; path: string; websocket: boolean }
  | { ok: false; refusal: Refusal };

/** The canvas's own origin for the rules: `http://127.0.0.1:PORT`. */
export function ownOrigin(rules: AccessRules): string {
  return `http://${rules.host}`;
}

/**
 * Checks one request. `path` is what follows `/TOKEN` (`""` for the bare
 * token, `/` for the page); `websocket` is true for an upgrade, which must
 * carry the canvas's own `Origin` (browsers always send one there).
 */
export function checkAccess(request: Request, rules: AccessRules): Access {
  const headers = request.headers;
  if (headers.get("host") !== rules.host) return { ok: false, refusal: "host" };
  const origin = headers.get("origin");
  const websocket = headers.get("upgrade")?.toLowerCase() === "websocket";
  if (origin !== null && origin !== ownOrigin(rules)) {
    return { ok: false, refusal: "origin" };
  }
  if (websocket && origin === null) return { ok: false, refusal: "origin" };
  const pathname = new URL(request.url).pathname;
  const end = pathname.indexOf("/", 1);
  const first = end === -1 ? pathname.slice(1) : pathname.slice(1, end);
  if (!sameSecret(first, rules.token)) return { ok: false, refusal: "token" };
  return { ok: true, path: end === -1 ? "" : pathname.slice(end), websocket };
}

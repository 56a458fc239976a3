/**
 * The JSON-lines protocol: inbound command validation and outbound event
 * shapes. No I/O here, so every rule is testable alone.
 */

/** Longest accepted inbound line, in bytes, without its newline. */
export const MAX_LINE_BYTES = 1024 * 1024;

/** Default and ceiling for `search` and `list` limits. */
export const DEFAULT_SEARCH_LIMIT = 50;
/** Conversations a `list` without a limit (and a `delete`) answers with: the newest ones. */
export const DEFAULT_LIST_LIMIT = 1000;
/** Largest `limit` accepted by `search` and `list`. */
export const MAX_LIMIT = 10_000;

/** Longest `ref` string, in characters. */
export const MAX_REF_CHARS = 128;
/** Longest conversation title, in characters. */
export const MAX_TITLE_CHARS = 200;

/** A client's reference for a command, echoed on its answers and its turn's events. */
export type Ref = string | number;

/** How `export` writes a conversation. */
export type ExportFormat = "markdown" | "json";

/** A validated inbound command, with the client's `ref` when it sent one. */
export type Command =
  & (
    | { type: "ask"; text: string }
    | { type: "retry" }
    | { type: "edit"; text: string }
    | { type: "stop" }
    | { type: "new"; private?: true }
    | { type: "list"; limit?: number }
    | { type: "open"; id: number }
    | { type: "search"; q: string; limit: number }
    | { type: "delete"; id: number }
    | { type: "rename"; id: number; title: string }
    | { type: "export"; id: number; format: ExportFormat }
    | { type: "ping" }
    | { type: "approve"; call: string; allow: boolean }
  )
  & { ref?: Ref };

/** One turn as clients see it. */
export interface TurnView {
  user: string;
  reply: string;
  tools: string[];
}

/** A tool call waiting for the user's approval. */
export interface ConfirmView {
  /** The id an `approve` names. */
  call: string;
  tool: string;
  /** The call's arguments as the model sent them. */
  args: Record<string, unknown>;
}

/** The reply in flight, as a newly connected client needs it. */
export interface PendingView {
  user: string;
  reply: string;
  think: string;
  tools: string[];
  /** A `retry` or `edit`: the last turn goes once this one finishes. */
  replaces?: true;
  /** The call waiting for approval; absent when none waits. */
  confirm?: ConfirmView;
}

/** The reply in flight as `hello` shows it: `id` is its conversation, null for the unsaved current one it will create. */
export interface HelloPending extends PendingView {
  id: number | null;
}

/** What cut a reply short: the context filled up, or `max_tokens` of `[request]` ran out. */
export type Truncation = "context" | "max_tokens";

/** Daemon activity shown by clients. */
export type State = "idle" | "thinking" | "tool" | "confirm";

/** What llama-server can do, as the daemon last found it (`unknown` before the first probe). */
export type BackendState = "unknown" | "up" | "loading" | "no_model" | "down";

/** The `backend` event without its type, and `hello.backend`. */
export interface BackendView {
  state: BackendState;
  url: string;
  /** The model in use when `up`, else null. */
  model: string | null;
  /** Its context size when `up` and known, else null. */
  ctx_max: number | null;
  /** Why it is not `up`, in words; null when `up`. */
  message: string | null;
}

/** Every outbound event. */
export type Event =
  | {
    type: "hello";
    state: State;
    tool?: string;
    model: string | null;
    ctx_used: number | null;
    ctx_max: number | null;
    ctx_sent: number | null;
    ctx_total: number | null;
    backend?: BackendView;
    id: number | null;
    turns: TurnView[];
    pending: HelloPending | null;
    /** The tool call waiting for approval, whichever conversation its reply belongs to. */
    confirm?: ConfirmView;
    private?: true;
  }
  | { type: "state"; state: State; tool?: string }
  | { type: "user"; text: string; replaces?: true; ref?: Ref }
  | { type: "think"; delta: string }
  | { type: "token"; delta: string }
  | { type: "tool"; name: string; done: boolean }
  | ({ type: "confirm" } & ConfirmView)
  | { type: "approved"; call: string; allow: boolean; ref?: Ref }
  | {
    type: "done";
    id: number | null;
    stopped: boolean;
    truncated?: true;
    truncated_by?: Truncation;
    replaces?: true;
    ref?: Ref;
  }
  | { type: "error"; message: string; turn?: true; ref?: Ref }
  | {
    type: "ctx";
    used: number;
    max: number | null;
    sent: number;
    total: number;
  }
  | {
    type: "conversations";
    items: { id: number; title: string; updated: number }[];
    ref?: Ref;
  }
  | {
    type: "conversation";
    id: number | null;
    turns: TurnView[];
    private?: true;
    ref?: Ref;
  }
  | {
    type: "results";
    items: {
      id: number;
      title: string;
      snippet: string;
      /** The snippet without markers. */
      text?: string;
      /** The matches as `[start, end)` UTF-16 offsets into `text`. */
      marks?: [number, number][];
    }[];
    ref?: Ref;
  }
  | { type: "renamed"; id: number; title: string; ref?: Ref }
  | {
    type: "export";
    id: number;
    format: ExportFormat;
    text: string;
    ref?: Ref;
  }
  | {
    type: "pong";
    pid: number;
    uptime: number;
    version: string;
    ref?: Ref;
  }
  | ({ type: "backend" } & BackendView);

/** `{ref}` when there is one, else nothing: spread into an event, never `ref: undefined`. */
export function refField(ref: Ref | undefined): { ref?: Ref } {
  return ref === undefined ? {} : { ref };
}

/** Result of validating one parsed line: a command, an error answer, or nothing to do. */
export type Parsed =
  | { ok: true; command: Command }
  | { ok: false; message: string; ref?: Ref }
  | { ok: true; command: null };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function validId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

function validLimit(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

function validRef(value: unknown): value is Ref {
  if (typeof value === "number") return Number.isSafeInteger(value);
  if (typeof value !== "string") return false;
  // Characters, not UTF-16 units: an emoji counts once.
  if (value.length <= MAX_REF_CHARS) return true;
  if (value.length > 2 * MAX_REF_CHARS) return false;
  let count = 0;
  for (const _ of value) if (++count > MAX_REF_CHARS) return false;
  return true;
}

/** A title as stored: whitespace runs made single spaces, lone surrogates replaced; null when empty or too long. */
export function cleanTitle(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const title = value.trim().split(/\s+/).join(" ").toWellFormed();
  const chars = Array.from(title).length;
  return chars >= 1 && chars <= MAX_TITLE_CHARS ? title : null;
}

type Fields = Record<string, unknown>;
type Body = { ok: true; command: Command | null } | {
  ok: false;
  message: string;
};

const fail = (message: string): Body => ({ ok: false, message });
const run = (command: Command | null): Body => ({ ok: true, command });

/** Text as the store keeps it (a lone surrogate becomes U+FFFD); null for blank text, which is ignored. */
function question(value: Fields, make: (text: string) => Command): Body {
  if (typeof value.text !== "string") return fail("bad text");
  if (value.text.trim() === "") return run(null);
  return run(make(value.text.toWellFormed()));
}

/** Each command's fields, checked; the error strings are the protocol's. */
const SHAPES: Record<string, (value: Fields) => Body> = {
  ask: (value) => question(value, (text) => ({ type: "ask", text })),
  edit: (value) => question(value, (text) => ({ type: "edit", text })),
  open: (value) =>
    validId(value.id) ? run({ type: "open", id: value.id }) : fail("bad id"),
  delete: (value) =>
    validId(value.id) ? run({ type: "delete", id: value.id }) : fail("bad id"),
  search: (value) => {
    if (typeof value.q !== "string") return fail("bad query");
    if (value.limit !== undefined && !validLimit(value.limit)) {
      return fail("bad limit");
    }
    const limit = Math.min(value.limit ?? DEFAULT_SEARCH_LIMIT, MAX_LIMIT);
    return run({ type: "search", q: value.q.toWellFormed(), limit });
  },
  list: (value) => {
    if (value.limit === undefined) return run({ type: "list" });
    if (!validLimit(value.limit)) return fail("bad limit");
    return run({ type: "list", limit: Math.min(value.limit, MAX_LIMIT) });
  },
  new: (value) => {
    if (value.private === undefined || value.private === false) {
      return run({ type: "new" });
    }
    if (value.private !== true) return fail("bad private");
    return run({ type: "new", private: true });
  },
  rename: (value) => {
    if (!validId(value.id)) return fail("bad id");
    const title = cleanTitle(value.title);
    if (title === null) return fail("bad title");
    return run({ type: "rename", id: value.id, title });
  },
  export: (value) => {
    if (!validId(value.id)) return fail("bad id");
    const format = value.format ?? "markdown";
    if (format !== "markdown" && format !== "json") return fail("bad format");
    return run({ type: "export", id: value.id, format });
  },
  approve: (value) => {
    if (typeof value.call !== "string" || value.call === "") {
      return fail("bad call");
    }
    if (typeof value.allow !== "boolean") return fail("bad allow");
    return run({ type: "approve", call: value.call, allow: value.allow });
  },
  retry: () => run({ type: "retry" }),
  stop: () => run({ type: "stop" }),
  ping: () => run({ type: "ping" }),
};

/** Validates a parsed JSON value as a command; the error strings are the protocol's. */
export function parseCommand(value: unknown): Parsed {
  if (!isRecord(value)) return { ok: false, message: "bad command" };
  // A wrong ref is refused first: no answer could carry it.
  if (value.ref !== undefined && !validRef(value.ref)) {
    return { ok: false, message: "bad ref" };
  }
  const ref = refField(value.ref as Ref | undefined);
  const type = value.type;
  if (typeof type !== "string") {
    return { ok: false, message: "bad command", ...ref };
  }
  // Own keys only: `constructor` or `__proto__` name no command.
  const shape = Object.hasOwn(SHAPES, type) ? SHAPES[type] : undefined;
  if (!shape) {
    // Cut by code point so the echo never splits a character in two.
    const shown = Array.from(type).slice(0, 64).join("");
    return { ok: false, message: `unknown command ${shown}`, ...ref };
  }
  const body = shape(value);
  if (!body.ok) return { ...body, ...ref };
  if (body.command === null) return { ok: true, command: null };
  return { ok: true, command: { ...body.command, ...ref } };
}

/** Parses one inbound line (already split, without its newline). */
export function parseLine(line: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ok: false, message: "bad command" };
  }
  return parseCommand(value);
}

const encoder = new TextEncoder();

/** Encodes an event as one JSON line. */
export function encodeEvent(event: Event): Uint8Array {
  return encoder.encode(JSON.stringify(event) + "\n");
}

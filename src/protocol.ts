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

/** A validated inbound command. */
export type Command =
  | { type: "ask"; text: string }
  | { type: "stop" }
  | { type: "new" }
  | { type: "list"; limit?: number }
  | { type: "open"; id: number }
  | { type: "search"; q: string; limit: number }
  | { type: "delete"; id: number }
  | { type: "ping" }
  | { type: "approve"; call: string; allow: boolean };

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
  /** The call waiting for approval; absent when none waits. */
  confirm?: ConfirmView;
}

/** Daemon activity shown by clients. */
export type State = "idle" | "thinking" | "tool" | "confirm";

/** Every outbound event. */
export type Event =
  | {
    type: "hello";
    state: State;
    tool?: string;
    model: string | null;
    ctx_used: number | null;
    ctx_max: number | null;
    id: number | null;
    turns: TurnView[];
    pending: PendingView | null;
  }
  | { type: "state"; state: State; tool?: string }
  | { type: "user"; text: string }
  | { type: "think"; delta: string }
  | { type: "token"; delta: string }
  | { type: "tool"; name: string; done: boolean }
  | ({ type: "confirm" } & ConfirmView)
  | { type: "approved"; call: string; allow: boolean }
  | { type: "done"; id: number | null; stopped: boolean }
  | { type: "error"; message: string; turn?: true }
  | { type: "ctx"; used: number; max: number | null }
  | {
    type: "conversations";
    items: { id: number; title: string; updated: number }[];
  }
  | { type: "conversation"; id: number | null; turns: TurnView[] }
  | { type: "results"; items: { id: number; title: string; snippet: string }[] }
  | { type: "pong"; pid: number; uptime: number; version: string };

/** Result of validating one parsed line: a command, an error answer, or nothing to do. */
export type Parsed =
  | { ok: true; command: Command }
  | { ok: false; message: string }
  | { ok: true; command: null };

const KNOWN = new Set([
  "ask",
  "stop",
  "new",
  "list",
  "open",
  "search",
  "delete",
  "ping",
  "approve",
]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function validId(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

function validLimit(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

/** Validates a parsed JSON value as a command; the error strings are the protocol's. */
export function parseCommand(value: unknown): Parsed {
  if (!isRecord(value) || typeof value.type !== "string") {
    return { ok: false, message: "bad command" };
  }
  const type = value.type;
  if (!KNOWN.has(type)) {
    // Cut by code point so the echo never splits a character in two.
    const shown = Array.from(type).slice(0, 64).join("");
    return { ok: false, message: `unknown command ${shown}` };
  }
  switch (type) {
    case "ask": {
      if (typeof value.text !== "string") {
        return { ok: false, message: "bad text" };
      }
      if (value.text.trim() === "") return { ok: true, command: null };
      // SQLite stores a lone surrogate as U+FFFD: echo what will be kept.
      return {
        ok: true,
        command: { type: "ask", text: value.text.toWellFormed() },
      };
    }
    case "open":
    case "delete": {
      if (!validId(value.id)) return { ok: false, message: "bad id" };
      return { ok: true, command: { type, id: value.id } };
    }
    case "search": {
      if (typeof value.q !== "string") {
        return { ok: false, message: "bad query" };
      }
      if (value.limit !== undefined && !validLimit(value.limit)) {
        return { ok: false, message: "bad limit" };
      }
      const limit = Math.min(value.limit ?? DEFAULT_SEARCH_LIMIT, MAX_LIMIT);
      return {
        ok: true,
        command: { type: "search", q: value.q.toWellFormed(), limit },
      };
    }
    case "list": {
      if (value.limit === undefined) {
        return { ok: true, command: { type: "list" } };
      }
      if (!validLimit(value.limit)) return { ok: false, message: "bad limit" };
      return {
        ok: true,
        command: { type: "list", limit: Math.min(value.limit, MAX_LIMIT) },
      };
    }
    case "approve": {
      if (typeof value.call !== "string" || value.call === "") {
        return { ok: false, message: "bad call" };
      }
      if (typeof value.allow !== "boolean") {
        return { ok: false, message: "bad allow" };
      }
      return {
        ok: true,
        command: { type: "approve", call: value.call, allow: value.allow },
      };
    }
    default:
      return { ok: true, command: { type: type as "stop" | "new" | "ping" } };
  }
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

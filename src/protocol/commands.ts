/**
 * The inbound half of the protocol: each command's shape, checked, and the
 * error (code and message) a malformed one is answered with. No I/O here,
 * so every rule is testable alone.
 */
import type { ErrorCode } from "../base/error_codes.ts";
import {
  type ExportFormat,
  type Ref,
  refField,
  type SearchBy,
} from "./events.ts";
import { isRecord } from "../base/is_record.ts";

/** Longest accepted inbound line, in bytes, without its newline. */
export const MAX_LINE_BYTES = 1024 * 1024;

/** Default and ceiling for `search` and `list` limits. */
export const DEFAULT_SEARCH_LIMIT = 50;
/** Conversations a `list` without a limit (and a `delete`) answers with: the newest ones. */
export const DEFAULT_LIST_LIMIT = 1000;
/** Largest `limit` accepted by `search` and `list`. */
export const MAX_LIMIT = 10_000;

/** Most files one question may carry. */
export const MAX_FILES = 8;
/** Longest file name, in characters as JavaScript counts them (UTF-16 units). */
export const MAX_FILE_NAME = 255;

/** Longest memory, in characters once trimmed. */
export const MAX_MEMORY_CHARS = 500;

/** Longest `ref` string, in characters. */
export const MAX_REF_CHARS = 128;
/** Longest conversation title, in characters. */
export const MAX_TITLE_CHARS = 200;

/** A file sent with a question: its name (shown, never a path), its type as the client says, its bytes. */
export interface Attachment {
  name: string;
  mime: string;
  data: Uint8Array;
}

/** A validated inbound command, with the client's `ref` when it sent one. */
export type Command =
  & (
    | { type: "ask"; text: string; files?: Attachment[] }
    | { type: "retry" }
    | { type: "edit"; text: string; files?: Attachment[] }
    | { type: "file"; conversation: number; turn: number; index: number }
    | { type: "stop" }
    | { type: "new"; private?: true }
    | { type: "list"; limit?: number }
    | { type: "open"; id: number }
    | { type: "search"; q: string; limit: number; by?: SearchBy }
    | { type: "delete"; id: number }
    | { type: "rename"; id: number; title: string }
    | { type: "export"; id: number; format: ExportFormat }
    | { type: "ping" }
    | { type: "approve"; call: string; allow: boolean }
    | { type: "listen"; on: boolean }
    | { type: "memories" }
    | { type: "remember"; text: string; id?: number }
    | { type: "forget"; id: number }
    | { type: "accept"; proposal: string; text?: string }
    | { type: "refuse"; proposal: string }
    | { type: "export_memories"; format: ExportFormat }
  )
  & { ref?: Ref };

/** A command refused: what the `error` answer carries. */
export interface Refusal {
  ok: false;
  code: ErrorCode;
  message: string;
  ref?: Ref;
}

/** Result of validating one parsed line: a command, an error answer, or nothing to do. */
export type Parsed =
  | { ok: true; command: Command }
  | Refusal
  | { ok: true; command: null };

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
type Body = { ok: true; command: Command | null } | Refusal;

/** The codes whose message is the code in words (`bad_id` is `bad id`). */
type PlainCode = Extract<ErrorCode, `bad_${string}`>;

const fail = (code: PlainCode): Body => ({
  ok: false,
  code,
  message: code.replace("_", " "),
});
const run = (command: Command | null): Body => ({ ok: true, command });

/** A refusal of `files`, saying what is wrong with which one. */
function badFile(message: string): Refusal {
  return { ok: false, code: "bad_file", message };
}

/** The files of an `ask` or `edit`, decoded; a refusal naming the first problem. */
function attachments(value: unknown): Attachment[] | Refusal {
  if (!Array.isArray(value)) {
    return badFile("files must be an array of {name, mime, data}");
  }
  if (value.length > MAX_FILES) {
    return badFile(
      `at most ${MAX_FILES} files go with one question, not ${value.length}`,
    );
  }
  const files: Attachment[] = [];
  for (const [i, file] of value.entries()) {
    const at = `file ${i + 1}`;
    if (!isRecord(file)) {
      return badFile(`${at} is not an object {name, mime, data}`);
    }
    const { name, mime, data } = file;
    if (
      typeof name !== "string" || name.length < 1 ||
      name.length > MAX_FILE_NAME
    ) {
      return badFile(
        `${at} needs a name of 1 to ${MAX_FILE_NAME} characters`,
      );
    }
    const shown = name.toWellFormed();
    if (typeof mime !== "string" || mime.trim() === "") {
      return badFile(`${shown}: mime must be a non-empty string`);
    }
    if (typeof data !== "string") {
      return badFile(`${shown}: data must be its bytes in base64`);
    }
    let bytes: Uint8Array;
    try {
      bytes = Uint8Array.fromBase64(data);
    } catch {
      return badFile(`${shown}: data is not valid base64`);
    }
    if (bytes.length === 0) return badFile(`${shown} is empty`);
    files.push({ name: shown, mime: mime.trim().toLowerCase(), data: bytes });
  }
  return files;
}

/**
 * Text as the store keeps it (a lone surrogate becomes U+FFFD), with its
 * files; null for blank text without files, which is ignored.
 */
function question(
  value: Fields,
  make: (text: string, files: Attachment[] | undefined) => Command,
): Body {
  if (typeof value.text !== "string") return fail("bad_text");
  let files: Attachment[] | undefined;
  if (value.files !== undefined) {
    const read = attachments(value.files);
    if (!Array.isArray(read)) return read;
    files = read;
  }
  // Files are a question of their own; an edit's `files: []` drops them.
  if (value.text.trim() === "" && (files?.length ?? 0) === 0) return run(null);
  return run(make(value.text.toWellFormed(), files));
}

/** A memory's text as kept: trimmed, 1 to 500 characters; null when it is not. */
export function cleanMemory(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const text = value.trim().toWellFormed();
  const chars = Array.from(text).length;
  return chars >= 1 && chars <= MAX_MEMORY_CHARS ? text : null;
}

/** The `format` of an export: absent is Markdown, `null` is no format. */
function exportFormat(value: unknown): ExportFormat | null {
  const format = value === undefined ? "markdown" : value;
  return format === "markdown" || format === "json" ? format : null;
}

/** A non-negative safe integer: a place in a list. */
function validIndex(value: unknown): value is number {
  return validId(value) && value >= 0;
}

/** Each command's fields, checked; the error codes and messages are the protocol's. */
const SHAPES: Record<string, (value: Fields) => Body> = {
  ask: (value) =>
    question(value, (text, files) => ({
      type: "ask",
      text,
      ...(files?.length ? { files } : {}),
    })),
  edit: (value) =>
    question(value, (text, files) => ({
      type: "edit",
      text,
      ...(files ? { files } : {}),
    })),
  file: (value) =>
    validId(value.conversation) && validIndex(value.turn) &&
      validIndex(value.index)
      ? run({
        type: "file",
        conversation: value.conversation,
        turn: value.turn,
        index: value.index,
      })
      : fail("bad_id"),
  open: (value) =>
    validId(value.id) ? run({ type: "open", id: value.id }) : fail("bad_id"),
  delete: (value) =>
    validId(value.id) ? run({ type: "delete", id: value.id }) : fail("bad_id"),
  search: (value) => {
    if (typeof value.q !== "string") return fail("bad_query");
    if (value.limit !== undefined && !validLimit(value.limit)) {
      return fail("bad_limit");
    }
    const limit = Math.min(value.limit ?? DEFAULT_SEARCH_LIMIT, MAX_LIMIT);
    const by = value.by;
    if (
      by !== undefined && by !== "words" && by !== "meaning" && by !== "both"
    ) {
      return fail("bad_by");
    }
    return run({
      type: "search",
      q: value.q.toWellFormed(),
      limit,
      ...(by === undefined ? {} : { by }),
    });
  },
  list: (value) => {
    if (value.limit === undefined) return run({ type: "list" });
    if (!validLimit(value.limit)) return fail("bad_limit");
    return run({ type: "list", limit: Math.min(value.limit, MAX_LIMIT) });
  },
  new: (value) => {
    if (value.private === undefined || value.private === false) {
      return run({ type: "new" });
    }
    if (value.private !== true) return fail("bad_private");
    return run({ type: "new", private: true });
  },
  rename: (value) => {
    if (!validId(value.id)) return fail("bad_id");
    const title = cleanTitle(value.title);
    if (title === null) return fail("bad_title");
    return run({ type: "rename", id: value.id, title });
  },
  export: (value) => {
    if (!validId(value.id)) return fail("bad_id");
    const format = exportFormat(value.format);
    if (format === null) return fail("bad_format");
    return run({ type: "export", id: value.id, format });
  },
  memories: () => run({ type: "memories" }),
  remember: (value) => {
    if (value.id !== undefined && !validId(value.id)) return fail("bad_id");
    const text = cleanMemory(value.text);
    if (text === null) return fail("bad_memory");
    return run({
      type: "remember",
      text,
      ...(value.id === undefined ? {} : { id: value.id as number }),
    });
  },
  forget: (value) =>
    validId(value.id) ? run({ type: "forget", id: value.id }) : fail("bad_id"),
  accept: (value) => {
    if (typeof value.proposal !== "string" || value.proposal === "") {
      return fail("bad_proposal");
    }
    if (value.text === undefined) {
      return run({ type: "accept", proposal: value.proposal });
    }
    const text = cleanMemory(value.text);
    if (text === null) return fail("bad_memory");
    return run({ type: "accept", proposal: value.proposal, text });
  },
  refuse: (value) =>
    typeof value.proposal === "string" && value.proposal !== ""
      ? run({ type: "refuse", proposal: value.proposal })
      : fail("bad_proposal"),
  export_memories: (value) => {
    const format = exportFormat(value.format);
    return format === null
      ? fail("bad_format")
      : run({ type: "export_memories", format });
  },
  approve: (value) => {
    if (typeof value.call !== "string" || value.call === "") {
      return fail("bad_call");
    }
    if (typeof value.allow !== "boolean") return fail("bad_allow");
    return run({ type: "approve", call: value.call, allow: value.allow });
  },
  listen: (value) =>
    typeof value.on === "boolean"
      ? run({ type: "listen", on: value.on })
      : fail("bad_on"),
  retry: () => run({ type: "retry" }),
  stop: () => run({ type: "stop" }),
  ping: () => run({ type: "ping" }),
};

/** The answer to a line that is no command: not UTF-8, not JSON, not an object with a string `type`. */
export const BAD_COMMAND: Readonly<Refusal> = {
  ok: false,
  code: "bad_command",
  message: 'bad command: a JSON object with a string "type" per line',
};

/** The answer to a line over MAX_LINE_BYTES. */
export const LINE_TOO_LONG: Readonly<Refusal> = {
  ok: false,
  code: "line_too_long",
  message: "line too long",
};

/** Validates a parsed JSON value as a command; the error codes and messages are the protocol's. */
export function parseCommand(value: unknown): Parsed {
  if (!isRecord(value)) return { ...BAD_COMMAND };
  // A wrong ref is refused first: no answer could carry it.
  if (value.ref !== undefined && !validRef(value.ref)) {
    return { ok: false, code: "bad_ref", message: "bad ref" };
  }
  const ref = refField(value.ref as Ref | undefined);
  const type = value.type;
  if (typeof type !== "string") return { ...BAD_COMMAND, ...ref };
  // Own keys only: `constructor` or `__proto__` name no command.
  const shape = Object.hasOwn(SHAPES, type) ? SHAPES[type] : undefined;
  if (!shape) {
    // Cut by code point so the echo never splits a character in two.
    const shown = Array.from(type).slice(0, 64).join("");
    return {
      ok: false,
      code: "unknown_command",
      message: `unknown command ${shown}`,
      ...ref,
    };
  }
  const body = shape(value);
  if (!body.ok) return { ...body, ...ref };
  if (body.command === null) return { ok: true, command: null };
  return { ok: true, command: { ...body.command, ...ref } };
}

/** Parses one inbound line (already split and decoded, without its newline). */
export function parseLine(line: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { ...BAD_COMMAND };
  }
  return parseCommand(value);
}

// @ts-check
/**
 * The pieces the page's model is made of: the shapes it keeps and the
 * checks that turn what the daemon sent into them. No DOM here, so a test
 * run outside a browser can use it.
 */
import { filesOf } from "./files_model.js";

/**
 * An event as the daemon sends it: the protocol's own `Event`, so a field
 * the daemon never sends is an error here too. It is parsed but unchecked,
 * so each field is still checked where it is read: an older daemon may send
 * less.
 * @typedef {import("../src/protocol/events.ts").Event} WireEvent
 */
/**
 * The event of one type.
 * @template {WireEvent["type"]} T
 * @typedef {Extract<WireEvent, {type: T}>} EventOf
 */
/** @typedef {{name: string, done?: boolean, allowed?: boolean}} ToolMark */
/**
 * What llama-server reported for a turn (`done.timings`), summed over the
 * turn's requests.
 * @typedef {import("../src/protocol/events.ts").Timings} Timings
 */
/** @typedef {import("../src/protocol/events.ts").FileView} FileView */
/** @typedef {import("./attachments.js").Attachment} Attachment */
/**
 * A turn shown in the conversation. `truncatedBy` says what cut a
 * truncated reply short (`context` or `max_tokens`) when the daemon says;
 * `code` is a failed turn's error code. `files` are the question's (absent
 * when none); `sources` the data URLs of the pictures this page sent with
 * it, and `resend` its files, kept on a turn the daemon did not keep so
 * that Ask again sends them again.
 * @typedef {{user: string, reply: string, think: string, tools: ToolMark[],
 *   status: null | "stopped" | "truncated" | "error", error?: string,
 *   code?: string, truncatedBy?: string, timings?: Timings,
 *   files?: FileView[], sources?: (string | null)[],
 *   resend?: Attachment[]}} Turn
 */
/**
 * The reply in flight. `key` is the conversation it belongs to as the page
 * tells them apart; `id` its number when known (null for one its `done`
 * will create). `files`, `sources` and `resend` as a Turn's.
 * @typedef {{key: string, id: number | null, user: string, reply: string,
 *   think: string, tools: ToolMark[], replaces: boolean,
 *   files?: FileView[], sources?: (string | null)[],
 *   resend?: Attachment[]}} Pending
 */
/** @typedef {import("../src/protocol/events.ts").SummaryView} Summary */
/**
 * The conversation shown: `key` tells apart unsaved ones.
 * @typedef {{key: string, id: number | null, private: boolean, turns: Turn[],
 *   summary: Summary | null}} Shown
 */
/**
 * The context meter of one conversation, as its last reply left it.
 * @typedef {{used: number | null, max: number | null, sent: number | null,
 *   total: number | null, summarized: number | null}} Ctx
 */
/**
 * llama-server as the daemon last found it.
 * @typedef {{state: string, url: string | null, model: string | null,
 *   ctx_max: number | null, message: string | null}} Backend
 */
/** @typedef {import("../src/protocol/events.ts").ConfirmView} Confirm */
/** @typedef {import("../src/protocol/events.ts").ConversationItem} Listed */
/**
 * A search result: `marks` are `[start, end]` UTF-16 offsets of the matches
 * in `text`; without them, `snippet` marks its matches with `**`.
 * @typedef {import("../src/protocol/events.ts").SearchHit} Hit
 */
/** @typedef {{text: string, kind: "info" | "error"}} Notice */

/** Whether the daemon keeps this turn: a stopped or failed one is only shown. */
export function isStored(/** @type {Turn} */ turn) {
  return turn.status !== "stopped" && turn.status !== "error";
}

/**
 * The reply in flight: what `user`, `think`, `token` and `tool` built so far.
 * @param {string} key
 * @param {number | null} id
 * @param {string} user
 * @param {boolean} replaces
 * @returns {Pending}
 */
export function newPending(key, id, user, replaces) {
  return { key, id, user, reply: "", think: "", tools: [], replaces };
}

/** Tool names as the daemon lists them, each a finished mark. */
export function toolMarks(/** @type {unknown} */ tools) {
  return (Array.isArray(tools) ? tools : []).map(
    /** @returns {ToolMark} */ (name) => ({ name: String(name), done: true }),
  );
}

/**
 * A stored turn from `hello.turns` or `conversation.turns`.
 * @param {import("../src/protocol/events.ts").TurnView} turn
 * @returns {Turn}
 */
export function storedTurn(turn) {
  const files = filesOf(turn?.files);
  return {
    user: String(turn?.user ?? ""),
    reply: String(turn?.reply ?? ""),
    think: "",
    tools: toolMarks(turn?.tools),
    status: null,
    ...(files.length > 0 ? { files } : {}),
  };
}

/**
 * llama-server's state from a `backend` event.
 * @param {EventOf<"backend">} event
 * @returns {Backend}
 */
export function backendOf(event) {
  return {
    state: String(event.state),
    url: event.url ?? null,
    model: event.model ?? null,
    ctx_max: numberOrNull(event.ctx_max),
    message: event.message ?? null,
  };
}

/** A finite number, else null. */
export function numberOrNull(/** @type {unknown} */ value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/**
 * `done.timings` when it has every figure, else null.
 * @param {unknown} value
 * @returns {Timings | null}
 */
export function timingsOf(value) {
  if (value === null || typeof value !== "object") return null;
  const record = /** @type {Record<string, unknown>} */ (value);
  const figure = (/** @type {keyof Timings} */ field) => {
    const n = numberOrNull(record[field]);
    return n === null || n < 0 ? null : n;
  };
  const timings = {
    prompt_n: figure("prompt_n"),
    cache_n: figure("cache_n"),
    predicted_n: figure("predicted_n"),
    prompt_ms: figure("prompt_ms"),
    predicted_ms: figure("predicted_ms"),
  };
  return Object.values(timings).every((n) => n !== null)
    ? /** @type {Timings} */ (timings)
    : null;
}

/**
 * A conversation's summary (`conversation.summary`, the `summary` event),
 * or null when it has none.
 * @param {unknown} value
 * @returns {Summary | null}
 */
export function summaryOf(value) {
  if (value === null || typeof value !== "object") return null;
  const { text, turns } = /** @type {Record<string, unknown>} */ (value);
  if (typeof text !== "string" || text.trim() === "") return null;
  const covered = numberOrNull(turns);
  return { text, turns: covered === null ? 0 : Math.max(0, covered) };
}

/**
 * A search result as the page draws it; `marks` kept only when each lies
 * within `text`, in order and apart.
 * @param {Hit} item
 * @returns {Hit}
 */
export function hitOf(item) {
  /** @type {Hit} */
  const hit = {
    id: Number(item?.id),
    title: String(item?.title ?? ""),
    snippet: String(item?.snippet ?? ""),
  };
  // A match inside a file would read as the conversation's own words.
  if (typeof item?.file === "string") hit.file = item.file;
  const by = item?.by;
  if (by === "words" || by === "meaning" || by === "both") hit.by = by;
  const text = item?.text;
  const marks = item?.marks;
  if (typeof text !== "string" || !Array.isArray(marks)) return hit;
  /** @type {[number, number][]} */
  const kept = [];
  let at = 0;
  for (const mark of marks) {
    if (!Array.isArray(mark)) return hit;
    const [start, end] = mark;
    if (
      !Number.isInteger(start) || !Number.isInteger(end) || start < at ||
      end <= start || end > text.length
    ) {
      return hit;
    }
    kept.push([start, end]);
    at = end;
  }
  return { ...hit, text, marks: kept };
}

/**
 * Whether a value is a tool call waiting for approval.
 * @param {unknown} value
 * @returns {value is Confirm}
 */
function isConfirm(value) {
  return value !== null && typeof value === "object" &&
    /** @type {{call?: unknown}} */ (value).call !== undefined;
}

/**
 * A `confirm` event or hello field as the model keeps it.
 * @param {Confirm} value
 * @returns {Confirm}
 */
export function confirmOf(value) {
  return { call: value.call, tool: value.tool, args: value.args };
}

/**
 * The tool call a `hello` says waits for approval: `hello.confirm`, sent
 * whichever conversation the reply belongs to, else `hello.pending.confirm`
 * (a daemon without the first).
 * @param {EventOf<"hello">} event
 * @returns {Confirm | null}
 */
export function helloConfirm(event) {
  if (isConfirm(event.confirm)) return confirmOf(event.confirm);
  const inPending = event.pending?.confirm;
  return isConfirm(inPending) ? confirmOf(inPending) : null;
}

/**
 * The context figures of a `ctx` event or a `hello`'s `ctx_*` fields.
 * @param {Record<string, unknown>} fields
 * @returns {Ctx}
 */
export function ctxOf(fields) {
  return {
    used: numberOrNull(fields.used),
    max: numberOrNull(fields.max),
    sent: numberOrNull(fields.sent),
    total: numberOrNull(fields.total),
    summarized: numberOrNull(fields.summarized),
  };
}

/**
 * A model's short name: its file name without the folder and `.gguf`.
 * @param {string} name
 */
export function shortModelName(name) {
  const file = name.split(/[\\/]/).filter((part) => part !== "").at(-1) ??
    name;
  return file.replace(/\.gguf$/i, "") || name;
}

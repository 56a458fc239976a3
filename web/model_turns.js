// @ts-check
/**
 * The reply in flight and how it ends: the pure steps the model takes for
 * `hello.pending`, `tool`, `done` and a turn's `error`. No DOM here.
 */
import { filesOf } from "./files_model.js";
import { isStored, newPending, timingsOf, toolMarks } from "./model_parts.js";

/** @typedef {import("./model_parts.js").EventOf<"hello">} Hello */
/** @typedef {import("./model_parts.js").EventOf<"done">} Done */
/** @typedef {import("./model_parts.js").EventOf<"error">} ErrorEvent */
/** @typedef {import("./model_parts.js").Turn} Turn */
/** @typedef {import("./model_parts.js").Pending} Pending */
/** @typedef {import("./model_parts.js").Shown} Shown */

/**
 * The reply in flight from a `hello`. It is the shown conversation's
 * exactly when `pending.id` is `hello.id`; otherwise it streams elsewhere
 * (in conversation `pending.id`, which shows it once opened). A reply the
 * daemon leaves out (`pending: null` while `state` says one runs) will
 * create a conversation other than the unsaved one shown: it streams
 * elsewhere too, under a key no conversation shown has.
 * @param {Hello} event
 * @param {string} shownKey the key of the conversation the hello shows
 * @param {(id: number | null) => string} keyOf a key for another conversation
 * @returns {Pending | null}
 */
export function helloPending(event, shownKey, keyOf) {
  const p = event.pending;
  if (!p || typeof p !== "object") {
    return event.state && event.state !== "idle"
      ? newPending(keyOf(null), null, "", false)
      : null;
  }
  const id = typeof p.id === "number" ? p.id : null;
  const key = p.id === (event.id ?? null) ? shownKey : keyOf(id);
  const pending = newPending(
    key,
    id,
    String(p.user ?? ""),
    p.replaces === true,
  );
  pending.reply = String(p.reply ?? "");
  pending.think = String(p.think ?? "");
  pending.tools = toolMarks(p.tools);
  const files = filesOf(p.files);
  if (files.length > 0) pending.files = files;
  return pending;
}

/**
 * The mark of a tool call the user decided (`approved`).
 * @param {import("./model_parts.js").Confirm | undefined} asked
 * @param {import("./model_parts.js").EventOf<"approved">} event
 * @returns {import("./model_parts.js").ToolMark}
 */
export function approvedMark(asked, event) {
  return { name: asked?.tool ?? "tool", allowed: event.allow === true };
}

/** A `tool` event on the reply's marks: a start, or the end of the one running. */
export function markTool(
  /** @type {import("./model_parts.js").ToolMark[]} */ tools,
  /** @type {import("./model_parts.js").EventOf<"tool">} */ event,
) {
  const name = String(event.name);
  if (!event.done) {
    tools.push({ name, done: false });
    return;
  }
  const running = tools.findLast((mark) =>
    mark.name === name && mark.done === false
  );
  if (running) running.done = true;
  else tools.push({ name, done: true });
}

/**
 * The files of the reply in flight, on the turn it makes: the files to
 * send again only on a turn the daemon does not keep.
 * @param {Pending} pending
 * @param {boolean} kept
 */
function filesOfPending(pending, kept) {
  return {
    ...(pending.files ? { files: pending.files } : {}),
    ...(pending.sources ? { sources: pending.sources } : {}),
    ...(pending.resend && !kept ? { resend: pending.resend } : {}),
  };
}

/**
 * The turn a `done` makes of the reply in flight.
 * @param {Pending} pending
 * @param {Done} event
 * @returns {Turn}
 */
export function finishedTurn(pending, event) {
  const stopped = event.stopped === true;
  const truncated = !stopped && event.truncated === true;
  const timings = timingsOf(event.timings);
  return {
    user: pending.user,
    reply: pending.reply,
    think: pending.think,
    tools: pending.tools,
    status: stopped ? "stopped" : truncated ? "truncated" : null,
    ...(truncated && typeof event.truncated_by === "string"
      ? { truncatedBy: event.truncated_by }
      : {}),
    ...(timings ? { timings } : {}),
    ...filesOfPending(pending, !stopped),
  };
}

/**
 * The turn an `error` with `turn: true` makes of the reply in flight.
 * @param {Pending} pending
 * @param {ErrorEvent} event
 * @returns {Turn}
 */
export function failedTurn(pending, event) {
  return {
    user: pending.user,
    reply: pending.reply,
    think: pending.think,
    tools: pending.tools,
    status: "error",
    error: String(event.message ?? "the reply failed"),
    ...(typeof event.code === "string" ? { code: event.code } : {}),
    ...filesOfPending(pending, false),
  };
}

/**
 * Puts a finished turn of the shown conversation in place; returns a
 * notice when it changes nothing.
 * @param {Shown} current
 * @param {Turn} turn
 * @param {boolean} replaces a retry or an edit
 * @returns {string | null}
 */
export function placeTurn(current, turn, replaces) {
  if (!replaces) {
    current.turns.push(turn);
    return null;
  }
  if (turn.status === "stopped") {
    return "The retry was stopped: the earlier reply is kept.";
  }
  // It replaces the last turn the daemon keeps; turns shown after it
  // (stopped or failed, never stored) go with it.
  const index = current.turns.findLastIndex(isStored);
  current.turns.splice(index === -1 ? 0 : index, Infinity, turn);
  return null;
}

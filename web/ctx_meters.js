// @ts-check
/**
 * The context meter of each conversation: a `ctx` event names the
 * conversation it measured (a private one's, with no id, follows the `done`
 * of its reply), and the page shows a conversation only its own figures.
 * No DOM here.
 */
import { ctxOf, numberOrNull } from "./model_parts.js";

/** @typedef {import("./model_parts.js").Ctx} Ctx */
/** @typedef {import("./model_parts.js").EventOf<"hello">} Hello */
/** @typedef {import("./model_parts.js").EventOf<"ctx">} CtxEvent */

/** A meter with nothing known. */
const NO_CTX = Object.freeze({
  used: null,
  max: null,
  sent: null,
  total: null,
  summarized: null,
});

/** Each conversation's meter, by the key the page tells conversations apart by. */
export class CtxMeters {
  /** @type {Map<string, Ctx>} */
  #byKey = new Map();
  /** The conversation of the reply that finished last. */
  #lastDone = "";
  /** @type {number | null} The context size, whichever conversation. */
  #max = null;

  /**
   * A `hello`: `ctx_sent` is null until a reply in the current
   * conversation reported, and before that `ctx_used` is another's.
   * @param {Hello} event
   * @param {string} key the conversation the hello shows
   */
  hello(event, key) {
    this.#byKey.clear();
    this.#lastDone = "";
    this.#max = numberOrNull(event.ctx_max) ??
      numberOrNull(event.backend?.ctx_max);
    if (numberOrNull(event.ctx_sent) === null) return;
    this.#byKey.set(
      key,
      ctxOf({
        used: event.ctx_used,
        max: event.ctx_max,
        sent: event.ctx_sent,
        total: event.ctx_total,
        summarized: event.ctx_summarized,
      }),
    );
  }

  /** A reply finished in this conversation: the next `ctx` is about it. */
  finished(/** @type {string} */ key) {
    this.#lastDone = key;
  }

  /** A `ctx` event, for the conversation it names (without an id: the last reply's, else `fallback`); returns that one's key. */
  measured(/** @type {CtxEvent} */ event, /** @type {string} */ fallback) {
    const ctx = ctxOf(event);
    this.#max = ctx.max ?? this.#max;
    const key = typeof event.id === "number"
      ? `id:${event.id}`
      : this.#lastDone || fallback;
    this.#byKey.set(key, ctx);
    return key;
  }

  /** The context size llama-server reported. */
  sized(/** @type {number | null} */ max) {
    this.#max = max ?? this.#max;
  }

  /** @returns {Ctx} The meter of conversation `key`. */
  of(/** @type {string} */ key) {
    const own = this.#byKey.get(key) ?? NO_CTX;
    return { ...own, max: own.max ?? this.#max };
  }
}

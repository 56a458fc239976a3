// @ts-check
/**
 * What the page knows of the memories (docs/protocol.md, "Memories"): the
 * list as the daemon last sent it, how many the conversation shown
 * carries, the facts proposed and not yet answered, and the commands this
 * page sent about them, so that an answer (or a refusal) finds what asked
 * for it. No DOM here.
 */
import { numberOrNull } from "./model_parts.js";

/** @typedef {import("./model_parts.js").WireEvent} WireEvent */
/** @typedef {import("./model_parts.js").EventOf<"error">} ErrorEvent */
/** @typedef {import("../src/protocol/events.ts").MemoryView} Memory */
/** @typedef {import("../src/protocol/events.ts").ProposalView} Proposal */
/**
 * A command of this page's about the memories, waiting for its answer:
 * `add` and `edit` (a `remember`), `forget`, or the answer to a proposal.
 * @typedef {{kind: "add" | "edit" | "forget", id?: number}
 *   | {kind: "answer", proposal: string}} Asked
 */
/**
 * What became of a command of this page's: `kind` and `id` as asked,
 * `ok` false when refused.
 * @typedef {{kind: Asked["kind"], id: number | null, ok: boolean}} Outcome
 */

/** Most characters a memory may have once trimmed, as the daemon counts them (code points). */
export const MAX_MEMORY_CHARS = 500;

/**
 * What is wrong with a memory's text as the daemon would judge it, or
 * null when it would take it.
 * @param {string} text
 * @returns {"blank" | "long" | null}
 */
export function memoryProblem(text) {
  const chars = Array.from(text.trim()).length;
  if (chars === 0) return "blank";
  return chars > MAX_MEMORY_CHARS ? "long" : null;
}

/**
 * A memory as the daemon sent it, or null when it is not one.
 * @param {unknown} value
 * @returns {Memory | null}
 */
function memoryOf(value) {
  if (value === null || typeof value !== "object") return null;
  const m = /** @type {Record<string, unknown>} */ (value);
  const id = numberOrNull(m.id);
  if (id === null || typeof m.text !== "string") return null;
  return {
    id,
    text: m.text,
    created: numberOrNull(m.created) ?? 0,
    updated: numberOrNull(m.updated) ?? numberOrNull(m.created) ?? 0,
    source: sourceOf(m.source),
  };
}

/**
 * A memory's or a proposal's source, or null.
 * @param {unknown} value
 * @returns {{id: number, turn: number} | null}
 */
function sourceOf(value) {
  if (value === null || typeof value !== "object") return null;
  const s = /** @type {Record<string, unknown>} */ (value);
  const id = numberOrNull(s.id);
  const turn = numberOrNull(s.turn);
  return id === null || turn === null ? null : { id, turn };
}

/**
 * The proposals of a `proposed` event or `hello.proposed`.
 * @param {unknown} items
 * @returns {Proposal[]}
 */
function proposalsOf(items) {
  /** @type {Proposal[]} */
  const found = [];
  for (const item of Array.isArray(items) ? items : []) {
    if (item === null || typeof item !== "object") continue;
    const p = /** @type {Record<string, unknown>} */ (item);
    const source = sourceOf(p.source);
    if (typeof p.proposal !== "string" || typeof p.text !== "string") continue;
    if (source === null) continue;
    found.push({ proposal: p.proposal, text: p.text, source });
  }
  return found;
}

/** The memories, the proposals, and this page's commands about them. */
export class MemoryModel {
  /** Whether the daemon keeps memories (its `hello` counts them). */
  supported = false;
  /** @type {number | null} How many memories the conversation shown carries; null while unknown. */
  carried = null;
  /** @type {Memory[] | null} Newest first, as last sent; null until the daemon sends them. */
  items = null;
  /** Whether this connection asked for the list. */
  asked = false;
  /** @type {Map<string, Proposal>} Facts proposed and not yet answered, oldest first. */
  proposals = new Map();
  /** @type {Map<string | number, Asked>} This page's commands not yet answered, by ref. */
  #asked = new Map();
  /** @type {Outcome[]} What became of this page's commands since the view last looked. */
  outcomes = [];

  /** Proposals this page answered and waits to see decided. */
  get answering() {
    return new Set(
      [...this.#asked.values()].flatMap((a) =>
        a.kind === "answer" ? [a.proposal] : []
      ),
    );
  }

  /** A command about the memories sent with `ref`. */
  sent(/** @type {string | number} */ ref, /** @type {Asked} */ asked) {
    this.#asked.set(ref, asked);
  }

  /** The list was asked for on this connection. */
  listAsked() {
    this.asked = true;
  }

  /** Takes what became of this page's commands since the last call. */
  takeOutcomes() {
    const outcomes = this.outcomes;
    this.outcomes = [];
    return outcomes;
  }

  /**
   * A `hello`: a new connection, whose list is asked for again, and the
   * proposals still waiting.
   * @param {import("./model_parts.js").EventOf<"hello">} event
   */
  #hello(event) {
    this.supported = typeof event.memories === "number";
    this.carried = numberOrNull(event.memories);
    this.items = null;
    this.asked = false;
    // Commands sent on an earlier connection are never answered: what
    // waits for them waits no more.
    for (const ref of [...this.#asked.keys()]) this.#answered(ref, false, null);
    this.proposals = new Map(
      proposalsOf(event.proposed).map((p) => [p.proposal, p]),
    );
  }

  /** How many memories the conversation shown carries, as `conversation` or its `ctx` says. */
  carry(/** @type {unknown} */ count) {
    const n = numberOrNull(count);
    if (n === null) return false;
    this.carried = n;
    return true;
  }

  /**
   * Applies `hello`, `conversation`, `memories`, `proposed` or `decided`;
   * returns the parts that changed: the memories (their list and count) or
   * the proposals.
   * @param {WireEvent} event
   * @returns {("memories" | "proposals")[]}
   */
  apply(event) {
    switch (event.type) {
      case "hello":
        this.#hello(event);
        return ["memories", "proposals"];
      case "conversation":
        return this.carry(event.memories) ? ["memories"] : [];
      case "memories": {
        const items = Array.isArray(event.items) ? event.items : [];
        this.items = items.flatMap((item) => memoryOf(item) ?? []);
        this.#answered(event.ref, true, false);
        return ["memories"];
      }
      case "proposed":
        for (const p of proposalsOf(event.items)) {
          this.proposals.set(p.proposal, p);
        }
        return ["proposals"];
      case "decided":
        this.proposals.delete(String(event.proposal));
        this.#answered(event.ref, true, true);
        return ["proposals"];
    }
    return [];
  }

  /**
   * A command of this page's about the memories refused: its card or its
   * editor learns of it. `no_such_proposal` is no fault to tell: another
   * client answered first, and the card just closes. Returns what changed
   * and whether the error is told.
   * @param {ErrorEvent} event
   * @returns {{changed: "memories" | "proposals" | null, tell: boolean}}
   */
  refused(event) {
    const asked = this.#answered(event.ref, false, null);
    if (!asked) return { changed: null, tell: true };
    if (asked.kind !== "answer") return { changed: "memories", tell: true };
    if (event.code === "no_such_proposal") {
      this.proposals.delete(asked.proposal);
      return { changed: "proposals", tell: false };
    }
    return { changed: "proposals", tell: true };
  }

  /**
   * The command sent with `ref` got its answer (an accepted proposal's
   * `memories` is not it: its `decided` is): kept as an outcome for the
   * view; returns what it asked.
   * @param {string | number | undefined} ref
   * @param {boolean} ok
   * @param {boolean | null} answer whether the answer is a proposal's; null: either
   */
  #answered(ref, ok, answer) {
    if (ref === undefined) return null;
    const asked = this.#asked.get(ref);
    if (!asked || (answer !== null && answer !== (asked.kind === "answer"))) {
      return null;
    }
    this.#asked.delete(ref);
    const id = asked.kind === "answer" ? null : asked.id ?? null;
    this.outcomes.push({ kind: asked.kind, id, ok });
    return asked;
  }
}

// @ts-check
/// <reference lib="dom" />
/**
 * The search box: a search as the reader types (a short pause first),
 * Enter takes the first result, ↓ goes into the list, Esc empties it; and
 * "words only", offered while the daemon also searches by meaning.
 */
import { $ } from "./dom.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./model.js").Part} Part */
/** @typedef {(command: import("./connection.js").Command) => string | null} Send */

const SEARCH_DELAY_MS = 120;
const SEARCH_LIMIT = 50;

/** The search field and what it sends. */
export class SearchBox {
  field = /** @type {HTMLInputElement} */ ($("search"));
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer = undefined;
  /** Enter was pressed before this query's results came. */
  #focusFirst = false;
  #model;
  #send;
  #redraw;

  /**
   * @param {CanvasModel} model
   * @param {Send} send
   * @param {() => void} redraw draws the list at once
   */
  constructor(model, send, redraw) {
    this.#model = model;
    this.#send = send;
    this.#redraw = redraw;
    const field = this.field;
    field.addEventListener("input", () => {
      clearTimeout(this.#timer);
      // Emptied: the conversations come back at once, and no answer on its
      // way brings results back.
      if (field.value.trim() === "") this.run();
      else this.#timer = setTimeout(() => this.run(), SEARCH_DELAY_MS);
    });
    field.addEventListener("keydown", (event) => this.#key(event));
    const words = /** @type {HTMLInputElement} */ ($("words-only"));
    words.addEventListener("change", () => {
      model.wordsOnly = words.checked;
      this.run();
    });
  }

  /** Focuses the first entry of the list. */
  focusFirstResult() {
    /** @type {HTMLElement | null} */ ($("list").querySelector("button.conv"))
      ?.focus();
  }

  /** Searches for what the box holds now (or shows the conversations when empty). */
  run() {
    clearTimeout(this.#timer);
    const q = this.field.value;
    const model = this.#model;
    if (q.trim() === "") {
      model.clearSearch();
      this.#redraw();
      return;
    }
    // This query's results are shown or on their way (Enter after typing).
    if (q === model.query && model.searching(q)) return;
    const ref = this.#send({
      type: "search",
      q,
      limit: SEARCH_LIMIT,
      ...(model.wordsOnly ? { by: "words" } : {}),
    });
    if (ref !== null) model.searchSent(ref, q);
  }

  /** The list was drawn: focus the first result if Enter asked for it, search again if due. */
  drawn(/** @type {Set<Part>} */ changed) {
    if (this.#model.askAgain) {
      this.#model.askAgain = false;
      this.run();
    }
    if (
      this.#focusFirst && changed.has("list") &&
      this.#model.resultsFor === this.field.value
    ) {
      this.#focusFirst = false;
      this.focusFirstResult();
    }
  }

  /** @param {KeyboardEvent} event */
  #key(event) {
    const field = this.field;
    if (event.key === "Enter") {
      event.preventDefault();
      this.run();
      if (
        field.value.trim() === "" || this.#model.resultsFor === field.value
      ) {
        this.focusFirstResult();
      } else {
        this.#focusFirst = true;
      }
    } else if (event.key === "ArrowDown") {
      event.preventDefault();
      this.focusFirstResult();
    } else if (event.key === "Escape" && field.value !== "") {
      event.preventDefault();
      event.stopPropagation();
      field.value = "";
      this.run();
    }
  }
}

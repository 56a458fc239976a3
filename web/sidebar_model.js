// @ts-check
/**
 * The sidebar's part of the page's picture of the daemon: the conversations
 * as last listed and renamed, and the search results, each answer paired
 * with its query (and whether it was by words only) by ref; whether the
 * daemon searches by meaning, and how far its indexing is. No DOM here.
 */
import { hitOf, numberOrNull } from "./model_parts.js";

/** @typedef {import("./model_parts.js").WireEvent} WireEvent */
/** @typedef {import("./model_parts.js").Listed} Listed */
/** @typedef {import("./model_parts.js").Hit} Hit */
/** @typedef {{done: number, total: number}} Indexing */

/**
 * Where the turns' vectors for search by meaning stand: null when none are
 * being made (a report with `done` equal to `total` is the last one).
 * @param {unknown} value
 * @returns {Indexing | null}
 */
export function indexingOf(value) {
  if (value === null || typeof value !== "object") return null;
  const fields = /** @type {Record<string, unknown>} */ (value);
  const done = numberOrNull(fields.done);
  const total = numberOrNull(fields.total);
  if (done === null || total === null || done >= total) return null;
  return { done: Math.max(0, done), total };
}

/** The conversations and the search; the page's model extends it. */
export class SidebarModel {
  /** @type {Listed[]} Newest first. */
  conversations = [];
  /** @type {Hit[] | null} Search results, or null when not searching. */
  results = null;
  /** @type {string | null} The query in the search box (null when empty): only its answers are shown. */
  query = null;
  /** @type {string | null} The query `results` answers. */
  resultsFor = null;
  /** Whether `results` were searched by words only. */
  resultsByWords = false;
  /** @type {Map<string | number, {q: string, words: boolean}>} Searches sent and not yet answered, by ref. */
  searches = new Map();
  /** Whether the reader asked for search by words only. */
  wordsOnly = false;
  /** @type {boolean | null} Whether the daemon searches by meaning too; null until it says. */
  meaning = null;
  /** @type {Indexing | null} The turns given their vector so far, while that runs. */
  indexing = null;
  /** Whether the query shown is to be searched again (its words-only search was refused). */
  askAgain = false;

  /** A conversation's title as last listed or renamed. */
  titleOf(/** @type {number} */ id) {
    const item = this.conversations.find((entry) => entry.id === id);
    return item ? item.title : `Conversation ${id}`;
  }

  /** A search sent with `ref` for `q` (by words only when `wordsOnly`), which is now the query shown. */
  searchSent(/** @type {string | number} */ ref, /** @type {string} */ q) {
    this.query = q;
    this.searches.set(ref, { q, words: this.wordsOnly });
  }

  /** The search box emptied: the conversations again, and late answers dropped. */
  clearSearch() {
    this.query = null;
    this.results = null;
    this.resultsFor = null;
  }

  /** Whether `q`'s results, in the mode asked for now, are shown or on their way. */
  searching(/** @type {string} */ q) {
    const words = this.wordsOnly;
    if (this.resultsFor === q && this.resultsByWords === words) return true;
    return [...this.searches.values()].some((s) =>
      s.q === q && s.words === words
    );
  }

  /**
   * A search of this page's refused: `meaning_off` says the daemon has no
   * search by meaning, so words only is no choice to offer (a query it
   * refused by words only is searched again without). Returns whether the
   * error was that.
   * @param {import("./model_parts.js").EventOf<"error">} event
   */
  searchRefused(event) {
    const sent = event.ref === undefined
      ? undefined
      : this.searches.get(event.ref);
    if (event.ref === undefined || sent === undefined) return false;
    this.searches.delete(event.ref);
    if (event.code !== "meaning_off") return false;
    this.meaning = false;
    this.wordsOnly = false;
    this.askAgain = sent.words && sent.q === this.query;
    return true;
  }

  /** A `hello`: what the daemon says of indexing; searches sent before it are never answered. */
  helloSidebar(/** @type {import("./model_parts.js").EventOf<"hello">} */ e) {
    this.searches.clear();
    this.indexing = indexingOf(e.indexing);
    // Only a daemon with embeddings indexes; else it may have changed.
    this.meaning = e.indexing !== undefined ? true : null;
  }

  /**
   * Applies `conversations`, `results`, `renamed` or `indexing`; returns
   * whether the list changed.
   * @param {WireEvent} event
   */
  applyList(event) {
    switch (event.type) {
      case "conversations":
        this.conversations = Array.isArray(event.items) ? event.items : [];
        return true;
      case "results":
        return this.#results(event);
      case "renamed":
        this.#renamed(event);
        return true;
      case "indexing":
        this.indexing = indexingOf(event);
        this.meaning = true;
        return true;
    }
    return false;
  }

  /** @param {import("./model_parts.js").EventOf<"results">} event */
  #results(event) {
    // An answer to a query no longer in the box is dropped.
    const ref = event.ref;
    if (ref === undefined) return false;
    const sent = this.searches.get(ref);
    this.searches.delete(ref);
    if (sent === undefined || sent.q !== this.query) return false;
    if (sent.words !== this.wordsOnly) return false;
    const items = Array.isArray(event.items) ? event.items : [];
    this.results = items.map(hitOf);
    this.resultsFor = sent.q;
    this.resultsByWords = sent.words;
    // With embeddings on every item says how it was found; without, none.
    if (this.results.length > 0) {
      this.meaning = this.results.some((hit) => hit.by !== undefined);
    }
    return true;
  }

  /** @param {import("./model_parts.js").EventOf<"renamed">} event */
  #renamed(event) {
    const item = this.conversations.find((entry) => entry.id === event.id);
    if (item) item.title = event.title;
    else {
      this.conversations.unshift({
        id: event.id,
        title: event.title,
        updated: Math.floor(Date.now() / 1000),
      });
    }
    for (const hit of this.results ?? []) {
      if (hit.id === event.id) hit.title = event.title;
    }
  }
}

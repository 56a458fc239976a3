// @ts-check
/**
 * The sidebar's part of the page's picture of the daemon: the conversations
 * as last listed and renamed, and the search results, each answer paired
 * with its query by ref. No DOM here.
 */
import { hitOf } from "./model_parts.js";

/** @typedef {import("./model_parts.js").WireEvent} WireEvent */
/** @typedef {import("./model_parts.js").Listed} Listed */
/** @typedef {import("./model_parts.js").Hit} Hit */

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
  /** @type {Map<string | number, string>} Searches sent and not yet answered: ref to query. */
  searches = new Map();

  /** A conversation's title as last listed or renamed. */
  titleOf(/** @type {number} */ id) {
    const item = this.conversations.find((entry) => entry.id === id);
    return item ? item.title : `Conversation ${id}`;
  }

  /** A search sent with `ref` for `q`, which is now the query shown. */
  searchSent(/** @type {string | number} */ ref, /** @type {string} */ q) {
    this.query = q;
    this.searches.set(ref, q);
  }

  /** The search box emptied: the conversations again, and late answers dropped. */
  clearSearch() {
    this.query = null;
    this.results = null;
    this.resultsFor = null;
  }

  /** Whether `q`'s results are shown or on their way. */
  searching(/** @type {string} */ q) {
    return this.resultsFor === q || [...this.searches.values()].includes(q);
  }

  /**
   * Applies `conversations`, `results` or `renamed`; returns whether the
   * list changed.
   * @param {WireEvent} event
   */
  applyList(event) {
    switch (event.type) {
      case "conversations":
        this.conversations = Array.isArray(event.items) ? event.items : [];
        return true;
      case "results": {
        // An answer to a query no longer in the box is dropped.
        const ref = event.ref;
        if (ref === undefined) return false;
        const q = this.searches.get(ref);
        this.searches.delete(ref);
        if (q === undefined || q !== this.query) return false;
        this.results = Array.isArray(event.items) ? event.items.map(hitOf) : [];
        this.resultsFor = q;
        return true;
      }
      case "renamed":
        this.#renamed(event);
        return true;
    }
    return false;
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

// @ts-check
/// <reference lib="dom" />
/**
 * The sidebar: the conversations, or the search results while searching
 * (those found by meaning tagged so, and "words only" offered while the
 * daemon searches by meaning too), and how far its indexing is.
 */
import { $, el, numbers, placeChildren } from "./dom.js";
import { NO_DAEMON } from "./model.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./model_parts.js").Hit} Hit */

const dates = new Intl.DateTimeFormat(undefined, {
  dateStyle: "medium",
  timeStyle: "short",
});

/**
 * What the list says when it has nothing to list: never "no conversations"
 * while the daemon was not heard from, which would read as an empty history.
 * @param {CanvasModel} model
 */
export function emptyListText(model) {
  if (model.greeted) {
    return model.results !== null ? "No match." : "No conversations yet.";
  }
  const { link } = model;
  if (link.state === "down" && link.code === NO_DAEMON) {
    return "The daemon is not running: start it with deno task start. This page reconnects by itself.";
  }
  if (link.state === "down") {
    return `The daemon is not reachable (${link.why}). This page reconnects by itself.`;
  }
  return "Connecting to the daemon…";
}

/**
 * A search result's text with its matches as <mark>, all as text: from
 * `marks` when the daemon sends them, else from the `**` in `snippet`.
 * @param {Hit} hit
 */
export function snippet(hit) {
  const span = el("span", "conv-snippet");
  if (hit.text !== undefined && hit.marks !== undefined) {
    let at = 0;
    for (const [start, end] of hit.marks) {
      span.append(hit.text.slice(at, start));
      span.append(el("mark", "", hit.text.slice(start, end)));
      at = end;
    }
    span.append(hit.text.slice(at));
    return span;
  }
  hit.snippet.split("**").forEach((part, index) => {
    span.append(index % 2 === 1 ? el("mark", "", part) : part);
  });
  return span;
}

/** @type {Record<string, string>} The tag of a result found by meaning. */
const BY_TAGS = { meaning: "by meaning", both: "also by meaning" };

/**
 * The entries drawn last, by conversation id. An entry is kept and changed
 * in place, never replaced: a click pressed on an entry that is swapped
 * before the button comes up would be lost, and the list redraws whenever
 * a reply ends or a title arrives.
 * @type {Map<number, {li: HTMLLIElement, button: HTMLButtonElement, drawn: string}>}
 */
const entries = new Map();

/**
 * The entry for one conversation or result, changed only where it differs.
 * @param {{id: number, title: string, updated?: number} | Hit} item
 * @param {boolean} current
 */
function entryFor(item, current) {
  const shown = "snippet" in item
    ? [
      item.snippet,
      item.text ?? null,
      item.marks ?? null,
      item.file ?? null,
      item.by ?? null,
    ]
    : item.updated ?? null;
  const drawn = JSON.stringify([item.title, current, shown]);
  let entry = entries.get(item.id);
  if (entry === undefined) {
    const button = el("button", "conv");
    button.type = "button";
    button.dataset.id = String(item.id);
    entry = { li: el("li"), button, drawn: "" };
    entry.li.append(button);
    entries.set(item.id, entry);
  }
  if (entry.drawn === drawn) return entry.li;
  entry.drawn = drawn;
  const { button } = entry;
  if (current) button.setAttribute("aria-current", "true");
  else button.removeAttribute("aria-current");
  const parts = [el("span", "conv-title", item.title || "(untitled)")];
  if ("snippet" in item) {
    // A match inside a file would read as the conversation's own words.
    if (item.file !== undefined) {
      parts.push(el("span", "conv-file", `in ${item.file}`));
    }
    // Words it shares are marked; a match by meaning alone has none.
    const tag = BY_TAGS[item.by ?? "words"];
    if (tag) parts.push(el("span", "by-tag", tag));
    parts.push(snippet(item));
  } else if (typeof item.updated === "number") {
    parts.push(
      el("span", "conv-date", dates.format(new Date(item.updated * 1000))),
    );
  }
  button.replaceChildren(...parts);
  return entry.li;
}

/** Draws the sidebar's list from the model. */
export function drawList(/** @type {CanvasModel} */ model) {
  const list = $("list");
  const searching = model.results !== null;
  $("list-label").textContent = searching ? "Results" : "Conversations";
  $("words-only-box").hidden = !searching || model.meaning !== true;
  /** @type {HTMLInputElement} */ ($("words-only")).checked = model.wordsOnly;
  drawIndexing(model);
  /** @type {({id: number, title: string, updated?: number} | Hit)[]} */
  const items = model.results ?? model.conversations;
  /** @type {HTMLLIElement[]} */
  let nodes = items.map((item) => entryFor(item, item.id === model.current.id));
  const listed = new Set(items.map((item) => item.id));
  for (const id of entries.keys()) {
    if (!listed.has(id)) entries.delete(id);
  }
  if (nodes.length === 0 || !model.greeted) {
    const empty = el("li", "none", emptyListText(model));
    if (!model.greeted) empty.classList.add("down");
    nodes = [empty];
  }
  // An entry moved to its new place loses the focus: it goes back to it.
  const active = document.activeElement;
  const focused = active instanceof HTMLElement && list.contains(active)
    ? active
    : undefined;
  placeChildren(list, nodes);
  if (focused !== undefined && focused.isConnected) focused.focus();
}

/** How many turns have their vector for search by meaning, while that runs. */
function drawIndexing(/** @type {CanvasModel} */ model) {
  const indexing = model.indexing;
  $("indexing").hidden = indexing === null;
  if (indexing === null) return;
  $("indexing-text").textContent = `Indexing for search by meaning: ${
    numbers.format(indexing.done)
  } of ${numbers.format(indexing.total)} turns`;
  const bar = /** @type {HTMLProgressElement} */ ($("indexing-bar"));
  bar.max = Math.max(1, indexing.total);
  bar.value = indexing.done;
}

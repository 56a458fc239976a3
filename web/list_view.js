// @ts-check
/// <reference lib="dom" />
/** The sidebar: the conversations, or the search results while searching. */
import { $, el } from "./dom.js";
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

/** Draws the sidebar's list from the model. */
export function drawList(/** @type {CanvasModel} */ model) {
  const list = $("list");
  const searching = model.results !== null;
  $("list-label").textContent = searching ? "Results" : "Conversations";
  /** @type {({id: number, title: string, updated?: number} | Hit)[]} */
  const items = model.results ?? model.conversations;
  const nodes = items.map((item) => {
    const li = el("li");
    const entry = el("button", "conv");
    entry.type = "button";
    entry.dataset.id = String(item.id);
    if (item.id === model.current.id) {
      entry.setAttribute("aria-current", "true");
    }
    entry.append(el("span", "conv-title", item.title || "(untitled)"));
    if ("snippet" in item) {
      entry.append(snippet(item));
    } else if (typeof item.updated === "number") {
      entry.append(
        el("span", "conv-date", dates.format(new Date(item.updated * 1000))),
      );
    }
    li.append(entry);
    return li;
  });
  if (nodes.length === 0 || !model.greeted) {
    const empty = el("li", "none", emptyListText(model));
    if (!model.greeted) empty.classList.add("down");
    nodes.splice(0, nodes.length, empty);
  }
  // Redrawn under the reader's keyboard: the same entry keeps the focus.
  const active = document.activeElement;
  const focused = active instanceof HTMLElement && list.contains(active)
    ? active.dataset.id
    : undefined;
  list.replaceChildren(...nodes);
  if (focused !== undefined) {
    /** @type {HTMLElement | null} */ (list.querySelector(
      `button.conv[data-id="${CSS.escape(focused)}"]`,
    ))?.focus();
  }
}

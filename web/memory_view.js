// @ts-check
/// <reference lib="dom" />
/**
 * The memories panel, and how many memories the conversation shown
 * carries (beside the context meter). Each memory's row is kept while it
 * is on screen and changed in place: one being edited keeps what is typed
 * in it when another client changes the list, and a click pressed on it
 * is never lost to a redraw.
 */
import { $, button, el, numbers, placeChildren } from "./dom.js";
import { MAX_MEMORY_CHARS, memoryProblem } from "./memory_model.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./memory_model.js").Memory} Memory */
/**
 * One memory's row: `mode` is what it shows (the memory, its editor, or
 * the question whether to forget it); `busy` while a command about it
 * waits for its answer.
 * @typedef {{li: HTMLLIElement, drawn: string, mode: "show" | "edit" | "forget",
 *   busy: boolean, editor: HTMLTextAreaElement | null}} Row
 */

const dates = new Intl.DateTimeFormat(undefined, {
  dateStyle: "medium",
  timeStyle: "short",
});

/** "3 memories", "1 memory", "no memories". */
export function memoriesText(/** @type {number} */ n) {
  if (n === 0) return "no memories";
  return n === 1 ? "1 memory" : `${numbers.format(n)} memories`;
}

/**
 * What the counter under a memory's text says: nothing while it fits,
 * how far over it is otherwise.
 * @param {string} text
 */
export function charsText(text) {
  if (memoryProblem(text) !== "long") return "";
  const chars = Array.from(text.trim()).length;
  return `${numbers.format(chars)} characters: at most ${MAX_MEMORY_CHARS}`;
}

/** The memories panel and the count beside the context meter. */
export class MemoryPanel {
  panel = $("memories-panel");
  list = $("memory-list");
  add = /** @type {HTMLTextAreaElement} */ ($("memory-text"));
  /** @type {Map<number, Row>} */
  rows = new Map();
  /** Whether the last memory asked to be added waits for its answer. */
  adding = false;

  /** Whether the panel is open. */
  get open() {
    return !this.panel.hidden;
  }

  /** Draws the count, the sidebar's button and the panel from the model. */
  draw(/** @type {CanvasModel} */ model) {
    const memory = model.memory;
    for (const outcome of memory.takeOutcomes()) {
      if (outcome.kind === "add") {
        this.adding = false;
        if (outcome.ok) this.add.value = "";
      }
      const row = outcome.id === null ? undefined : this.rows.get(outcome.id);
      if (!row) continue;
      row.busy = false;
      // A change kept closes the editor; a refused one leaves it to fix.
      if (outcome.ok || outcome.kind === "forget") row.mode = "show";
    }
    this.#drawCount(model);
    const open = $("memories-open");
    open.hidden = !memory.supported;
    open.textContent = memory.items === null
      ? "Memories"
      : `Memories · ${numbers.format(memory.items.length)}`;
    for (const id of ["memories-open", "memories-count"]) {
      $(id).setAttribute("aria-expanded", String(this.open));
    }
    $("memories-total").textContent = memory.items === null
      ? "loading…"
      : `${numbers.format(memory.items.length)} kept`;
    this.typed();
    // Drawn when shown: a closed panel's rows wait for its opening.
    if (this.open) this.#drawList(model);
  }

  /** The add form's counter and button follow what is typed. */
  typed() {
    $("memory-chars").textContent = charsText(this.add.value);
    /** @type {HTMLButtonElement} */ ($("memory-add-button")).disabled =
      this.adding || memoryProblem(this.add.value) !== null;
  }

  /** @param {CanvasModel} model */
  #drawCount(model) {
    const count = $("memories-count");
    const n = model.memory.carried;
    count.hidden = !model.memory.supported || n === null;
    if (n === null) return;
    count.textContent = memoriesText(n);
    count.title = n === 0
      ? "This conversation carries no memories. Show the memories (Alt+M)"
      : `The model knows ${
        memoriesText(n)
      } about you in this conversation. Show them (Alt+M)`;
  }

  /** @param {CanvasModel} model */
  #drawList(model) {
    const items = model.memory.items ?? [];
    /** @type {HTMLElement[]} */
    const nodes = items.map((item) => this.#row(item, model));
    const kept = new Set(items.map((item) => item.id));
    for (const id of this.rows.keys()) {
      if (!kept.has(id)) this.rows.delete(id);
    }
    // A row forgotten from the keyboard hands the focus to the next one.
    const focused = document.activeElement;
    const lost = [...this.list.children].find((li) =>
      li.contains(focused) && !nodes.includes(/** @type {HTMLElement} */ (li))
    );
    const after = lost ? [...this.list.children].indexOf(lost) : -1;
    if (model.memory.items !== null && nodes.length === 0) {
      nodes.push(
        el(
          "li",
          "none",
          "Nothing yet. Add something above, or keep a fact the assistant proposes.",
        ),
      );
    }
    placeChildren(this.list, nodes);
    if (after === -1) return;
    const next = nodes[Math.min(after, nodes.length - 1)]?.querySelector(
      "button",
    );
    (next ?? this.add).focus();
  }

  /**
   * One memory's row, built again only when it changed (not while its
   * command waits: the button with the focus keeps it).
   * @param {Memory} item
   * @param {CanvasModel} model
   */
  #row(item, model) {
    let row = this.rows.get(item.id);
    if (!row) {
      const li = el("li", "memory");
      li.dataset.id = String(item.id);
      row = { li, drawn: "", mode: "show", busy: false, editor: null };
      this.rows.set(item.id, row);
    }
    const source = item.source ? model.titleOf(item.source.id) : null;
    const drawn = JSON.stringify([item, source, row.mode]);
    if (row.drawn !== drawn) {
      if (row.mode === "edit") this.#editor(row, item);
      else this.#shown(row, item, source);
    }
    row.drawn = drawn;
    // Not disabled: a disabled button would drop the keyboard's focus.
    for (const b of row.li.querySelectorAll(".memory-actions button")) {
      b.setAttribute("aria-disabled", String(row.busy));
    }
    return row.li;
  }

  /**
   * A memory as it reads: its text, its date, where it came from, and what
   * can be done with it (or the question whether to forget it).
   * @param {Row} row
   * @param {Memory} item
   * @param {string | null} source the title of its conversation
   */
  #shown(row, item, source) {
    row.editor = null;
    const meta = el("div", "memory-meta");
    const edited = item.updated > item.created ? " · edited" : "";
    meta.append(
      el("span", "", `${dates.format(new Date(item.updated * 1000))}${edited}`),
    );
    if (item.source && source !== null) {
      const link = button(
        "source",
        `from “${source}”`,
        `Open the conversation it came from (turn ${item.source.turn + 1})`,
      );
      meta.append(" · ", link);
    }
    const actions = el("div", "memory-actions");
    if (row.mode === "forget") {
      actions.append(
        el("span", "ask", "Forget this?"),
        button("forget-yes", "Forget", "Delete this memory"),
        button("forget-no", "Keep it", "Keep this memory"),
      );
    } else {
      actions.append(
        button("edit", "Edit", "Reword this memory"),
        button("forget", "Forget", "Delete this memory"),
      );
    }
    row.li.replaceChildren(el("p", "memory-text", item.text), meta, actions);
  }

  /**
   * A memory being reworded: its editor keeps what is typed in it.
   * @param {Row} row
   * @param {Memory} item
   */
  #editor(row, item) {
    if (!row.editor) {
      row.editor = el("textarea", "memory-editor");
      row.editor.value = item.text;
      row.editor.rows = 3;
      row.editor.setAttribute("aria-label", "The memory, reworded");
    }
    const chars = el("span", "chars");
    const save = button("save", "Save", "Keep it worded so (Enter)");
    const cancel = button("cancel", "Cancel", "Leave it as it was (Esc)");
    const actions = el("div", "memory-actions");
    actions.append(chars, save, cancel);
    // The editor stays where it is: taken out, it would lose the focus.
    if (row.li.firstElementChild !== row.editor) {
      row.li.replaceChildren(row.editor);
    }
    row.li.querySelector(".memory-actions")?.remove();
    row.li.append(actions);
    this.editorTyped(row);
  }

  /** An editor's counter and Save button follow what is typed in it. */
  editorTyped(/** @type {Row} */ row) {
    if (!row.editor) return;
    const text = row.editor.value;
    const chars = row.li.querySelector(".memory-actions .chars");
    if (chars) chars.textContent = charsText(text);
    const save = row.li.querySelector("button.save");
    if (save instanceof HTMLButtonElement) {
      save.disabled = memoryProblem(text) !== null;
    }
  }

  /**
   * Sets what a memory's row shows; returns its row.
   * @param {number} id
   * @param {Row["mode"]} mode
   * @param {CanvasModel} model
   */
  setMode(id, mode, model) {
    const row = this.rows.get(id);
    if (!row) return null;
    row.mode = mode;
    this.#drawList(model);
    return row;
  }

  /** A command about this memory was sent: its buttons wait for the answer. */
  setBusy(/** @type {number} */ id, /** @type {CanvasModel} */ model) {
    const row = this.rows.get(id);
    if (!row) return;
    row.busy = true;
    this.#drawList(model);
  }
}

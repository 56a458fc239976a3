// @ts-check
/// <reference lib="dom" />
/**
 * What the reader does with the memories and the facts proposed, each
 * turned into a command of the protocol (docs/protocol.md, "Memories"):
 * the panel (open it, add, reword, forget, export, open where one came
 * from) and the proposal cards (Keep, Edit, No), by pointer and by keys.
 */
import { $ } from "./dom.js";
import { memoryProblem } from "./memory_model.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./model.js").Part} Part */
/** @typedef {import("./view.js").CanvasView} CanvasView */
/** @typedef {import("./panels.js").Panels} Panels */
/** @typedef {(command: import("./connection.js").Command) => string | null} Send */
/**
 * @typedef {{drawn(changed: Set<Part>): void,
 *   keys(): Record<string, () => unknown>, toggle(): void}} MemoryControls
 */

/** Enter without Shift, not while composing: what sends in the page's inputs. */
function isEnter(/** @type {KeyboardEvent} */ event) {
  return event.key === "Enter" && !event.shiftKey && !event.isComposing;
}

/**
 * Binds the memories panel and the proposal cards.
 * @param {{model: CanvasModel, view: CanvasView, send: Send, panels: Panels}} parts
 * @returns {MemoryControls}
 */
export function bindMemories({ model, view, send, panels }) {
  const panel = view.memories;
  const cards = view.proposals;
  const input = $("input");
  /** @type {{id: number, turn: number} | null} The turn a source link asked to see, once its conversation shows. */
  let sought = null;

  const ask = () => {
    if (send({ type: "memories" }) !== null) model.memory.listAsked();
  };

  const show = (/** @type {boolean} */ open) => {
    panels.memories(open);
    if (!open) {
      input.focus();
      return;
    }
    if (!model.memory.asked) ask();
    panel.draw(model);
    panel.add.focus();
  };
  const toggle = () => show(!panels.memoriesOpen);

  const addMemory = () => {
    const text = panel.add.value;
    if (panel.adding || memoryProblem(text) !== null) return;
    const ref = send({ type: "remember", text: text.trim() });
    if (ref === null) return;
    model.memory.sent(ref, { kind: "add" });
    panel.adding = true;
    panel.typed();
  };

  /** The id and row of the memory an event happened in. */
  const rowOf = (/** @type {Event} */ event) => {
    const li = event.target instanceof Element
      ? event.target.closest("li.memory")
      : null;
    if (!(li instanceof HTMLElement)) return null;
    const id = Number(li.dataset.id);
    const row = panel.rows.get(id);
    return row ? { id, row } : null;
  };

  const save = (/** @type {number} */ id) => {
    const row = panel.rows.get(id);
    const text = row?.editor?.value ?? "";
    if (!row || row.busy || memoryProblem(text) !== null) return;
    const ref = send({ type: "remember", id, text: text.trim() });
    if (ref === null) return;
    model.memory.sent(ref, { kind: "edit", id });
    panel.setBusy(id, model);
  };

  /** Shows a memory as `mode` and puts the focus on what it shows. */
  const mode = (
    /** @type {number} */ id,
    /** @type {"show" | "edit" | "forget"} */ to,
    /** @type {string} */ focus,
  ) => {
    const row = panel.setMode(id, to, model);
    if (!row) return;
    if (to === "edit" && row.editor) {
      row.editor.focus();
      row.editor.setSelectionRange(row.editor.value.length, Infinity);
      return;
    }
    /** @type {HTMLElement | null} */ (row.li.querySelector(focus))?.focus();
  };

  const onList = (/** @type {MouseEvent} */ event) => {
    const found = rowOf(event);
    const pressed = event.target instanceof Element
      ? event.target.closest("button")
      : null;
    // A row whose command waits for its answer takes no other.
    if (!found || !pressed || found.row.busy) return;
    const { id } = found;
    const is = (/** @type {string} */ name) => pressed.classList.contains(name);
    if (is("edit")) mode(id, "edit", "");
    else if (is("forget")) mode(id, "forget", "button.forget-no");
    else if (is("forget-no")) mode(id, "show", "button.forget");
    else if (is("cancel")) mode(id, "show", "button.edit");
    else if (is("save")) save(id);
    else if (is("forget-yes")) {
      const ref = send({ type: "forget", id });
      if (ref === null) return;
      model.memory.sent(ref, { kind: "forget", id });
      panel.setBusy(id, model);
    } else if (is("source")) {
      const source = model.memory.items?.find((m) => m.id === id)?.source;
      if (!source) return;
      sought = source;
      send({ type: "open", id: source.id });
      show(false);
    }
  };

  $("memories-open").addEventListener("click", toggle);
  $("memories-count").addEventListener("click", toggle);
  $("memories-close").addEventListener("click", () => show(false));
  $("memories-export").addEventListener("click", () => {
    send({ type: "export_memories", format: "markdown" });
  });
  $("memory-add").addEventListener("submit", (event) => {
    event.preventDefault();
    addMemory();
  });
  panel.add.addEventListener("input", () => panel.typed());
  panel.add.addEventListener("keydown", (event) => {
    if (!isEnter(event)) return;
    event.preventDefault();
    addMemory();
  });
  // Esc in the panel closes it, whatever else Esc would do on the page.
  panel.panel.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    event.preventDefault();
    event.stopPropagation();
    show(false);
  });
  panel.list.addEventListener("click", onList);
  panel.list.addEventListener("input", (event) => {
    const found = rowOf(event);
    if (found) panel.editorTyped(found.row);
  });
  panel.list.addEventListener("keydown", (event) => {
    const found = rowOf(event);
    if (!found?.row.editor || event.target !== found.row.editor) return;
    if (isEnter(event)) {
      event.preventDefault();
      save(found.id);
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      mode(found.id, "show", "button.edit");
    }
  });

  /** Answers a proposal: kept (as reworded, when `text` is given) or not. */
  const answer = (
    /** @type {string} */ proposal,
    /** @type {boolean} */ keep,
    /** @type {string | undefined} */ text = undefined,
  ) => {
    if (model.memory.answering.has(proposal)) return;
    if (text !== undefined && memoryProblem(text) !== null) return;
    const ref = send(
      keep
        ? { type: "accept", proposal, ...(text === undefined ? {} : { text }) }
        : { type: "refuse", proposal },
    );
    if (ref === null) return;
    model.memory.sent(ref, { kind: "answer", proposal });
    cards.draw(model);
  };

  /** The card an event happened in. */
  const cardOf = (/** @type {Event} */ event) => {
    const node = event.target instanceof Element
      ? event.target.closest(".proposal")
      : null;
    const proposal = node instanceof HTMLElement ? node.dataset.proposal : "";
    const card = cards.cards.get(proposal ?? "");
    return card && proposal ? { proposal, card } : null;
  };

  const box = $("proposals");
  box.addEventListener("click", (event) => {
    const found = cardOf(event);
    const pressed = event.target instanceof Element
      ? event.target.closest("button")
      : null;
    if (!found || !pressed) return;
    const { proposal, card } = found;
    const is = (/** @type {string} */ name) => pressed.classList.contains(name);
    if (is("keep")) answer(proposal, true, card.editor?.value.trim());
    else if (is("no")) answer(proposal, false);
    else if (is("edit")) {
      const editor = cards.edit(proposal, true, model);
      editor?.focus();
      editor?.setSelectionRange(editor.value.length, Infinity);
    } else if (is("cancel")) {
      cards.edit(proposal, false, model);
      /** @type {HTMLElement | null} */ (card.card.querySelector("button.keep"))
        ?.focus();
    }
  });
  box.addEventListener("input", (event) => {
    const found = cardOf(event);
    if (found) cards.typed(found.card);
  });
  box.addEventListener("keydown", (event) => {
    const found = cardOf(event);
    if (!found?.card.editor || event.target !== found.card.editor) return;
    if (isEnter(event)) {
      event.preventDefault();
      answer(found.proposal, true, found.card.editor.value.trim());
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      cards.edit(found.proposal, false, model);
      /** @type {HTMLElement | null} */ (found.card.card.querySelector(
        "button.keep",
      ))?.focus();
    }
  });

  const oldest = () => model.memory.proposals.keys().next().value;

  return {
    drawn(changed) {
      // A new connection: the open panel asks for the list again; a daemon
      // without memories has no panel.
      if (changed.has("memories") && panels.memoriesOpen) {
        if (!model.memory.supported) show(false);
        else if (!model.memory.asked) ask();
      }
      if (
        sought && changed.has("turns") && model.current.id === sought.id
      ) {
        view.revealTurn(sought.turn);
        sought = null;
      }
    },
    keys() {
      const first = oldest();
      return {
        ...(model.memory.supported ? { KeyM: toggle } : {}),
        ...(first === undefined ? {} : {
          KeyY: () => answer(first, true),
          KeyX: () => answer(first, false),
        }),
      };
    },
    toggle,
  };
}

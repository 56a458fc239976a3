// @ts-check
/// <reference lib="dom" />
/**
 * The facts the assistant proposes to remember, one card each, above the
 * approvals: Keep, Edit (keep it as reworded) and No. They stack as the
 * approvals do: the oldest lowest, nearest the composer, and a new card
 * goes above the others, so none slides under the pointer. A card is kept
 * while it waits (a click pressed on it survives a redraw, and an editor
 * keeps what is typed), and closes on every page once any client answers.
 */
import { $, button, el, placeChildren } from "./dom.js";
import { memoryProblem } from "./memory_model.js";
import { charsText } from "./memory_view.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./memory_model.js").Proposal} Proposal */
/**
 * One card: `editor` while the fact is being reworded; `answering` while
 * this page's answer waits for the daemon's.
 * @typedef {{card: HTMLElement, drawn: string, answering: boolean,
 *   editor: HTMLTextAreaElement | null}} Card
 */

/** The proposal cards. */
export class ProposalCards {
  box = $("proposals");
  /** @type {Map<string, Card>} */
  cards = new Map();

  /** Draws the cards from the model. */
  draw(/** @type {CanvasModel} */ model) {
    const waiting = model.memory.proposals;
    const answering = model.memory.answering;
    /** @type {Map<string, Card>} */
    const cards = new Map();
    for (const item of waiting.values()) {
      const card = this.cards.get(item.proposal) ?? this.#card(item);
      this.#fill(card, item, answering.has(item.proposal));
      cards.set(item.proposal, card);
    }
    const focused = document.activeElement;
    const lost = [...this.cards.values()].some((card) =>
      !cards.has(card.card.dataset.proposal ?? "") &&
      card.card.contains(focused)
    );
    this.cards = cards;
    // Alt+Y and Alt+X answer the oldest card alone.
    [...cards.values()].forEach((card, at) => {
      const keep = card.card.querySelector("button.keep");
      const no = card.card.querySelector("button.no");
      if (keep instanceof HTMLElement) {
        keep.title = at === 0 ? "Keep it (Alt+Y)" : "Keep it";
      }
      if (no instanceof HTMLElement) {
        no.title = at === 0 ? "Do not keep it (Alt+X)" : "Do not keep it";
      }
    });
    placeChildren(this.box, [...cards.values()].map((c) => c.card).reverse());
    this.box.hidden = cards.size === 0;
    // A card answered from the keyboard hands the focus on, never to the page.
    if (lost) {
      const next = [...cards.values()][0]?.card.querySelector("button.keep");
      (next instanceof HTMLElement ? next : $("input")).focus();
    }
  }

  /** A new card for a fact. */
  #card(/** @type {Proposal} */ item) {
    const card = el("div", "proposal");
    card.dataset.proposal = item.proposal;
    return { card, drawn: "", answering: false, editor: null };
  }

  /**
   * The card's text and buttons, built again only when they changed (the
   * one with the focus keeps it while its answer waits).
   * @param {Card} card
   * @param {Proposal} item
   * @param {boolean} answering
   */
  #fill(card, item, answering) {
    card.answering = answering;
    const drawn = JSON.stringify([item.text, card.editor !== null]);
    if (card.drawn !== drawn) this.#build(card, item);
    card.drawn = drawn;
    // Not disabled: a disabled button would drop the keyboard's focus.
    for (const b of card.card.querySelectorAll(".proposal-actions button")) {
      b.setAttribute("aria-disabled", String(answering));
    }
    this.typed(card);
  }

  /**
   * The card's text and buttons, or its editor and buttons.
   * @param {Card} card
   * @param {Proposal} item
   */
  #build(card, item) {
    const actions = el("div", "proposal-actions");
    if (card.editor) {
      actions.append(
        el("span", "chars"),
        button("keep", "Keep", "Keep it worded so (Enter)"),
        button("cancel", "Cancel", "Back to the fact as proposed (Esc)"),
      );
      if (card.card.firstElementChild !== card.editor) {
        card.card.replaceChildren(card.editor);
      }
      card.card.querySelector(".proposal-actions")?.remove();
      card.card.append(actions);
    } else {
      const text = el("p", "proposal-text");
      text.append(el("b", "", "Remember this?"), " ", `“${item.text}”`);
      actions.append(
        button("keep", "Keep", "Keep it"),
        button("edit", "Edit", "Reword it, then keep it"),
        button("no", "No", "Do not keep it"),
      );
      card.card.replaceChildren(text, actions);
    }
  }

  /**
   * Opens (with the fact to reword) or closes a card's editor; returns the
   * editor when opened.
   * @param {string} proposal
   * @param {boolean} open
   * @param {CanvasModel} model
   */
  edit(proposal, open, model) {
    const card = this.cards.get(proposal);
    const item = model.memory.proposals.get(proposal);
    if (!card || !item) return null;
    if (open && !card.editor) {
      card.editor = el("textarea", "proposal-editor");
      card.editor.value = item.text;
      card.editor.rows = 2;
      card.editor.setAttribute("aria-label", "The fact, reworded");
    } else if (!open) {
      card.editor = null;
    }
    this.draw(model);
    return card.editor;
  }

  /** A card's counter and Keep button follow what is typed in its editor. */
  typed(/** @type {Card} */ card) {
    if (!card.editor) return;
    const text = card.editor.value;
    const chars = card.card.querySelector(".chars");
    if (chars) chars.textContent = charsText(text);
    const keep = card.card.querySelector("button.keep");
    if (keep instanceof HTMLButtonElement) {
      keep.disabled = memoryProblem(text) !== null;
    }
  }
}

// @ts-check
/// <reference lib="dom" />
/**
 * Draws the model into the page. Each part redraws only when the model
 * says it changed; the reply in flight redraws at most once per frame. The
 * conversation keeps its newest turn in view: opening one shows its last
 * turn, a new question scrolls to itself, and the log stays at its bottom
 * while what is below it (an approval, a notice) takes room.
 */
import { $, el, placeChildren } from "./dom.js";
import { Thumbs } from "./file_view.js";
import { places } from "./files_model.js";
import { renderMarkdown } from "./markdown.js";
import { isStored } from "./model.js";
import { drawList, emptyListText } from "./list_view.js";
import { MemoryPanel } from "./memory_view.js";
import { ProposalCards } from "./proposal_view.js";
import { drawStatus } from "./status_view.js";
import { adopt, fillTurn, turnActions, turnParts } from "./turn_view.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./model.js").Part} Part */
/** @typedef {import("./model_parts.js").Turn} Turn */
/** @typedef {import("./model_parts.js").Summary} Summary */
/** @typedef {import("./model_parts.js").Confirm} Confirm */
/** @typedef {import("./turn_view.js").TurnParts} TurnParts */

/** How near the bottom (px) still counts as reading the newest. */
const NEAR_BOTTOM = 80;

/** The summary of the turns it covers, collapsed. */
function summaryBlock(/** @type {Summary} */ summary) {
  const block = el("details", "summary-block");
  const covered = summary.turns === 1
    ? "the first turn"
    : `the first ${summary.turns} turns`;
  block.append(el("summary", "", `Summary of ${covered}`));
  const text = el("div", "md summary-text");
  text.innerHTML = renderMarkdown(summary.text);
  block.append(text);
  return block;
}

/** The page's DOM, drawn from a CanvasModel. */
export class CanvasView {
  /** @type {TurnParts | null} */
  #pending = null;
  /** @type {HTMLElement | null} */
  #replaced = null;
  /** @type {WeakMap<Turn, HTMLElement>} Each turn's article, by the model's turn object, which never changes once stored. */
  #drawn = new WeakMap();
  /** The conversation drawn last: another one scrolls to its newest turn. */
  #shownKey = "";
  /** @type {{summary: Summary, block: HTMLElement} | null} */
  #summary = null;
  /** Whether the reader is at the newest part of the log. */
  #pinned = true;
  /** @type {Map<string, HTMLElement>} Each waiting call's row, kept while it waits: a row drawn again under a press would lose the click. */
  #confirmRows = new Map();

  constructor() {
    this.log = $("log");
    /** The turns' pictures; app.js tells it how to fetch one. */
    this.thumbs = new Thumbs(this.log);
    this.memories = new MemoryPanel();
    this.proposals = new ProposalCards();
    this.log.addEventListener("scroll", () => {
      this.#pinned = this.#nearBottom();
    }, { passive: true });
    // The log shrinks when an approval or a notice shows below it: the
    // newest stays in view.
    new ResizeObserver(() => {
      if (this.#pinned) this.log.scrollTop = this.log.scrollHeight;
    }).observe(this.log);
  }

  #nearBottom() {
    const log = this.log;
    return log.scrollHeight - log.scrollTop - log.clientHeight < NEAR_BOTTOM;
  }

  /**
   * Redraws the parts named in `changed`.
   * @param {CanvasModel} model
   * @param {Set<Part>} changed
   */
  draw(model, changed) {
    if (changed.has("turns")) this.drawTurns(model);
    if (changed.has("pending") || changed.has("turns")) {
      this.drawPending(model);
    }
    if (changed.has("pending") || changed.has("turns") || changed.has("list")) {
      this.drawElsewhere(model);
    }
    if (changed.has("status")) drawStatus(model);
    if (changed.has("list")) drawList(model);
    if (changed.has("confirms")) this.drawConfirms(model);
    if (changed.has("files")) this.thumbs.fill(model.files.pictures);
    // A memory's source is named by its conversation's title.
    if (changed.has("memories") || changed.has("list")) {
      this.memories.draw(model);
    }
    if (changed.has("proposals")) this.proposals.draw(model);
  }

  /** Redraws the sidebar alone. */
  drawList(/** @type {CanvasModel} */ model) {
    drawList(model);
  }

  /** @param {() => void} update */
  #stickToBottom(update) {
    const atBottom = this.#nearBottom();
    update();
    if (atBottom) {
      this.log.scrollTop = this.log.scrollHeight;
      this.#pinned = true;
    }
  }

  /** Scrolls to the start of `article`, or as far as the log goes. */
  #reveal(/** @type {HTMLElement} */ article) {
    this.log.scrollTop = article.offsetTop - 8;
    this.#pinned = this.#nearBottom();
  }

  /** @param {CanvasModel} model */
  #summaryNode(model) {
    const summary = model.current.summary;
    if (!summary || summary.turns === 0) return null;
    const kept = this.#summary;
    if (
      kept && kept.summary.text === summary.text &&
      kept.summary.turns === summary.turns
    ) {
      return kept.block;
    }
    const block = summaryBlock(summary);
    // A new summary of the same conversation stays as open as it was.
    if (kept && this.#shownKey === model.current.key) {
      /** @type {HTMLDetailsElement} */ (block).open =
        /** @type {HTMLDetailsElement} */ (kept.block).open;
    }
    this.#summary = { summary, block };
    return block;
  }

  /** @param {CanvasModel} model */
  #emptyNode(model) {
    const empty = el("div", "empty");
    let text =
      "Ask anything. Enter sends, Shift+Enter starts a new line, Esc stops a reply.";
    if (!model.greeted) text = emptyListText(model);
    else if (model.current.private) {
      text =
        "A private conversation: it lives in the daemon's memory only and is gone when you leave it.";
    }
    empty.append(el("p", "", text));
    return empty;
  }

  /** The turns of the conversation shown; a turn drawn before is reused, not drawn again. */
  drawTurns(/** @type {CanvasModel} */ model) {
    const opened = this.#shownKey !== model.current.key;
    const summary = this.#summaryNode(model);
    this.#shownKey = model.current.key;
    this.#stickToBottom(() => {
      const live = this.#pending;
      this.#pending = null;
      this.#replaced = null;
      const turns = model.current.turns;
      const stored = turns.findLastIndex(isStored);
      const kept = places(turns, model.current.id);
      /** @type {HTMLElement[]} */
      const nodes = turns.map((turn, index) => {
        let article = this.#drawn.get(turn);
        if (!article) {
          const finished = index === turns.length - 1 &&
            model.shownPending === null;
          const parts = (finished ? adopt(live, turn) : null) ??
            turnParts(turn, { live: false });
          fillTurn(parts, turn, { live: false });
          const place = kept[index] ?? null;
          this.thumbs.draw(parts.files, turn, place, model.files.pictures);
          article = parts.article;
          this.#drawn.set(turn, article);
        }
        article.hidden = false;
        article.classList.toggle("last-stored", index === stored);
        article.classList.toggle("last", index === turns.length - 1);
        article.querySelector(".turn-actions")?.remove();
        if (index === turns.length - 1) {
          article.append(turnActions(index === stored));
        }
        return article;
      });
      if (nodes.length === 0 && !model.shownPending) {
        nodes.push(this.#emptyNode(model));
      }
      if (summary) nodes.unshift(summary);
      placeChildren(this.log, nodes);
      this.thumbs.sweep();
    });
    const newest = this.log.querySelector(".turn:last-of-type");
    if (opened && newest instanceof HTMLElement) this.#reveal(newest);
  }

  /** Scrolls to a stored turn (0-based) and marks it a moment: where a memory came from. */
  revealTurn(/** @type {number} */ index) {
    const turn = this.log.querySelectorAll(".turn")[index];
    if (!(turn instanceof HTMLElement)) return;
    this.#reveal(turn);
    turn.classList.add("sought");
    setTimeout(() => turn.classList.remove("sought"), 2500);
  }

  /** The reply in flight, when it belongs to the conversation shown. */
  drawPending(/** @type {CanvasModel} */ model) {
    const pending = model.shownPending;
    /** @type {HTMLElement | null} */
    let started = null;
    this.#stickToBottom(() => {
      if (!pending) {
        this.#pending?.article.remove();
        this.#pending = null;
        if (this.#replaced) this.#replaced.hidden = false;
        this.#replaced = null;
        return;
      }
      if (!this.#pending || !this.#pending.article.isConnected) {
        this.#pending = turnParts(pending, { live: true });
        this.thumbs.draw(
          this.#pending.files,
          pending,
          null,
          model.files.pictures,
        );
        this.log.querySelector(".empty")?.remove();
        // A click (or Enter on the summary) is the reader's choice, which
        // the streaming no longer overrides.
        const think = this.#pending.think;
        think.querySelector("summary")?.addEventListener("click", () => {
          think.dataset.touched = "1";
        });
        this.log.append(this.#pending.article);
        started = this.#pending.article;
      }
      // A retry streams in place of the last turn, which comes back if
      // the retry is stopped or fails.
      const last = this.log.querySelector(".turn.last-stored");
      if (pending.replaces && last instanceof HTMLElement) {
        last.hidden = true;
        this.#replaced = last;
      }
      fillTurn(this.#pending, pending, { live: true });
    });
    // A new question is the newest turn: in view, wherever the reader was.
    if (started) this.#reveal(started);
  }

  /** The reply in flight in a conversation other than the one shown. */
  drawElsewhere(/** @type {CanvasModel} */ model) {
    const elsewhere = model.pending && !model.shownPending
      ? model.pending
      : null;
    $("elsewhere").hidden = elsewhere === null;
    if (elsewhere) {
      // Named when it belongs to a saved conversation; one it will create
      // has no name yet.
      $("elsewhere-text").textContent = elsewhere.id === null
        ? "A reply is streaming in another conversation."
        : `A reply is streaming in “${model.titleOf(elsewhere.id)}”.`;
    }
  }

  /** Tool calls waiting for the user's approval. */
  drawConfirms(/** @type {CanvasModel} */ model) {
    /** @type {Map<string, HTMLElement>} */
    const rows = new Map();
    for (const item of model.confirms.values()) {
      rows.set(item.call, this.#confirmRows.get(item.call) ?? confirmRow(item));
    }
    this.#confirmRows = rows;
    // Alt+A and Alt+D answer the oldest call alone.
    [...rows.values()].forEach((row, at) => {
      const keys = at === 0 ? ["Alt+A", "Alt+D"] : [];
      row.querySelectorAll("button").forEach((button, i) => {
        button.title = keys[i] ?? "";
      });
    });
    const box = $("confirms");
    // The box grows upwards from the composer: the oldest call stays lowest,
    // so a new prompt never slides another one's Allow under the pointer.
    placeChildren(box, [...rows.values()].reverse());
    box.hidden = rows.size === 0;
  }

  /** Shows a message for a few seconds (errors stay until dismissed). */
  notice(/** @type {string} */ text, kind = "info") {
    const box = $("notices");
    const item = el("div", `notice ${kind}`);
    item.append(el("span", "", text));
    const close = el("button", "dismiss", "×");
    close.type = "button";
    close.title = "Dismiss";
    close.setAttribute("aria-label", "Dismiss");
    close.addEventListener("click", () => item.remove());
    item.append(close);
    box.append(item);
    while (box.children.length > 4) box.firstElementChild?.remove();
    if (kind !== "error") setTimeout(() => item.remove(), 8000);
  }
}

/**
 * What a waiting call asks: the model's `remember` as a sentence, any
 * other tool with its arguments.
 * @param {Confirm} item
 */
function confirmText(item) {
  const text = el("span", "confirm-text");
  const fact = item.args?.text;
  if (item.tool === "remember" && typeof fact === "string") {
    text.append(el("b", "", "Remember:"), ` “${fact}”?`);
    return text;
  }
  const args = typeof item.args === "string"
    ? item.args
    : JSON.stringify(item.args ?? {});
  text.append(
    "Run ",
    el("b", "", String(item.tool ?? "a tool")),
    " with ",
    el("code", "", args.length > 400 ? `${args.slice(0, 400)}…` : args),
    "?",
  );
  return text;
}

/**
 * One waiting call: what it runs, Allow and Deny.
 * @param {Confirm} item
 */
function confirmRow(item) {
  const row = el("div", "confirm");
  row.dataset.call = String(item.call);
  const text = confirmText(item);
  const allow = el("button", "allow", "Allow");
  allow.type = "button";
  const deny = el("button", "deny", "Deny");
  deny.type = "button";
  row.append(text, allow, deny);
  return row;
}

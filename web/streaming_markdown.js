// @ts-check
/// <reference lib="dom" />
/**
 * A reply drawn while it streams: the blocks already complete are drawn
 * once and kept, and only the block still growing is drawn again, so each
 * draw costs the length of the last block, not of the whole reply.
 */
import { renderMarkdown } from "./markdown.js";

/** A fence line: ``` or ~~~, indented at most three spaces. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** A line that may carry on the block before a blank line: a list item, an indented line, a table row, a quote. */
const CARRIES_ON = /^([ \t]|[-*+][ \t]|\d{1,9}[.)][ \t]|\||>)/;

/**
 * A block counts as complete at a blank line outside a code fence that is
 * followed by a line starting a new block. The finished turn is drawn whole
 * again (renderMarkdown), which settles anything the split drew
 * differently, such as a link whose reference is defined further down.
 */
export class StreamingMarkdown {
  #stable;
  #tail;
  #text = "";
  #cut = 0;
  #scanned = 0;
  #inFence = false;
  #afterBlank = false;

  /** Draws into `element`, which it empties. */
  constructor(/** @type {HTMLElement} */ element) {
    this.#stable = document.createElement("div");
    this.#tail = document.createElement("div");
    this.#stable.className = "md-done";
    this.#tail.className = "md-tail";
    element.replaceChildren(this.#stable, this.#tail);
  }

  /** Draws `text`, which extends what was drawn before. */
  update(/** @type {string} */ text) {
    this.#draw(text, false);
  }

  /**
   * Draws the reply's final text, which extends what was drawn before, as
   * a render of the whole would: a code block left open is highlighted.
   */
  finish(/** @type {string} */ text) {
    this.#draw(text, true);
  }

  /** @param {string} text @param {boolean} final */
  #draw(text, final) {
    if (text.length < this.#text.length) {
      // Not a continuation (never while streaming): draw it afresh.
      this.#stable.replaceChildren();
      this.#cut = this.#scanned = 0;
      this.#inFence = this.#afterBlank = false;
    }
    this.#text = text;
    let cut = this.#cut;
    let at = this.#scanned;
    for (
      let end = text.indexOf("\n", at);
      end !== -1;
      end = text.indexOf("\n", at)
    ) {
      const line = text.slice(at, end);
      const blank = line.trim() === "";
      if (
        !this.#inFence && this.#afterBlank && !blank && !CARRIES_ON.test(line)
      ) {
        cut = at;
      }
      if (FENCE.test(line)) this.#inFence = !this.#inFence;
      this.#afterBlank = blank && !this.#inFence;
      at = end + 1;
    }
    this.#scanned = at;
    if (cut > this.#cut) {
      this.#stable.insertAdjacentHTML(
        "beforeend",
        renderMarkdown(text.slice(this.#cut, cut)),
      );
      this.#cut = cut;
    }
    // A code block still open is drawn plain until it closes.
    this.#tail.innerHTML = renderMarkdown(text.slice(this.#cut), {
      open: this.#inFence && !final,
    });
  }
}

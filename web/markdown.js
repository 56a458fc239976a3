/**
 * Markdown for the model's replies, through markdown-it (vendored, see
 * vendor/README.md) with raw HTML off: a tag the model writes is shown as
 * text. Links are kept only for http, https and mailto and open in a new
 * tab without a referrer; an image becomes a link to it, so nothing is
 * fetched from outside the machine to draw a reply.
 */
import MarkdownIt from "./vendor/markdown-it.esm.min.mjs";

const SAFE_LINK = /^(https?:|mailto:)/i;

const md = new MarkdownIt({
  html: false,
  linkify: true,
  typographer: false,
  breaks: false,
});

// Stricter than markdown-it's own check, which lets relative and some
// data: URLs through: a reply links only to the web or to mail.
md.validateLink = (url) => SAFE_LINK.test(url.trim());

const escape = md.utils.escapeHtml;

md.renderer.rules.link_open = (tokens, index, options, _env, self) => {
  const token = tokens[index];
  token.attrSet("target", "_blank");
  token.attrSet("rel", "noopener noreferrer nofollow");
  return self.renderToken(tokens, index, options);
};

md.renderer.rules.image = (tokens, index) => {
  const token = tokens[index];
  const src = token.attrGet("src") ?? "";
  const alt = token.children?.map((child) => child.content).join("") ||
    token.content || src;
  return `<a class="image-link" href="${
    escape(src)
  }" target="_blank" rel="noopener noreferrer nofollow">image: ${
    escape(alt)
  }</a>`;
};

/**
 * Renders one reply with every kind of block once, while the page is idle:
 * the first table or code block a real reply brings would otherwise pay
 * for compiling the parser's code (tens of ms) in the middle of a stream.
 */
export function warmUp() {
  md.render(
    "# h\n\n**b** *i* `c` [l](https://example.com) www.example.com\n\n" +
      "- a\n- b\n\n1. a\n2. b\n\n> q\n\n```js\nx\n```\n\n    code\n\n" +
      "| a | b |\n| - | - |\n| 1 | 2 |\n\n---\n\n~~s~~ ![i](https://example.com/i.png)\n",
  );
}

/** The HTML of a reply's Markdown; safe to assign to innerHTML. */
export function renderMarkdown(text) {
  return md.render(text);
}

/** A fence line: ``` or ~~~, indented at most three spaces. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** A line that may carry on the block before a blank line: a list item, an indented line, a table row, a quote. */
const CARRIES_ON = /^([ \t]|[-*+][ \t]|\d{1,9}[.)][ \t]|\||>)/;

/**
 * A reply drawn while it streams: the blocks already complete are drawn
 * once and kept, and only the block still growing is drawn again, so each
 * draw costs the length of the last block, not of the whole reply. A block
 * counts as complete at a blank line outside a code fence that is followed
 * by a line starting a new block. The finished turn is drawn whole again
 * (renderMarkdown), which settles anything the split drew differently,
 * such as a link whose reference is defined further down.
 */
export class StreamingMarkdown {
  #stable;
  #tail;
  #text = "";
  #cut = 0;
  #scanned = 0;
  #inFence = false;
  #afterBlank = false;

  constructor(element) {
    this.#stable = document.createElement("div");
    this.#tail = document.createElement("div");
    this.#stable.className = "md-done";
    this.#tail.className = "md-tail";
    element.replaceChildren(this.#stable, this.#tail);
  }

  /** Draws `text`, which extends what was drawn before. */
  update(text) {
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
        md.render(text.slice(this.#cut, cut)),
      );
      this.#cut = cut;
    }
    this.#tail.innerHTML = md.render(text.slice(this.#cut));
  }
}

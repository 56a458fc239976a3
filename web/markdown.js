// @ts-check
/**
 * Markdown for the model's replies, through markdown-it (vendored, see
 * vendor/README.md) with raw HTML off: a tag the model writes is shown as
 * text. Links are kept only for http, https and mailto and open in a new
 * tab without a referrer; an image becomes a link to it, so nothing is
 * fetched from outside the machine to draw a reply. Code blocks are
 * highlighted (highlight.js, vendored) under a head with their language
 * and a copy button; task list items are drawn as checkboxes. No DOM here.
 */
import MarkdownIt from "./vendor/markdown-it.esm.min.mjs";
import hljs from "./vendor/highlight.esm.min.js";

const SAFE_LINK = /^(https?:|mailto:)/i;

/**
 * @typedef {{type: string, info: string, content: string, level: number,
 *   meta: any, children: Token[] | null, attrGet(name: string): string | null,
 *   attrSet(name: string, value: string): void,
 *   attrJoin(name: string, value: string): void}} Token
 */
/** @typedef {(tokens: Token[], index: number, options: unknown, env: unknown, self: any) => string} Rule */

/**
 * The part of markdown-it's API the page uses (its browser build ships no
 * types).
 * @typedef {{render(text: string, env?: RenderEnv): string,
 *   validateLink: (url: string) => boolean,
 *   utils: {escapeHtml(text: string): string},
 *   renderer: {rules: Record<string, Rule>},
 *   core: {ruler: {after(name: string, rule: string,
 *     run: (state: any) => void): void}}}} MarkdownParser
 */
/**
 * What a render is told: `open` when the text ends inside a code fence that
 * is still streaming.
 * @typedef {{open?: boolean}} RenderEnv
 */
/** @type {new (options: Record<string, boolean>) => MarkdownParser} */
const Parser = /** @type {any} */ (MarkdownIt);

const md = new Parser({
  html: false,
  linkify: true,
  typographer: false,
  breaks: false,
});

// Stricter than markdown-it's own check, which lets relative and some
// data: URLs through: a reply links only to the web or to mail.
md.validateLink = (/** @type {string} */ url) => SAFE_LINK.test(url.trim());

/** @type {(text: string) => string} */
const escape = md.utils.escapeHtml;

/** @type {Rule} */
const linkOpen = (tokens, index, options, _env, self) => {
  const token = /** @type {Token} */ (tokens[index]);
  token.attrSet("target", "_blank");
  token.attrSet("rel", "noopener noreferrer nofollow");
  return self.renderToken(tokens, index, options);
};
md.renderer.rules.link_open = linkOpen;

/** @type {Rule} */
const image = (tokens, index) => {
  const token = /** @type {Token} */ (tokens[index]);
  const src = token.attrGet("src") ?? "";
  const alt = token.children?.map((child) => child.content).join("") ||
    token.content || src;
  return `<a class="image-link" href="${
    escape(src)
  }" target="_blank" rel="noopener noreferrer nofollow">image: ${
    escape(alt)
  }</a>`;
};
md.renderer.rules.image = image;

/**
 * A fenced or indented code block: highlighted when its language is one
 * highlight.js knows (the page never guesses one: a guess is slow and often
 * wrong), with the language named and a copy button above it. A block still
 * streaming (the render's text ends inside it) is drawn plain: highlighting
 * it again at every draw would cost its whole length each time; it is
 * highlighted once it closes.
 * @type {Rule}
 */
const codeBlock = (tokens, index, _options, env) => {
  const token = /** @type {Token} */ (tokens[index]);
  const lang = (token.info ?? "").trim().split(/\s+/)[0] ?? "";
  const open = /** @type {RenderEnv | undefined} */ (env)?.open === true &&
    !tokens.slice(index + 1).some((later) =>
      later.type === "fence" || later.type === "code_block"
    );
  const known = !open && lang !== "" && hljs.getLanguage(lang) !== undefined;
  const body = known
    ? hljs.highlight(token.content, { language: lang, ignoreIllegals: true })
      .value
    : escape(token.content);
  const className = known
    ? `hljs language-${escape(lang.toLowerCase())}`
    : "hljs";
  return `<div class="code-block"><div class="code-head"><span class="code-lang">${
    escape(lang || "text")
  }</span><button type="button" class="copy" title="Copy the code">Copy</button></div><pre><code class="${className}">${body}</code></pre></div>\n`;
};
md.renderer.rules.fence = codeBlock;
md.renderer.rules.code_block = codeBlock;

/** A task list item's start: `[ ]` or `[x]` and a space. */
const TASK = /^\[([ xX])\][ \u00a0]/;

/**
 * Task list items (`- [ ] to do`, `- [x] done`) become items with a
 * disabled checkbox: a token of the page's own, so raw HTML stays off.
 * @param {{tokens: Token[], Token: new (type: string, tag: string, nesting: number) => Token}} state
 */
function taskLists(state) {
  const tokens = state.tokens;
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i];
    const item = tokens[i - 2];
    if (
      inline?.type !== "inline" || tokens[i - 1]?.type !== "paragraph_open" ||
      item?.type !== "list_item_open"
    ) continue;
    const first = inline.children?.[0];
    const found = first?.type === "text" ? TASK.exec(first.content) : null;
    if (!first || !found) continue;
    first.content = first.content.slice(found[0].length);
    const box = new state.Token("task_box", "input", 0);
    box.meta = { checked: found[1] !== " " };
    inline.children?.unshift(box);
    item.attrJoin("class", "task-item");
    for (let j = i - 3; j >= 0; j--) {
      const list = tokens[j];
      if (list?.type.endsWith("_list_open") && list.level === item.level - 1) {
        if (!list.attrGet("class")?.includes("task-list")) {
          list.attrJoin("class", "task-list");
        }
        break;
      }
    }
  }
}
md.core.ruler.after("text_join", "task_lists", taskLists);

/** @type {Rule} */
const taskBox = (tokens, index) =>
  `<input type="checkbox" class="task-box" disabled${
    tokens[index]?.meta?.checked ? " checked" : ""
  } aria-label="${tokens[index]?.meta?.checked ? "done" : "to do"}"> `;
md.renderer.rules.task_box = taskBox;

/**
 * Renders one reply with every kind of block once, while the page is idle:
 * the first table or code block a real reply brings would otherwise pay
 * for compiling the parser's code (tens of ms) in the middle of a stream.
 */
export function warmUp() {
  md.render(
    "# h\n\n**b** *i* `c` [l](https://example.com) www.example.com\n\n" +
      "- a\n- [x] b\n\n1. a\n2. b\n\n> q\n\n```js\nx\n```\n\n    code\n\n" +
      "| a | b |\n| - | - |\n| 1 | 2 |\n\n---\n\n~~s~~ ![i](https://example.com/i.png)\n",
  );
}

/** The HTML of a reply's Markdown; safe to assign to innerHTML. `open`: the text ends inside a code block still streaming. */
export function renderMarkdown(
  /** @type {string} */ text,
  /** @type {RenderEnv} */ env = {},
) {
  return md.render(text, env);
}

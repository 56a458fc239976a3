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

/** The HTML of a reply's Markdown; safe to assign to innerHTML. */
export function renderMarkdown(text) {
  return md.render(text);
}

// @ts-check
/// <reference lib="dom" />
/** Small DOM helpers every part of the view uses. */

/**
 * The element with this id; the page's HTML has each one the script names.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @returns {T}
 */
export function $(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`The page has no #${id}`);
  return /** @type {T} */ (node);
}

/**
 * A new element with a class and text (as text, never HTML).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} [className]
 * @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * A button of the page's own (never a form's submit).
 * @param {string} className
 * @param {string} text
 * @param {string} title
 */
export function button(className, text, title) {
  const node = el("button", className, text);
  node.type = "button";
  node.title = title;
  return node;
}

/** Numbers as the page writes them: 12,345. */
export const numbers = new Intl.NumberFormat("en-US");

/**
 * Makes `parent`'s children exactly `nodes`, moving only those out of
 * place: a node taken out and put back is styled and laid out afresh,
 * which for a long reply is a frame's work.
 * @param {Element} parent
 * @param {Node[]} nodes
 */
export function placeChildren(parent, nodes) {
  let at = parent.firstChild;
  for (const node of nodes) {
    if (at === node) at = at.nextSibling;
    else parent.insertBefore(node, at);
  }
  while (at) {
    const next = at.nextSibling;
    at.remove();
    at = next;
  }
}

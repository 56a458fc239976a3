/**
 * Measurements a person would make of the page, run inside the browser:
 * what overflows its box or the screen, where the conversation is, how a
 * table's words break, and the contrast of text against what is behind it.
 * Each is a script for `page.evaluate`, since it reads the real layout and
 * computed styles.
 */
import type { Page } from "../support/puppeteer.ts";

/** One element whose text does not fit. */
export interface Overflow {
  what: string;
  text: string;
  detail: string;
}

/** One text's contrast against its background. */
export interface Contrast {
  what: string;
  text: string;
  ratio: number;
  color: string;
  background: string;
}

/** An element's box on screen, in CSS pixels. */
export interface Box {
  top: number;
  bottom: number;
  left: number;
  right: number;
  height: number;
  width: number;
}

/** Runs a script in the page and returns its value as `T`. */
async function run<T>(page: Page, script: string): Promise<T> {
  return await page.evaluate(script) as T;
}

const DESCRIBE = `
const describe = (node) => node.tagName.toLowerCase() +
  (node.id ? "#" + node.id : "") +
  (typeof node.className === "string" && node.className
    ? "." + node.className.trim().split(/\\s+/).join(".") : "");
const shown = (node) => {
  const style = getComputedStyle(node);
  if (style.display === "none" || style.visibility === "hidden") return false;
  const rect = node.getBoundingClientRect();
  return rect.width > 0 && rect.height > 0;
};
const ownText = (node) => [...node.childNodes]
  .filter((child) => child.nodeType === 3)
  .map((child) => child.textContent).join("").trim();
`;

/**
 * Every shown element with text of its own that is wider than its box, or
 * that reaches past the screen's edges, outside what scrolls on purpose
 * (code, tables, the sidebar's list) and outside a closed drawer.
 */
export async function overflows(page: Page): Promise<Overflow[]> {
  return await run<Overflow[]>(
    page,
    `(() => {
    ${DESCRIBE}
    const scrolls = (node) => {
      for (let at = node.parentElement; at; at = at.parentElement) {
        const style = getComputedStyle(at);
        if (["auto", "scroll"].includes(style.overflowX) && at.id !== "log") {
          return true;
        }
      }
      return false;
    };
    const found = [];
    const width = document.documentElement.clientWidth;
    for (const node of document.querySelectorAll("body *")) {
      const text = ownText(node);
      if (text === "" || !shown(node) || scrolls(node)) continue;
      const rect = node.getBoundingClientRect();
      const style = getComputedStyle(node);
      const cut = node.scrollWidth > node.clientWidth + 1 &&
        style.display !== "inline" && style.overflowX !== "visible";
      if (cut) {
        found.push({ what: describe(node), text: text.slice(0, 60),
          detail: "scrollWidth " + node.scrollWidth + " > clientWidth " + node.clientWidth });
      }
      if (rect.right > width + 1 || rect.left < -1) {
        found.push({ what: describe(node), text: text.slice(0, 60),
          detail: "from " + Math.round(rect.left) + " to " + Math.round(rect.right) + " on a screen " + width + " wide" });
      }
    }
    return found;
  })()`,
  );
}

/** The words of table cells that the layout broke across lines. */
export async function brokenCellWords(page: Page): Promise<string[]> {
  return await run<string[]>(
    page,
    `(() => {
    const broken = [];
    for (const cell of document.querySelectorAll(".md td, .md th")) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        const value = text.textContent;
        for (const match of value.matchAll(/\\S+/g)) {
          const range = document.createRange();
          range.setStart(text, match.index);
          range.setEnd(text, match.index + match[0].length);
          const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (lines.size > 1) broken.push(match[0]);
        }
      }
    }
    return broken;
  })()`,
  );
}

/** The box of the first element matching, in CSS pixels, or null. */
export async function box(
  page: Page,
  selector: string,
): Promise<Box | null> {
  return await run<Box | null>(
    page,
    `(() => {
    const node = document.querySelector(${JSON.stringify(selector)});
    if (!node) return null;
    const r = node.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height, width: r.width };
  })()`,
  );
}

/**
 * The contrast (WCAG 2) of every shown, enabled element with text of its
 * own among `selectors`, against the first opaque background behind it
 * (translucent ones blended in).
 */
export async function contrasts(
  page: Page,
  selectors: string[],
): Promise<Contrast[]> {
  return await run<Contrast[]>(
    page,
    `(() => {
    ${DESCRIBE}
    const parse = (value) => {
      const m = value.match(/rgba?\\(([^)]+)\\)/);
      if (!m) return [0, 0, 0, 0];
      const parts = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
      return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
    };
    const over = (top, under) => {
      const a = top[3];
      return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1);
    };
    const behind = (node) => {
      const layers = [];
      for (let at = node; at; at = at.parentElement) {
        const bg = parse(getComputedStyle(at).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] >= 1) break;
      }
      let color = [255, 255, 255, 1];
      if (layers.length && layers[layers.length - 1][3] >= 1) color = layers.pop();
      for (const layer of layers.reverse()) color = over(layer, color);
      return color;
    };
    const luminance = ([r, g, b]) => {
      const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const faded = (node) => {
      for (let at = node; at; at = at.parentElement) {
        if (Number(getComputedStyle(at).opacity) < 1) return true;
      }
      return false;
    };
    const found = [];
    for (const selector of ${JSON.stringify(selectors)}) {
      for (const node of document.querySelectorAll(selector)) {
        const text = ownText(node);
        if (text === "" || !shown(node) || node.disabled || faded(node)) continue;
        const bg = behind(node);
        const fg = over(parse(getComputedStyle(node).color), bg);
        const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
        found.push({ what: describe(node), text: text.slice(0, 40),
          ratio: Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100,
          color: "rgb(" + fg.slice(0, 3).map(Math.round).join(",") + ")",
          background: "rgb(" + bg.slice(0, 3).map(Math.round).join(",") + ")" });
      }
    }
    return found;
  })()`,
  );
}

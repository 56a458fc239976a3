/**
 * The page as a newcomer sees it on a phone (390×844), half a laptop
 * screen (640×900) and a whole one (1280×900), in light and dark: room for
 * the conversation, no text past its box, tables that break between words,
 * the newest question in view, a footer on one line, and text contrast of
 * at least 4.5:1. Against a scripted daemon with a realistic conversation
 * (tests/web/conversation_fixture.ts), in a real Chromium.
 */
import assert from "node:assert/strict";
import type { Page } from "../support/puppeteer.ts";
import {
  LISTED,
  liveTurn,
  richHello,
  SUMMARY_EVENT,
} from "./conversation_fixture.ts";
import { box, brokenCellWords, contrasts, overflows } from "./measure.ts";
import { pageTest, POLL, shows, stack } from "./scripted_daemon.ts";

const PHONE = { width: 390, height: 844 };
const HALF = { width: 640, height: 900 };
const WIDE = { width: 1280, height: 900 };

/** The page at `viewport` showing the realistic conversation, its last turn finished. */
async function rich(viewport: { width: number; height: number }) {
  const s = await stack(richHello(), viewport);
  await s.daemon.send(
    { type: "conversations", items: LISTED },
    SUMMARY_EVENT,
    ...liveTurn(),
  );
  await shows(s.page, ".turn.last .figures", "tokens/s");
  await shows(s.page, "#list", "Sorting a list of dicts");
  return s;
}

/** Waits until the drawer's left edge passes `ok` (it slides in and out). */
async function drawerAt(page: Page, ok: (left: number) => boolean) {
  await page.waitForFunction(
    `(${ok.toString()})(document.getElementById("sidebar").getBoundingClientRect().left)`,
    POLL,
  );
}

/** The main controls and texts whose contrast a reader depends on. */
const TEXTS = [
  "#send",
  "#new",
  "#private",
  "#listen",
  "#conv-actions button",
  "#help",
  ".brand",
  ".label",
  ".conv-title",
  ".conv-date",
  "#title",
  ".pill",
  "#ctx-text",
  ".who",
  ".question .text",
  ".reply p",
  ".reply li",
  ".reply td",
  ".reply th",
  ".reply h2",
  ".md code",
  ".code-lang",
  ".copy",
  ".hljs span",
  ".figures",
  ".note",
  "li.tool",
  ".turn-actions button",
  ".summary-block summary",
  "#keys",
  ".confirm-text",
  ".confirm button",
  ".conv-snippet mark",
];

async function checkContrast(page: Page, theme: string): Promise<void> {
  const found = await contrasts(page, TEXTS);
  assert.ok(found.length > 25, `only ${found.length} texts were measured`);
  const low = found.filter((c) => c.ratio < 4.5);
  assert.deepEqual(low, [], `${theme}: text below 4.5:1`);
}

pageTest(
  "at 390x844 the conversation has half the screen, nothing overflows, and the newest question stays above the approval",
  async () => {
    await using s = await rich(PHONE);
    const { page, daemon } = s;
    const log = (await box(page, "#log"))!;
    assert.ok(
      log.height >= PHONE.height / 2,
      `the conversation gets ${log.height}px of ${PHONE.height}`,
    );
    assert.deepEqual(await overflows(page), []);
    // The title is whole, not "W.".
    const title = await page.$eval("#title", (node) => {
      const el = node as unknown as {
        scrollWidth: number;
        clientWidth: number;
      };
      return el.scrollWidth <= el.clientWidth;
    });
    assert.ok(title, "the title fits");
    // The sidebar is a drawer, out of the way until asked for.
    assert.ok((await box(page, "#sidebar"))!.right <= 0, "the drawer is shut");
    await page.click("#menu");
    await drawerAt(page, (left) => left >= 0);
    await page.keyboard.press("Escape");
    await drawerAt(page, (left) => left <= -300);

    // A question, then an approval box below the conversation.
    await daemon.send(
      { type: "user", text: "Check the weather in Paris too?" },
      { type: "state", state: "confirm" },
      {
        type: "confirm",
        call: "c1",
        tool: "weather",
        args: { place: "Paris", days: 3, units: "metric" },
      },
    );
    await shows(page, "#confirms", "Run weather");
    await shows(page, ".turn.live .question", "Check the weather in Paris");
    const question = (await box(page, ".turn.live .question"))!;
    const after = (await box(page, "#log"))!;
    assert.ok(
      question.top >= after.top - 1 && question.bottom <= after.bottom + 1,
      `the question (${question.top}–${question.bottom}) is in the conversation's view (${after.top}–${after.bottom})`,
    );
    assert.deepEqual(await overflows(page), []);
  },
);

pageTest(
  "at 640x900 the conversation starts at the top and table cells break between words only",
  async () => {
    await using s = await rich(HALF);
    const { page } = s;
    const log = (await box(page, "#log"))!;
    assert.ok(log.top < 120, `the conversation starts ${log.top}px down`);
    assert.ok(log.height >= HALF.height * 0.6);
    assert.deepEqual(await brokenCellWords(page), []);
    assert.deepEqual(await overflows(page), []);
  },
);

pageTest(
  "at 1280x900 the footer keeps to one line and the sidebar stands beside the conversation",
  async () => {
    await using s = await rich(WIDE);
    const { page } = s;
    const footer = await page.$eval("#keys", (node) => {
      const el = node as unknown as {
        clientHeight: number;
        scrollWidth: number;
        clientWidth: number;
      };
      const style = (globalThis as unknown as {
        getComputedStyle(n: unknown): { lineHeight: string; fontSize: string };
      }).getComputedStyle(node);
      const line = Number.parseFloat(style.lineHeight) ||
        Number.parseFloat(style.fontSize) * 1.3;
      return {
        lines: el.clientHeight / line,
        fits: el.scrollWidth <= el.clientWidth,
      };
    });
    assert.ok(footer.fits, "the footer's text fits");
    assert.ok(footer.lines < 2.5, `the footer is ${footer.lines} lines tall`);
    assert.ok((await box(page, "#sidebar"))!.left >= 0);
    assert.ok((await box(page, "#log"))!.left >= 280);
    assert.deepEqual(await brokenCellWords(page), []);
    assert.deepEqual(await overflows(page), []);
  },
);

pageTest(
  "text contrast is at least 4.5:1 in the light and the dark theme",
  async () => {
    await using s = await rich(WIDE);
    const { page, daemon } = s;
    // An approval and a search result, so their colours are measured too.
    await daemon.send(
      { type: "user", text: "Paris?" },
      { type: "state", state: "confirm" },
      {
        type: "confirm",
        call: "c2",
        tool: "weather",
        args: { place: "Paris" },
      },
    );
    await shows(page, "#confirms", "Run weather");
    for (const theme of ["light", "dark"]) {
      await page.emulateMediaFeatures([
        { name: "prefers-color-scheme", value: theme },
      ]);
      await checkContrast(page, theme);
    }
  },
);

/**
 * Search by meaning in the sidebar, in a real Chromium at 1280 and 390 px
 * wide, against a scripted daemon (docs/protocol.md, "Search by
 * meaning"): results found by meaning tagged so, "words only" sending
 * `by: "words"`, a daemon that answers `meaning_off` losing the choice,
 * and the indexing line while it runs and gone at its end.
 */
import assert from "node:assert/strict";
import type { Page } from "../support/puppeteer.ts";
import { screenshot } from "../support/browser.ts";
import { LISTED } from "./conversation_fixture.ts";
import { SIZES } from "./file_steps.ts";
import { focused, notices, texts } from "./memory_steps.ts";
import { overflows } from "./measure.ts";
import { hidden, pageTest, POLL, shows, stack } from "./scripted_daemon.ts";

/** Ctrl+K, which opens the drawer on a narrow screen, and a query typed. */
async function search(page: Page, q: string) {
  await page.keyboard.down("Control");
  await page.keyboard.press("KeyK");
  await page.keyboard.up("Control");
  assert.equal(await focused(page), "search", "Ctrl+K puts the focus there");
  await page.keyboard.type(q);
}

/** What the results say, one line per entry: title, tag, snippet. */
function entries(page: Page) {
  return page.$$eval(
    "#list button.conv",
    (buttons) =>
      buttons.map((b) =>
        [...b.children].map((part) => part.textContent).join(" | ")
      ),
  );
}

const FERRY = [
  {
    id: 5,
    title: "Unix sockets versus TCP on loopback",
    snippet: "the **ferry** of bytes",
    text: "the ferry of bytes",
    marks: [[4, 9]],
    by: "words",
  },
  {
    id: 6,
    title: "Weather for the weekend in Lyon",
    snippet: "take the **ferry** across the lake",
    text: "take the ferry across the lake",
    marks: [[9, 14]],
    by: "both",
  },
  {
    id: 4,
    title: "A recipe for buckwheat pancakes",
    snippet: "we crossed by boat to the island",
    text: "we crossed by boat to the island",
    marks: [],
    by: "meaning",
  },
];

pageTest(
  "results found by meaning are tagged, and words only searches by words, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({ id: 7, turns: [], memories: 0 }, size);
      const { page, daemon, browser } = s;
      await daemon.send({ type: "conversations", items: LISTED });
      await shows(page, "#list", "A recipe for buckwheat pancakes");
      assert.equal(await hidden(page, "#words-only-box"), true);
      await search(page, "ferry");
      const first = await daemon.command("search");
      assert.deepEqual([first.q, first.by], ["ferry", undefined]);
      await daemon.send({ type: "results", items: FERRY, ref: first.ref });
      await shows(page, "#list", "we crossed by boat");
      assert.deepEqual(await entries(page), [
        "Unix sockets versus TCP on loopback | the ferry of bytes",
        "Weather for the weekend in Lyon | also by meaning | take the ferry across the lake",
        "A recipe for buckwheat pancakes | by meaning | we crossed by boat to the island",
      ]);
      assert.deepEqual(await texts(page, "#list mark"), ["ferry", "ferry"]);
      assert.equal(await hidden(page, "#words-only-box"), false);
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await screenshot(page, `44-search-by-meaning-${size.name}`);

      // Words only, from the keyboard: Tab from the field, Space.
      await page.keyboard.press("Tab");
      assert.equal(await focused(page), "words-only");
      await page.keyboard.press("Space");
      const words = await daemon.command("search");
      assert.deepEqual([words.q, words.by], ["ferry", "words"]);
      await daemon.send({
        type: "results",
        items: [FERRY[0]!, { ...FERRY[1]!, by: "words" }],
        ref: words.ref,
      });
      await page.waitForFunction(
        `document.querySelectorAll("#list button.conv").length === 2`,
        POLL,
      );
      assert.deepEqual(await texts(page, "#list .by-tag"), []);
      // Typed on, still by words.
      await page.focus("#search");
      await page.keyboard.type("s");
      const more = await daemon.command("search");
      assert.deepEqual([more.q, more.by], ["ferrys", "words"]);
      assert.deepEqual(browser.errors, []);
    }
  },
);

pageTest(
  "a daemon that answers meaning_off loses words only, and the query is asked again without it",
  async () => {
    await using s = await stack({ id: 7, turns: [], memories: 0 });
    const { page, daemon } = s;
    await search(page, "ferry");
    const first = await daemon.command("search");
    await daemon.send({ type: "results", items: FERRY, ref: first.ref });
    await shows(page, "#list", "we crossed by boat");
    await page.click("#words-only");
    const words = await daemon.command("search");
    assert.equal(words.by, "words");
    await daemon.send({
      type: "results",
      items: [FERRY[0]!],
      ref: words.ref,
    });
    await page.waitForFunction(
      `document.querySelectorAll("#list button.conv").length === 1`,
      POLL,
    );
    // Typed on: the daemon now says it has no search by meaning.
    await page.focus("#search");
    await page.keyboard.type("s");
    const typed = await daemon.command("search");
    assert.deepEqual([typed.q, typed.by], ["ferrys", "words"]);
    await daemon.send({
      type: "error",
      code: "meaning_off",
      message:
        "search by meaning is off: set embed_url to an embeddings endpoint",
      ref: typed.ref,
    });
    const again = await daemon.command("search");
    assert.deepEqual([again.q, again.by], ["ferrys", undefined]);
    assert.equal(await hidden(page, "#words-only-box"), true);
    await daemon.send({
      type: "results",
      items: [{ id: 5, title: "Sockets", snippet: "the **ferry**" }],
      ref: again.ref,
    });
    await shows(page, "#list", "Sockets");
    assert.equal(await hidden(page, "#words-only-box"), true);
    assert.deepEqual(await notices(page), []);
  },
);

pageTest(
  "indexing shows as a line at the foot of the sidebar while it runs, and is gone at its end, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({
        id: 7,
        turns: [],
        memories: 0,
        indexing: { done: 1_200, total: 5_000 },
      }, size);
      const { page, daemon } = s;
      await daemon.send({ type: "conversations", items: LISTED });
      if (size.width < 760) {
        await page.click("#menu");
        await page.waitForFunction(
          `document.getElementById("sidebar").getBoundingClientRect().left >= 0`,
          POLL,
        );
      }
      await shows(
        page,
        "#indexing",
        "Indexing for search by meaning: 1,200 of 5,000 turns",
      );
      assert.equal(
        await page.$eval("#indexing-bar", (n) => {
          const bar = n as unknown as { value: number; max: number };
          return bar.value / bar.max;
        }),
        0.24,
      );
      // The list above it keeps its place.
      await shows(page, "#list", "Sorting a list of dicts");
      const before = await page.$eval(
        "#list li:first-child",
        (n) => n.getBoundingClientRect().top,
      );
      assert.ok(before > 0, `the first entry is ${before}px down`);
      await daemon.send({ type: "indexing", done: 3_000, total: 5_000 });
      await shows(page, "#indexing", "3,000 of 5,000");
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await screenshot(page, `45-indexing-${size.name}`);
      await daemon.send({ type: "indexing", done: 5_000, total: 5_000 });
      await page.waitForFunction(
        `document.getElementById("indexing").hidden`,
        POLL,
      );
      assert.equal(
        await page.$eval(
          "#list li:first-child",
          (n) => n.getBoundingClientRect().top,
        ),
        before,
      );
    }
  },
);

/**
 * The memories panel, the proposal cards and search by meaning as a reader
 * measures them, at 390x844, 640x900 and 1280x900 in the light and the
 * dark theme: no text past its box or the screen, the panel within the
 * screen with its list reachable, the question's input in view beside the
 * cards, and text contrast of at least 4.5:1. Against a scripted daemon
 * with the realistic conversation (tests/web/memory_scene.ts).
 */
import assert from "node:assert/strict";
import { box, contrasts, overflows } from "./measure.ts";
import { memoryScene } from "./memory_scene.ts";
import { pageTest, POLL } from "./scripted_daemon.ts";

const SIZES = [
  { name: "390", width: 390, height: 844 },
  { name: "640", width: 640, height: 900 },
  { name: "1280", width: 1280, height: 900 },
];

/** The texts of the memories, the cards and search by meaning. */
const TEXTS = [
  "#memories-count",
  "#memories-open",
  ".panel-head h2",
  "#memories-total",
  ".panel-note",
  "#memories-export",
  "#memories-close",
  "#memory-add-button",
  ".memory-text",
  ".memory-meta span",
  ".memory-meta .source",
  ".memory-actions button",
  ".proposal-text",
  ".proposal-text b",
  ".proposal button",
  ".by-tag",
  "#words-only-box",
  "#indexing-text",
  ".conv-snippet",
];

pageTest(
  "the panel, the cards and search by meaning fit at 390, 640 and 1280 wide, with text contrast of 4.5:1 in both themes",
  async () => {
    for (const size of SIZES) {
      await using s = await memoryScene(size, { panel: true, search: true });
      const { page } = s;
      for (const theme of ["light", "dark"]) {
        await page.emulateMediaFeatures([
          { name: "prefers-color-scheme", value: theme },
        ]);
        assert.deepEqual(await overflows(page), [], `${size.name} ${theme}`);
        const found = await contrasts(page, TEXTS);
        const measured = new Set(found.map((c) => c.text));
        const wanted = ["Remember this?", "Keep", "Prefers metric units"];
        // The sidebar is a closed drawer on a narrow screen.
        if (size.width > 760) wanted.push("by meaning", "words only");
        for (const text of wanted) {
          assert.ok(measured.has(text), `${text} was measured`);
        }
        assert.deepEqual(
          found.filter((c) => c.ratio < 4.5),
          [],
          `${size.name} ${theme}: text below 4.5:1`,
        );
      }
      // The panel stays on screen; its last memory can be scrolled to.
      const panel = (await box(page, "#memories-panel"))!;
      assert.ok(panel.left >= 0 && panel.right <= size.width, "panel inside");
      assert.ok(panel.bottom <= size.height, "panel above the screen's foot");
      await page.$eval("#memory-list", (list) => {
        const node = list as unknown as {
          scrollTop: number;
          scrollHeight: number;
        };
        node.scrollTop = node.scrollHeight;
      });
      const last = (await box(page, "#memory-list li:last-child"))!;
      assert.ok(last.bottom <= panel.bottom + 1, "the last memory in reach");
      // Closed, the cards leave the question's input in view.
      await page.keyboard.press("Escape");
      await page.waitForFunction(
        `document.getElementById("memories-panel").hidden`,
        POLL,
      );
      const input = (await box(page, "#input"))!;
      assert.ok(input.bottom <= size.height, "the input is in view");
      const log = (await box(page, "#log"))!;
      assert.ok(
        log.height >= size.height / 3,
        `${size.name}: the conversation keeps ${log.height}px`,
      );
    }
  },
);

/**
 * The memories panel in a real Chromium at 1280 and 390 px wide, against a
 * scripted daemon that answers as docs/protocol.md says ("Memories"): it
 * lists the memories newest first with their dates and where they came
 * from, adds, rewords, forgets (after a question), exports as Markdown,
 * opens the conversation a memory came from at its turn, tells refusals as
 * the page tells command errors, and goes by keyboard.
 */
import assert from "node:assert/strict";
import { screenshot } from "../support/browser.ts";
import { LISTED, richHello } from "./conversation_fixture.ts";
import { alt, SIZES } from "./file_steps.ts";
import {
  disabled,
  downloads,
  focused,
  gone,
  MEMORIES,
  notices,
  OCTOBER,
  retype,
  texts,
  valueOf,
} from "./memory_steps.ts";
import { box, overflows } from "./measure.ts";
import { hidden, pageTest, POLL, shows, stack } from "./scripted_daemon.ts";

/** The page on conversation 7, carrying two memories; the list answered. */
async function withMemories(size: { width: number; height: number }) {
  const s = await stack({ ...richHello(), memories: 2 }, size);
  await s.daemon.send({ type: "conversations", items: LISTED });
  await shows(s.page, "#list", "Weather for the weekend in Lyon");
  return s;
}

/** A long reply: a conversation that does not fit the screen. */
const LONG = Array.from(
  { length: 40 },
  (_, i) => `Line ${i + 1} of a long answer.`,
).join("\n\n");

pageTest(
  "the memories panel lists, adds, rewords, forgets and exports, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await withMemories(size);
      const { page, daemon, browser } = s;
      await shows(page, "#memories-count", "2 memories");
      await page.click("#memories-count");
      const asked = await daemon.command("memories");
      assert.equal(await hidden(page, "#memories-panel"), false);
      await shows(page, "#memories-total", "loading…");
      await daemon.send({ type: "memories", items: MEMORIES, ref: asked.ref });
      await shows(page, "#memories-total", "2 kept");
      assert.deepEqual(await texts(page, ".memory-text"), [
        "Works on a project called Tern",
        "Prefers metric units",
      ]);
      const meta = await texts(page, ".memory-meta");
      assert.match(meta[0]!, /2025/, "its date");
      assert.match(meta[0]!, /from “Weather for the weekend in Lyon”/);
      assert.doesNotMatch(meta[1]!, /from/, "no source, no link");
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await screenshot(page, `40-memories-${size.name}`);

      // Added: the field empties once the daemon has kept it.
      assert.equal(await focused(page), "memory-text");
      await page.keyboard.type("  I cycle to work  ");
      await page.keyboard.press("Enter");
      const add = await daemon.command("remember");
      assert.deepEqual([add.text, add.id], ["I cycle to work", undefined]);
      await page.waitForSelector("#memory-add-button:disabled");
      const added = {
        id: 3,
        text: "I cycle to work",
        created: OCTOBER + 60,
        updated: OCTOBER + 60,
        source: null,
      };
      await daemon.send({
        type: "memories",
        items: [added, ...MEMORIES],
        ref: add.ref,
      });
      await shows(page, "#memory-list li:first-child", "I cycle to work");
      assert.equal(
        await valueOf(page, "#memory-text"),
        "",
      );

      // A refusal is told, and what was typed stays to be fixed.
      await page.keyboard.type("Too long, says the daemon");
      await page.keyboard.press("Enter");
      const refused = await daemon.command("remember");
      await daemon.send({
        type: "error",
        code: "bad_memory",
        message: "bad memory",
        ref: refused.ref,
      });
      await shows(page, "#notices", "bad memory");
      assert.equal(
        await valueOf(page, "#memory-text"),
        "Too long, says the daemon",
      );

      // Reworded in place: Enter saves, and the row says it was edited.
      await page.click('.memory[data-id="2"] button.edit');
      assert.equal(
        await valueOf(page, ".memory-editor"),
        "Works on a project called Tern",
      );
      await retype(page, "Works on Tern and Heron");
      await page.keyboard.press("Enter");
      const edit = await daemon.command("remember");
      assert.deepEqual([edit.id, edit.text], [2, "Works on Tern and Heron"]);
      const edited = {
        ...MEMORIES[0]!,
        text: "Works on Tern and Heron",
        updated: OCTOBER + 120,
      };
      await daemon.send({
        type: "memories",
        items: [edited, added, MEMORIES[1]!],
        ref: edit.ref,
      });
      await shows(page, '.memory[data-id="2"]', "Works on Tern and Heron");
      await shows(page, '.memory[data-id="2"] .memory-meta', "edited");
      assert.deepEqual((await texts(page, ".memory-text"))[0], edited.text);

      // A memory another client forgot meanwhile: told, the editor stays.
      await page.click('.memory[data-id="1"] button.edit');
      await retype(page, "Prefers kilometres");
      await page.keyboard.press("Enter");
      const stale = await daemon.command("remember");
      await daemon.send({
        type: "error",
        code: "no_such_memory",
        message: "no such memory",
        ref: stale.ref,
      });
      await shows(page, "#notices", "no such memory");
      assert.equal(
        await valueOf(page, ".memory-editor"),
        "Prefers kilometres",
      );
      // Esc leaves the editor, not the panel.
      await page.keyboard.press("Escape");
      await gone(page, ".memory-editor");
      assert.equal(await hidden(page, "#memories-panel"), false);

      // Forgotten after a question; "Keep it" keeps it.
      await page.click('.memory[data-id="3"] button.forget');
      await shows(page, '.memory[data-id="3"]', "Forget this?");
      await page.click('.memory[data-id="3"] button.forget-no');
      await gone(page, '.memory[data-id="3"] button.forget-yes');
      assert.equal(
        daemon.received.some((line) => line.type === "forget"),
        false,
      );
      await page.click('.memory[data-id="3"] button.forget');
      await page.click('.memory[data-id="3"] button.forget-yes');
      const forget = await daemon.command("forget");
      assert.equal(forget.id, 3);
      await daemon.send({
        type: "memories",
        items: [edited, MEMORIES[1]!],
        ref: forget.ref,
      });
      await gone(page, '.memory[data-id="3"]');
      await shows(page, "#memories-total", "2 kept");

      // Exported: the daemon's Markdown, downloaded as memories.md.
      await using files = await downloads(page);
      const file = files.next();
      await page.click("#memories-export");
      const exported = await daemon.command("export_memories");
      assert.equal(exported.format, "markdown");
      const markdown =
        "# What the assistant knows about you\n\n- Prefers metric units\n";
      await daemon.send({
        type: "export",
        format: "markdown",
        text: markdown,
        ref: exported.ref,
      });
      assert.deepEqual(await file, { name: "memories.md", text: markdown });
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await screenshot(page, `41-memories-edited-${size.name}`);
      assert.deepEqual(browser.errors, []);
    }
  },
);

pageTest(
  "a memory's source opens its conversation at the turn it came from",
  async () => {
    for (const size of SIZES) {
      await using s = await withMemories(size);
      const { page, daemon } = s;
      await alt(page, "KeyM");
      const asked = await daemon.command("memories");
      await daemon.send({ type: "memories", items: MEMORIES, ref: asked.ref });
      await shows(page, "#memory-list", "Works on a project called Tern");
      await page.click('.memory[data-id="2"] button.source');
      const open = await daemon.command("open");
      assert.equal(open.id, 6);
      assert.equal(await hidden(page, "#memories-panel"), true);
      await daemon.send({
        type: "conversation",
        id: 6,
        turns: [
          { user: "Do I need a coat in Lyon?", reply: LONG, tools: [] },
          { user: "And on Sunday?", reply: LONG, tools: [] },
          { user: "Thanks", reply: LONG, tools: [] },
        ],
        summary: null,
        memories: 2,
        ref: open.ref,
      });
      await shows(page, "#title", "Weather for the weekend in Lyon");
      // Turn 0, not the newest turn an opened conversation shows.
      await page.waitForFunction(
        `(() => {
          const log = document.getElementById("log").getBoundingClientRect();
          const first = document.querySelector(".turn .question").getBoundingClientRect();
          return first.top >= log.top - 1 && first.bottom <= log.bottom + 1;
        })()`,
        { timeout: 15_000, polling: 50 },
      );
      const last = (await box(page, ".turn:last-of-type .question"))!;
      const log = (await box(page, "#log"))!;
      assert.ok(last.top > log.bottom, "the newest turn is out of view");
    }
  },
);

pageTest(
  "the panel by keyboard: Alt+M opens it with the focus in its field, Esc closes it back to the question",
  async () => {
    await using s = await withMemories({ width: 1280, height: 900 });
    const { page, daemon } = s;
    await page.focus("#input");
    await alt(page, "KeyM");
    const asked = await daemon.command("memories");
    assert.equal(await focused(page), "memory-text");
    await daemon.send({ type: "memories", items: MEMORIES, ref: asked.ref });
    await shows(page, "#memory-list", "Prefers metric units");
    // Forgotten by keys: Tab to Forget, the question's "Keep it" has the
    // focus, Shift+Tab and Enter forget; the focus goes on to the next.
    await page.focus('.memory[data-id="2"] button.forget');
    await page.keyboard.press("Enter");
    await shows(page, '.memory[data-id="2"]', "Forget this?");
    assert.equal(
      await page.evaluate("document.activeElement.className"),
      "forget-no",
    );
    await page.keyboard.down("Shift");
    await page.keyboard.press("Tab");
    await page.keyboard.up("Shift");
    await page.keyboard.press("Enter");
    const forget = await daemon.command("forget");
    assert.equal(forget.id, 2);
    await daemon.send({
      type: "memories",
      items: MEMORIES.slice(1),
      ref: forget.ref,
    });
    await gone(page, '.memory[data-id="2"]');
    assert.equal(
      await page.evaluate(
        `document.activeElement === document.querySelector('.memory[data-id="1"] button.edit')`,
      ),
      true,
      "the focus went on to the next memory",
    );
    // Forgotten elsewhere too: nothing left.
    await daemon.send({ type: "memories", items: [] });
    await shows(page, "#memory-list", "Nothing yet");
    await page.focus("#memory-text");
    assert.equal(
      await disabled(page, "#memory-add-button"),
      true,
      "nothing to remember yet",
    );
    await page.keyboard.type("x".repeat(501));
    await shows(page, "#memory-chars", "501 characters: at most 500");
    assert.equal(
      await disabled(page, "#memory-add-button"),
      true,
    );
    await page.keyboard.press("Backspace");
    await shows(page, "#memory-chars", "");
    await page.keyboard.press("Escape");
    assert.equal(await hidden(page, "#memories-panel"), true);
    assert.equal(await focused(page), "input");
    // Opened again on the same connection: the list is known, not asked again.
    await alt(page, "KeyM");
    await shows(page, "#memories-total", "0 kept");
    await alt(page, "KeyM");
    assert.equal(await hidden(page, "#memories-panel"), true);
    // Alt+N: a command sent after any the keys could have sent.
    await alt(page, "KeyN");
    await daemon.command("new");
    assert.equal(
      daemon.received.filter((line) => line.type === "memories").length,
      0,
    );
    assert.deepEqual(await notices(page), []);
  },
);

pageTest(
  "a daemon that keeps no memories shows no memories and no panel",
  async () => {
    await using s = await stack({ id: null, turns: [] });
    const { page, daemon } = s;
    assert.equal(await hidden(page, "#memories-count"), true);
    assert.equal(await hidden(page, "#memories-open"), true);
    await page.focus("#input");
    await alt(page, "KeyM");
    assert.equal(await hidden(page, "#memories-panel"), true);
    // Alt+N: a command sent after any the keys could have sent.
    await alt(page, "KeyN");
    await daemon.command("new");
    assert.equal(
      daemon.received.some((line) => line.type === "memories"),
      false,
    );
  },
);

pageTest(
  "on a phone the sidebar's Memories opens the panel in place of the drawer, and ☰ the drawer in place of the panel",
  async () => {
    await using s = await withMemories({ width: 390, height: 844 });
    const { page, daemon } = s;
    const drawerOpen = () =>
      page.evaluate(`document.body.classList.contains("drawer-open")`);
    await page.click("#menu");
    await page.waitForFunction(
      `document.getElementById("sidebar").getBoundingClientRect().left >= 0`,
      POLL,
    );
    await page.click("#memories-open");
    const asked = await daemon.command("memories");
    await daemon.send({ type: "memories", items: MEMORIES, ref: asked.ref });
    await shows(page, "#memory-list", "Prefers metric units");
    assert.equal(await drawerOpen(), false);
    await shows(page, "#memories-open", "Memories · 2");
    // The drawer slides away before ☰ is in reach again.
    await page.waitForFunction(
      `document.getElementById("sidebar").getBoundingClientRect().right <= 0`,
      POLL,
    );
    await page.click("#menu");
    assert.equal(await drawerOpen(), true);
    assert.equal(await hidden(page, "#memories-panel"), true);
  },
);

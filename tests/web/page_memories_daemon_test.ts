/**
 * Memories from the page through the real daemon (`memory = "ask"`), the
 * canvas process and its bridge, with the fake llama-server: two tabs, at
 * 1280 and 390 wide, see the same memories and the same proposal cards
 * live; a fact proposed once another conversation becomes current is kept
 * from one tab and its card closes in both; the model's `remember` tool
 * asks as a sentence, and what it keeps is in both panels. Skipped where
 * Chromium is missing.
 */
import assert from "node:assert/strict";
import type { Page } from "../support/puppeteer.ts";
import { screenshot, TestBrowser } from "../support/browser.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { greeted, WebProcess } from "../support/web_harness.ts";
import { alt } from "./file_steps.ts";
import { gone, texts } from "./memory_steps.ts";
import { pageTest, POLL, shows } from "./scripted_daemon.ts";

/** Waits until the tab's panel lists exactly these memories, newest first. */
async function lists(page: Page, memories: string[]) {
  await page.waitForFunction(
    (want: string) =>
      JSON.stringify(
        Array.from(
          (globalThis as unknown as {
            document: {
              querySelectorAll(s: string): ArrayLike<{ textContent: string }>;
            };
          }).document.querySelectorAll(".memory-text"),
          (n) => n.textContent,
        ),
      ) === want,
    POLL,
    JSON.stringify(memories),
  );
}

/** Types a question in a tab and sends it. */
async function ask(page: Page, text: string) {
  await page.bringToFront();
  await page.focus("#input");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}

/** Opens a tab's memories panel with Alt+M. */
async function openPanel(page: Page) {
  await page.bringToFront();
  await alt(page, "KeyM");
  await page.waitForSelector("#memories-panel:not([hidden])", POLL);
}

pageTest(
  "two tabs see the same memories and proposal cards live; a fact kept in one closes its card in both; the remember tool asks as a sentence",
  async () => {
    await using llm = await FakeLlm.start();
    await using daemon = await Daemon.start({
      llmUrl: llm.url,
      config: 'memory = "ask"\n',
    });
    await using web = await WebProcess.start(
      daemon.paths.socketPath,
      daemon.env.XDG_RUNTIME_DIR!,
    );
    await using browser = await TestBrowser.launch();
    const wide = await browser.page(web.url, { width: 1280, height: 900 });
    await greeted(wide);
    const phone = await browser.page(web.url, { width: 390, height: 844 });
    await greeted(phone);
    await shows(wide, "#memories-count", "no memories");

    // Added in one tab, listed in both.
    await openPanel(phone);
    await shows(phone, "#memory-list", "Nothing yet");
    await openPanel(wide);
    await wide.keyboard.type("I prefer metric units");
    await wide.keyboard.press("Enter");
    await lists(wide, ["I prefer metric units"]);
    await lists(phone, ["I prefer metric units"]);
    await wide.keyboard.press("Escape");
    await phone.bringToFront();
    await phone.keyboard.press("Escape");

    // A question, then a new conversation: the old one is read for facts.
    llm.enqueue(
      reply({ content: ["About ", "12 km ", "each way."] }),
      reply({ content: ['{"facts": ["Cycles to work every day"]}'] }),
    );
    await ask(wide, "I cycle to work every day: how far is Lyon to Vienne?");
    await shows(wide, ".turn.last .reply", "About 12 km each way.");
    await alt(wide, "KeyN");
    await shows(
      wide,
      "#proposals",
      "Remember this? “Cycles to work every day”",
    );
    await shows(
      phone,
      "#proposals",
      "Remember this? “Cycles to work every day”",
    );
    assert.match(
      JSON.stringify(llm.chats[1]!.body),
      /response_format/,
      "the proposal request",
    );
    await screenshot(phone, "46-proposal-daemon-390");

    // Kept from the phone: both cards close, both lists have it.
    await phone.bringToFront();
    await phone.click("#proposals .keep");
    await gone(phone, ".proposal");
    await gone(wide, ".proposal");
    await openPanel(phone);
    await lists(phone, ["Cycles to work every day", "I prefer metric units"]);
    await phone.keyboard.press("Escape");
    await openPanel(wide);
    await lists(wide, ["Cycles to work every day", "I prefer metric units"]);
    // Its source is the conversation it was read from.
    await shows(wide, ".memory:first-child .memory-meta", "from “");
    await wide.keyboard.press("Escape");

    // The model's own way: it asks, as a sentence, in both tabs.
    llm.enqueue(
      reply({
        toolCalls: [{
          name: "remember",
          arguments: '{"text":"Has a cat called Tom"}',
        }],
      }),
      reply({ content: ["Noted."] }),
    );
    await ask(wide, "Remember that my cat is called Tom");
    await shows(wide, "#confirms", "Remember: “Has a cat called Tom”?");
    await shows(phone, "#confirms", "Remember: “Has a cat called Tom”?");
    assert.deepEqual(await texts(phone, "#confirms .confirm-text"), [
      "Remember: “Has a cat called Tom”?",
    ]);
    await phone.bringToFront();
    await phone.click("#confirms .allow");
    await shows(wide, ".turn.last .reply", "Noted.");
    await openPanel(phone);
    await lists(phone, [
      "Has a cat called Tom",
      "Cycles to work every day",
      "I prefer metric units",
    ]);
    await openPanel(wide);
    await lists(wide, [
      "Has a cat called Tom",
      "Cycles to work every day",
      "I prefer metric units",
    ]);
    assert.deepEqual(browser.errors, []);
  },
);

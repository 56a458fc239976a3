/**
 * Files and pictures from the page through the real daemon, the canvas
 * process and its bridge to the fake llama-server: what the page sends is
 * what the model is asked with, the turn's chips and thumbnail show in the
 * tab that asked, a second tab fetches the picture with `file`, and a
 * private conversation's files show as chips alone where they cannot be
 * fetched. Skipped where Chromium is missing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Page } from "../support/puppeteer.ts";
import { TestBrowser } from "../support/browser.ts";
import { Daemon } from "../support/daemon_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { greeted, WebProcess } from "../support/web_harness.ts";
import { thumbnails } from "./file_helpers.ts";
import {
  alt,
  chipsReady,
  NOTES,
  pick,
  RED_PNG,
  thumbsDrawn,
} from "./file_steps.ts";
import { pageTest, POLL, shows } from "./scripted_daemon.ts";

/** A model served with its `--mmproj`: it reads pictures. */
const VISION = { id: "/srv/models/vision.gguf", vision: true };

/** Picks files with the Attach button (or Alt+U, with `keys`) and waits until each is read. */
async function attach(page: Page, paths: string[], keys = false) {
  await pick(page, paths, keys);
  await chipsReady(page, paths.length);
}

/** The page has no reply in flight and is idle. */
async function settled(page: Page) {
  await page.waitForFunction(
    () => {
      const model = (globalThis as {
        daCanvas?: { model: { pending: unknown; state: string } };
      }).daCanvas?.model;
      return model?.pending === null && model.state === "idle";
    },
    POLL,
  );
}

/** The question's parts as the model was sent them. */
function questionParts(body: unknown): { type: string }[] {
  const messages = (body as { messages: { role: string; content: unknown }[] })
    .messages;
  const last = messages.at(-1)!;
  assert.equal(last.role, "user");
  assert.ok(Array.isArray(last.content), "a question with a picture is parts");
  return last.content as { type: string }[];
}

pageTest(
  "a picture and a text file from the page reach the model, show in the log, and a second tab fetches the picture",
  async () => {
    await using llm = await FakeLlm.start({ models: [VISION] });
    await using daemon = await Daemon.start({ llmUrl: llm.url });
    await using web = await WebProcess.start(
      daemon.paths.socketPath,
      daemon.env.XDG_RUNTIME_DIR!,
    );
    await using browser = await TestBrowser.launch();
    const dir = join(daemon.home, "picked");
    await Deno.mkdir(dir);
    const notes = join(dir, "notes.txt");
    const red = join(dir, "red.png");
    await Deno.writeTextFile(notes, NOTES);
    await Deno.writeFile(red, RED_PNG);

    const page = await browser.page(web.url, { width: 390, height: 844 });
    await greeted(page);
    llm.enqueue(reply({ content: ["At 7:40, ", "from pier 3."] }));
    await page.focus("#input");
    await attach(page, [notes, red], true);
    await page.keyboard.type("When does it leave, and what colour is this?");
    await page.keyboard.press("Enter");
    await shows(page, ".turn.last .reply", "At 7:40, from pier 3.");
    await settled(page);

    const parts = questionParts(llm.chats[0]!.body);
    const picture = parts.find((part) => part.type === "image_url") as
      | { image_url: { url: string } }
      | undefined;
    assert.equal(
      picture?.image_url.url,
      `data:image/png;base64,${RED_PNG.toBase64()}`,
    );
    const words = parts.filter((part) => part.type === "text")
      .map((part) => (part as unknown as { text: string }).text).join("\n");
    assert.match(words, /File notes\.txt:/);
    assert.match(words, /pier 3/);

    await shows(page, ".turn.last .files", "notes.txt");
    await shows(page, ".turn.last .files", "38 bytes · text");
    await shows(page, ".turn.last .files", "73 bytes · picture");
    await thumbsDrawn(page, ".turn.last .files", 1);
    assert.equal(
      await page.$eval(
        "#attached",
        (n) => (n as unknown as { hidden: boolean }).hidden,
      ),
      true,
      "the files went with the question",
    );

    // Another tab opens on the conversation and fetches the picture.
    const second = await browser.page(web.url, { width: 1280, height: 900 });
    await greeted(second);
    await shows(second, ".turn.last .files", "73 bytes · picture");
    await thumbsDrawn(second, ".turn.last .files", 1);
    assert.deepEqual(await thumbnails(second, ".turn.last"), [
      { alt: "red.png", width: 4, height: 3 },
    ]);
    assert.deepEqual(browser.errors, []);
  },
);

pageTest(
  "a private conversation's picture shows in the tab that sent it, and as a chip alone in another",
  async () => {
    await using llm = await FakeLlm.start({ models: [VISION] });
    await using daemon = await Daemon.start({ llmUrl: llm.url });
    await using web = await WebProcess.start(
      daemon.paths.socketPath,
      daemon.env.XDG_RUNTIME_DIR!,
    );
    await using browser = await TestBrowser.launch();
    const red = join(daemon.home, "red.png");
    await Deno.writeFile(red, RED_PNG);

    const page = await browser.page(web.url);
    await greeted(page);
    const other = await browser.page(web.url);
    await greeted(other);
    await page.bringToFront();
    await alt(page, "KeyP");
    await shows(page, "#title", "Private conversation");
    await shows(other, "#title", "Private conversation");

    llm.enqueue(reply({ content: ["Red."] }));
    await page.bringToFront();
    await attach(page, [red]);
    await page.focus("#input");
    await page.keyboard.type("What colour?");
    await page.keyboard.press("Enter");
    await shows(page, ".turn.last .reply", "Red.");
    await settled(page);
    await thumbsDrawn(page, ".turn.last .files", 1);

    await other.bringToFront();
    await shows(other, ".turn.last .reply", "Red.");
    await shows(other, ".turn.last .files", "73 bytes · picture");
    assert.equal(
      await other.$$eval(".turn.last .thumb", (nodes) => nodes.length),
      0,
      "no thumbnail where the picture cannot be fetched",
    );
    assert.deepEqual(browser.errors, []);
  },
);

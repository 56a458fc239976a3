/**
 * Pictures of the page and of `chat` for the README: the page with a
 * realistic conversation at 1280×900, 640×900 and 390×844 in the light and
 * the dark theme, the page with a turn that carried a picture and a file
 * and two more attached in the composer (1280 and 390 wide, both themes),
 * the memories panel and the facts proposed as cards (1280 and 390 wide,
 * both themes), and `chat` on a pseudo-terminal answering in Markdown.
 * Every run takes them (they must draw without a script error); they are
 * written to the repository only when `SCREENSHOTS` names the folder
 * (`SCREENSHOTS=docs/images deno task test`), else to the temporary
 * screenshots folder, so a normal run changes no file.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { SCREENSHOTS_DIR, TestBrowser } from "../support/browser.ts";
import {
  clientArgs,
  clientEnv,
  ClientProcess,
  hasScript,
  PTY_SKIP,
  startDaemon,
} from "../support/client_harness.ts";
import { FakeLlm, reply } from "../support/fake_llm.ts";
import { MARKDOWN_REPLY, modelTokens } from "../support/markdown_reply.ts";
import {
  LISTED,
  liveTurn,
  richHello,
  SUMMARY_EVENT,
} from "./conversation_fixture.ts";
import { filesScene } from "./files_scene.ts";
import { memoryScene } from "./memory_scene.ts";
import { pageTest, shows, skip, stack } from "./scripted_daemon.ts";
import { terminalHtml } from "./terminal_picture.ts";

/** Where the pictures go. */
const DIR = Deno.env.get("SCREENSHOTS") ?? SCREENSHOTS_DIR;

const SIZES = [
  { name: "1280", width: 1280, height: 900 },
  { name: "640", width: 640, height: 900 },
  { name: "390", width: 390, height: 844 },
];

pageTest(
  "pictures of the page with a realistic conversation, at three sizes in both themes",
  async () => {
    await Deno.mkdir(DIR, { recursive: true });
    for (const size of SIZES) {
      await using s = await stack(richHello(), size);
      const { page, daemon, browser } = s;
      await daemon.send(
        { type: "conversations", items: LISTED },
        SUMMARY_EVENT,
        ...liveTurn(),
      );
      await shows(page, ".turn.last .figures", "tokens/s");
      await shows(page, "#list", "Sorting a list of dicts");
      // The wide picture shows the conversation from its start, the
      // others its newest turn, as the page opens it.
      if (size.width >= 1280) {
        await page.$eval("#log", (log) => {
          (log as unknown as { scrollTop: number }).scrollTop = 0;
        });
      }
      for (const theme of ["light", "dark"]) {
        await page.emulateMediaFeatures([
          { name: "prefers-color-scheme", value: theme },
        ]);
        const path = join(DIR, `page-${size.name}-${theme}.png`);
        await page.screenshot({ path: path as `${string}.png` });
        const bytes = (await Deno.stat(path)).size;
        assert.ok(bytes < 400_000, `${path} is ${bytes} bytes`);
      }
      assert.deepEqual(browser.errors, []);
    }
  },
);

pageTest(
  "pictures of the page with a picture and a file attached, and a turn that carried them, at 1280 and 390 wide in both themes",
  async () => {
    await Deno.mkdir(DIR, { recursive: true });
    for (const size of SIZES.filter((s) => s.name !== "640")) {
      await using s = await filesScene(size);
      const { page, browser } = s;
      for (const theme of ["light", "dark"]) {
        await page.emulateMediaFeatures([
          { name: "prefers-color-scheme", value: theme },
        ]);
        const path = join(DIR, `page-files-${size.name}-${theme}.png`);
        await page.screenshot({ path: path as `${string}.png` });
        const bytes = (await Deno.stat(path)).size;
        assert.ok(bytes < 400_000, `${path} is ${bytes} bytes`);
      }
      assert.deepEqual(browser.errors, []);
    }
  },
);

pageTest(
  "pictures of the memories panel and of facts proposed as cards, at 1280 and 390 wide in both themes",
  async () => {
    await Deno.mkdir(DIR, { recursive: true });
    for (const size of SIZES.filter((s) => s.name !== "640")) {
      for (const panel of [true, false]) {
        await using s = await memoryScene(size, { panel, search: true });
        const { page, browser } = s;
        for (const theme of ["light", "dark"]) {
          await page.emulateMediaFeatures([
            { name: "prefers-color-scheme", value: theme },
          ]);
          const name = panel ? "memories" : "proposals";
          const path = join(DIR, `page-${name}-${size.name}-${theme}.png`);
          await page.screenshot({ path: path as `${string}.png` });
          const bytes = (await Deno.stat(path)).size;
          assert.ok(bytes < 400_000, `${path} is ${bytes} bytes`);
        }
        assert.deepEqual(browser.errors, []);
      }
    }
  },
);

Deno.test({
  name: `a picture of chat answering in Markdown on a terminal${
    skip === null ? PTY_SKIP : ` (skipped: ${skip})`
  }`,
  ignore: !hasScript || skip !== null,
  async fn() {
    await Deno.mkdir(DIR, { recursive: true });
    const size = { columns: 80, rows: 40 };
    await using llm = await FakeLlm.start();
    llm.enqueue(reply({ content: modelTokens(MARKDOWN_REPLY) }));
    await using daemon = await startDaemon(llm.url);
    const env = clientEnv(daemon.paths.runtimeDir);
    delete env.NO_COLOR;
    await using chat = ClientProcess.spawn(
      clientArgs(daemon.paths.socketPath, ["chat"]),
      { env, pty: true, size },
    );
    const at = await chat.waitFor(/> \r/);
    await chat.type("How do I read a file?\r");
    await chat.waitFor(/> \r/, await chat.waitFor("for more.", at));
    await chat.type("\x04");
    assert.equal(await chat.exit(), 0);

    const html = await terminalHtml(
      chat.stdout,
      size.columns,
      "deno task chat",
    );
    await using browser = await TestBrowser.launch();
    const page = await browser.page(undefined, { width: 820, height: 600 });
    await page.setContent(html);
    const window = await page.$(".window");
    assert.ok(window, "the picture has its window");
    const path = join(DIR, "chat.png");
    await window.screenshot({ path: path as `${string}.png` });
    const bytes = (await Deno.stat(path)).size;
    assert.ok(bytes < 400_000, `${path} is ${bytes} bytes`);
    assert.deepEqual(browser.errors, []);
  },
});

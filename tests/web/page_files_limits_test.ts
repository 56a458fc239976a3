/**
 * What keeps a question with files from going wrong on the page, in a
 * real Chromium at 1280 and 390 px wide against a scripted daemon: files
 * past the line limit are named with their total and the limit and no
 * line is sent; a refusal keeps the files and the question to send again;
 * and the chips, thumbnails and warning keep to the screen and to 4.5:1
 * contrast in both themes at 390, 640 and 1280 wide.
 */
import assert from "node:assert/strict";
import { screenshot } from "../support/browser.ts";
import { dropFiles } from "./file_helpers.ts";
import {
  ask,
  base64,
  chipsReady,
  filesOnDisk,
  newConversation,
  pick,
  RED_PNG,
  RED_VIEW,
  SIZES,
  text,
} from "./file_steps.ts";
import { filesScene } from "./files_scene.ts";
import { box, contrasts, overflows } from "./measure.ts";
import { hidden, pageTest, POLL, shows, stack } from "./scripted_daemon.ts";

pageTest(
  "files past the line limit are named with their total and the limit, and no line is sent, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({}, size);
      const { page, daemon, home } = s;
      const big = text("0123456789abcdef\n".repeat(54_000));
      const paths = await filesOnDisk(home, { "big.log": big });
      await pick(page, [paths["big.log"]!, paths["red.png"]!]);
      await chipsReady(page, 2);
      await shows(
        page,
        "#attached-limit",
        "The files come to 897 KB, more than the ",
      );
      await shows(page, "#attached-limit", "1 MiB");
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await ask(page, "Any errors?");
      await screenshot(page, `32-files-over-limit-${size.name}`);
      // A command sent after it arrives with nothing before it.
      await newConversation(page);
      await daemon.command("new");
      assert.deepEqual(daemon.received.filter((l) => l.type === "ask"), []);
      assert.equal(await hidden(page, "#attached"), false, "the files stay");

      await page.click('#attached-list button[aria-label="Remove big.log"]');
      await chipsReady(page, 1);
      assert.equal(await hidden(page, "#attached-limit"), true);
      await page.focus("#input");
      await page.keyboard.press("Enter");
      const sent = await daemon.command("ask");
      assert.equal(sent.text, "Any errors?");
      assert.deepEqual(
        (sent.files as { name: string }[]).map((f) => f.name),
        ["red.png"],
      );
      await daemon.send({
        type: "user",
        text: "Any errors?",
        files: [RED_VIEW],
        ref: sent.ref,
      });
      await page.waitForFunction(
        `document.querySelector("#attached").hidden`,
        POLL,
      );

      // A question too long by its text alone is told in a notice.
      await page.$eval("#input", (node) => {
        (node as unknown as { value: string }).value = "x".repeat(1_200_000);
      });
      await page.focus("#input");
      await page.keyboard.press("Enter");
      await shows(page, "#notices", "This question is 1.1 MB");
      await newConversation(page);
      await daemon.command("new");
      assert.deepEqual(daemon.received.filter((l) => l.type === "ask"), []);
    }
  },
);

pageTest(
  "a refused question (no_vision) is told as a command error and keeps its files and its text to send again; a failed one is asked again with its files; at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({}, size);
      const { page, daemon, home } = s;
      const paths = await filesOnDisk(home);
      await pick(page, [paths["red.png"]!]);
      await chipsReady(page, 1);
      await ask(page, "What colour is it?");
      const first = await daemon.command("ask");
      await daemon.send({
        type: "error",
        code: "no_vision",
        message:
          "the model in use does not read pictures: start llama-server with its --mmproj",
        ref: first.ref,
      });
      await shows(page, "#notices", "does not read pictures");
      await chipsReady(page, 1);
      assert.doesNotMatch(
        await page.$eval("#attached-list", (n) => n.textContent ?? ""),
        /sending/,
      );
      assert.equal(
        await page.$eval(
          "#input",
          (n) => (n as unknown as { value: string }).value,
        ),
        "What colour is it?",
      );
      await screenshot(page, `33-refused-keeps-files-${size.name}`);
      await page.focus("#input");
      await page.keyboard.press("Enter");
      const again = await daemon.command("ask");
      assert.equal(again.text, "What colour is it?");
      assert.deepEqual(again.files, first.files);

      // Taken, then failed: the daemon kept nothing, so Ask again sends
      // the files this page sent with it.
      await daemon.send(
        {
          type: "user",
          text: "What colour is it?",
          files: [RED_VIEW],
          ref: again.ref,
        },
        {
          type: "error",
          code: "llama_unreachable",
          message: "llama-server unreachable at http://127.0.0.1:8080",
          turn: true,
          ref: again.ref,
        },
        { type: "state", state: "idle" },
      );
      await shows(page, ".turn.last .note", "llama-server unreachable");
      await shows(page, ".turn.last .files", "red.png");
      assert.equal(await hidden(page, "#attached"), true);
      await page.click(".turn.last .again");
      const resent = await daemon.command("ask");
      assert.equal(resent.text, "What colour is it?");
      assert.deepEqual(resent.files, first.files);
    }
  },
);

/** The files' texts whose contrast a reader depends on. */
const FILE_TEXTS = [
  ".question .file-name",
  ".question .file-meta",
  "#attached-list .file-name",
  "#attached-list .file-meta",
  "#attached-list .remove",
  "#attached-limit",
];

pageTest(
  "chips, thumbnails and the limit's warning keep to the screen at 390, 640 and 1280 wide, with 4.5:1 contrast in both themes",
  async () => {
    for (const size of [...SIZES, { name: "640", width: 640, height: 900 }]) {
      await using s = await filesScene(size);
      const { page } = s;
      await dropFiles(page, "#composer", [
        {
          name: "access-log-of-the-whole-week-with-a-long-name.log",
          type: "text/plain",
          base64: base64(text("GET /reindex 200\n".repeat(50_000))),
        },
      ]);
      await chipsReady(page, 3);
      await shows(page, "#attached-limit", "The files come to");
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      const log = (await box(page, "#log"))!;
      assert.ok(
        log.height >= size.height * 0.4,
        `the conversation keeps ${log.height}px of ${size.height} at ${size.name} wide`,
      );
      for (const theme of ["light", "dark"]) {
        await page.emulateMediaFeatures([
          { name: "prefers-color-scheme", value: theme },
        ]);
        const found = await contrasts(page, FILE_TEXTS);
        assert.ok(found.length >= 8, `only ${found.length} texts measured`);
        const low = found.filter((c) => c.ratio < 4.5);
        assert.deepEqual(low, [], `${theme} at ${size.name} wide`);
      }
    }
  },
);

pageTest(
  "a picture file past 32 MiB is never decoded: it is left unread, too large as any file no line can carry; a small one is",
  async () => {
    await using s = await stack({});
    const found = await s.page.evaluate(`(async () => {
      const { prepare, DECODE_AT_MOST } = await import("./pictures.js");
      const decode = globalThis.createImageBitmap;
      let decoded = 0;
      globalThis.createImageBitmap = (...args) => {
        decoded++;
        return decode(...args);
      };
      try {
        const huge = await prepare(new File(
          [new Uint8Array(DECODE_AT_MOST + 1)],
          "huge.png",
          { type: "image/png" },
        ));
        const hugeDecoded = decoded;
        const red = Uint8Array.from(atob("${
      base64(RED_PNG)
    }"), (c) => c.charCodeAt(0));
        const small = await prepare(new File([red], "red.png", { type: "image/png" }));
        return {
          huge: { name: huge.name, bytes: huge.bytes, data: huge.data },
          hugeDecoded,
          small: { name: small.name, width: small.width, sent: small.data !== null },
          decoded,
        };
      } finally {
        globalThis.createImageBitmap = decode;
      }
    })()`);
    assert.deepEqual(found, {
      huge: { name: "huge.png", bytes: 32 * 1024 * 1024 + 1, data: null },
      hugeDecoded: 0,
      small: { name: "red.png", width: 4, sent: true },
      decoded: 1,
    });
  },
);

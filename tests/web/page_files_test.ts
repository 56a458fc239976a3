/**
 * Files and pictures on the page, in a real Chromium at 1280 and 390 px
 * wide, against a scripted daemon that reads the `ask` the page sends and
 * answers as docs/protocol.md says: the picker, a pasted picture, files
 * dropped, a large picture drawn smaller before it is sent, and chips and
 * thumbnails in the log (from what the page sent, and fetched with `file`
 * for a turn it did not send).
 */
import assert from "node:assert/strict";
import { screenshot } from "../support/browser.ts";
import {
  dropFiles,
  pasteFiles,
  pictureSize,
  thumbnails,
} from "./file_helpers.ts";
import {
  ask,
  base64,
  chips,
  chipsReady,
  filesOnDisk,
  newConversation,
  NOTES,
  NOTES_VIEW,
  pick,
  RED_PNG,
  RED_VIEW,
  SIZES,
  text,
  thumbsDrawn,
} from "./file_steps.ts";
import { overflows } from "./measure.ts";
import { hidden, pageTest, POLL, shows, stack } from "./scripted_daemon.ts";

pageTest(
  "files picked with Attach show as chips, go with the next question as sent, and show in the log after done, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({ id: 7, turns: [] }, size);
      const { page, daemon, home, browser } = s;
      const paths = await filesOnDisk(home);
      await pick(page, [paths["notes.txt"]!, paths["red.png"]!]);
      await chipsReady(page, 2);
      assert.deepEqual(await chips(page), [
        { name: "notes.txt", meta: "38 bytes" },
        { name: "red.png", meta: "73 bytes · 4×3" },
      ]);
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await screenshot(page, `30-attached-${size.name}`);

      await ask(page, "When does it leave?");
      const sent = await daemon.command("ask");
      assert.equal(sent.text, "When does it leave?");
      // Text as it is; a small picture as it is.
      assert.deepEqual(sent.files, [
        { name: "notes.txt", mime: "text/plain", data: base64(text(NOTES)) },
        { name: "red.png", mime: "image/png", data: base64(RED_PNG) },
      ]);
      // On their way until the daemon takes the question.
      await shows(page, "#attached-list", "sending…");
      await daemon.send({
        type: "user",
        text: "When does it leave?",
        files: [NOTES_VIEW, RED_VIEW],
        ref: sent.ref,
      });
      await page.waitForFunction(
        () =>
          (globalThis as unknown as {
            document: { querySelector(s: string): { hidden: boolean } };
          }).document.querySelector("#attached").hidden,
        POLL,
      );
      // The question in flight shows its picture from what it sent.
      await thumbsDrawn(page, ".turn.live .files", 1);
      await daemon.send(
        { type: "state", state: "thinking" },
        { type: "token", delta: "At 7:40, from pier 3." },
        { type: "done", id: 7, stopped: false },
        { type: "state", state: "idle" },
      );
      await shows(page, ".turn.last .reply", "At 7:40");
      await shows(page, ".turn.last .files", "38 bytes · text");
      await shows(page, ".turn.last .files", "73 bytes · picture");
      await thumbsDrawn(page, ".turn.last .files", 1);
      assert.deepEqual(await thumbnails(page, ".turn.last"), [
        { alt: "red.png", width: 4, height: 3 },
      ]);
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await screenshot(page, `31-sent-files-${size.name}`);

      // Editing the question says its files stay unless others are attached.
      await page.focus("#input");
      await page.keyboard.press("ArrowUp");
      assert.equal(await hidden(page, "#editing-files"), false);
      await page.keyboard.press("Escape");
      assert.equal(await hidden(page, "#editing"), true);

      // Opened again, the turn's picture is the one it sent: not fetched.
      await daemon.send({
        type: "conversation",
        id: 7,
        turns: [{
          user: "When does it leave?",
          reply: "At 7:40, from pier 3.",
          tools: [],
          files: [NOTES_VIEW, RED_VIEW],
        }],
        summary: null,
      });
      await thumbsDrawn(page, ".turn.last .files", 1);
      await newConversation(page);
      await daemon.command("new");
      assert.deepEqual(
        daemon.received.filter((line) => line.type === "file"),
        [],
      );
      assert.deepEqual(browser.errors, []);
    }
  },
);

pageTest(
  "a turn the page did not send has its picture fetched with file when shown; one that cannot be had keeps its chip",
  async () => {
    await using s = await stack({
      id: 4,
      turns: [
        { user: "Old one", reply: "Gone.", tools: [], files: [RED_VIEW] },
        {
          user: "What is in these?",
          reply: "A chart and notes.",
          tools: [],
          files: [NOTES_VIEW, { ...RED_VIEW, name: "chart.png" }],
        },
      ],
    });
    const { page, daemon, browser } = s;
    const first = await daemon.command("file");
    const second = await daemon.command("file");
    const asked = [first, second].map((c) => [c.conversation, c.turn, c.index])
      .sort();
    // Only the pictures, at their places in conversation.turns and files.
    assert.deepEqual(asked, [[4, 0, 0], [4, 1, 1]]);
    const chart = first.turn === 1 ? first : second;
    const old = first.turn === 1 ? second : first;
    await daemon.send(
      {
        type: "file",
        conversation: 4,
        turn: 1,
        index: 1,
        name: "chart.png",
        mime: "image/png",
        data: base64(RED_PNG),
        ref: chart.ref,
      },
      {
        type: "error",
        code: "no_such_file",
        message: "no such file",
        ref: old.ref,
      },
    );
    await thumbsDrawn(page, ".turn.last .files", 1);
    await page.waitForFunction(
      `document.querySelector(".turn:first-of-type .thumb") === null`,
      POLL,
    );
    await shows(page, ".turn:first-of-type .files", "red.png");
    await shows(page, ".turn:first-of-type .files", "73 bytes · picture");
    assert.equal(
      await page.$$eval(".notice", (n) => n.length),
      0,
      "a missing picture is no error to tell",
    );
    // Larger on a click, and back.
    await page.click(".turn.last .thumb");
    await page.waitForSelector(".turn.last .file.wide", POLL);
    await page.keyboard.press("Enter");
    await page.waitForFunction(
      `document.querySelector(".turn.last .file.wide") === null`,
      POLL,
    );
    assert.deepEqual(browser.errors, []);
  },
);

pageTest(
  "a pasted picture and files dropped on the conversation are attached, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({}, size);
      const { page, daemon } = s;
      await page.focus("#input");
      await page.keyboard.type("Look");
      const taken = await pasteFiles(page, "#input", [
        {
          name: "image.png",
          type: "image/png",
          picture: { width: 320, height: 200 },
        },
      ]);
      assert.equal(taken, true, "the page took the pasted picture");
      await chipsReady(page, 1);
      assert.equal(
        await page.$eval(
          "#input",
          (n) => (n as unknown as { value: string }).value,
        ),
        "Look",
      );
      const drop = await dropFiles(page, "#log", [
        { name: "notes.txt", type: "text/plain", base64: base64(text(NOTES)) },
        { name: "red.png", type: "image/png", base64: base64(RED_PNG) },
      ]);
      assert.equal(drop.marked, true, "the conversation shows where to drop");
      await chipsReady(page, 3);
      assert.equal(
        await page.$eval("main", (n) => n.className.includes("dropping")),
        false,
      );
      assert.deepEqual(
        (await chips(page)).map((c) => c.name),
        ["image.png", "notes.txt", "red.png"],
      );
      // Dropped on the composer too, and removed with its ×.
      await dropFiles(page, "#composer", [
        { name: "more.txt", type: "text/plain", base64: base64(text("more")) },
      ]);
      await chipsReady(page, 4);
      await page.click('#attached-list button[aria-label="Remove more.txt"]');
      await chipsReady(page, 3);
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await page.keyboard.press("Enter");
      const sent = await daemon.command("ask");
      const files = sent.files as {
        name: string;
        mime: string;
        data: string;
      }[];
      assert.deepEqual(files.map((f) => [f.name, f.mime]), [
        ["image.png", "image/png"],
        ["notes.txt", "text/plain"],
        ["red.png", "image/png"],
      ]);
      const pasted = pictureSize(Uint8Array.fromBase64(files[0]!.data));
      assert.deepEqual(pasted, { type: "png", width: 320, height: 200 });
    }
  },
);

pageTest(
  "a large picture is drawn at 1,536 px on its longest side and sent as JPEG, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({}, size);
      const { page, daemon } = s;
      await dropFiles(page, "#log", [
        {
          name: "photo.png",
          type: "image/png",
          picture: { width: 3000, height: 2000 },
        },
      ]);
      await chipsReady(page, 1);
      assert.deepEqual((await chips(page))[0]?.name, "photo.jpg");
      assert.match(
        (await chips(page))[0]?.meta ?? "",
        /^\d+ KB · 1536×1024 JPEG, from 3000×2000$/,
      );
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await ask(page, "What is the peak?");
      const sent = await daemon.command("ask");
      const [file] = sent.files as {
        name: string;
        mime: string;
        data: string;
      }[];
      assert.equal(file?.name, "photo.jpg");
      assert.equal(file?.mime, "image/jpeg");
      const bytes = Uint8Array.fromBase64(file!.data);
      assert.deepEqual(pictureSize(bytes), {
        type: "jpeg",
        width: 1536,
        height: 1024,
      });
      assert.ok(bytes.length < 750_000, `${bytes.length} bytes`);
    }
  },
);

/**
 * What the page's file tests do and read as a user would: files on disk
 * for the Attach button's file chooser, the composer's chips, a question
 * typed and sent, the thumbnails drawn; and the files they use.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Page } from "../support/puppeteer.ts";
import type { FileView } from "../../src/protocol/protocol.ts";
import { POLL } from "./scripted_daemon.ts";

/** A 4×3 PNG, red. */
export const RED_PNG: Uint8Array = await Deno.readFile(
  new URL("../fixtures/files/red.png", import.meta.url),
);
/** A text file's content. */
export const NOTES = "The ferry leaves at 7:40 from pier 3.\n";

/** The widths every file test runs at: a laptop's and a phone's. */
export const SIZES = [
  { name: "1280", width: 1280, height: 900 },
  { name: "390", width: 390, height: 844 },
];

/** Bytes in base64, as `data` carries them. */
export const base64 = (bytes: Uint8Array): string => bytes.toBase64();
/** Text as UTF-8 bytes. */
export const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Files on disk for the picker: notes.txt and red.png (and any extra). */
export async function filesOnDisk(
  home: string,
  extra: Record<string, Uint8Array> = {},
) {
  const dir = join(home, "files");
  await Deno.mkdir(dir, { recursive: true });
  const all = { "notes.txt": text(NOTES), "red.png": RED_PNG, ...extra };
  const paths: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(all)) {
    paths[name] = join(dir, name);
    await Deno.writeFile(paths[name], bytes);
  }
  return paths;
}

/** Presses Alt and a key (its `code`). */
export async function alt(page: Page, code: string): Promise<void> {
  await page.keyboard.down("Alt");
  await page.keyboard.press(code as "KeyN");
  await page.keyboard.up("Alt");
}

/** Picks files in the file chooser the Attach button opens (or Alt+U, with `keys`). */
export async function pick(page: Page, paths: string[], keys = false) {
  const opened = page.waitForFileChooser(POLL);
  // The page takes the DevTools commands in order, but keys reach it by
  // another way: once a script has run after the chooser is intercepted,
  // a key cannot overtake the interception.
  await page.evaluate("0");
  await (keys ? alt(page, "KeyU") : page.click("#attach"));
  const chooser = await opened;
  assert.ok(chooser.isMultiple(), "several files at once");
  await chooser.accept(paths);
}

/** The composer's chips as the reader sees them: name and what is said under it. */
export function chips(page: Page) {
  return page.$$eval(
    "#attached-list li",
    (items) =>
      items.map((item) => ({
        name: item.querySelector(".file-name")?.textContent ?? "",
        meta: item.querySelector(".file-meta")?.textContent ?? "",
      })),
  );
}

/** Waits until the composer shows `count` chips, every one read. */
export async function chipsReady(page: Page, count: number) {
  await page.waitForFunction(
    (n: number) => {
      const items = [
        ...(globalThis as unknown as {
          document: { querySelectorAll(s: string): { className: string }[] };
        }).document.querySelectorAll("#attached-list li"),
      ];
      return items.length === n &&
        items.every((item) => item.className.includes("ready"));
    },
    POLL,
    count,
  );
}

/** Alt+N: a command sent after anything the page sent before, to wait on. */
export async function newConversation(page: Page) {
  await alt(page, "KeyN");
}

/** Types a question in the composer and sends it with Enter. */
export async function ask(page: Page, question: string) {
  await page.focus("#input");
  await page.keyboard.type(question);
  await page.keyboard.press("Enter");
}

/** Waits until every thumbnail in `selector` has drawn its picture. */
export async function thumbsDrawn(page: Page, selector: string, count: number) {
  await page.waitForFunction(
    `[...document.querySelectorAll(${
      JSON.stringify(`${selector} .thumb img`)
    })].filter((img) => img.complete && img.naturalWidth > 0).length === ${count}`,
    POLL,
  );
}

/** How the daemon shows red.png with a question (`user.files`, `conversation.turns[].files`). */
export const RED_VIEW: FileView = {
  name: "red.png",
  mime: "image/png",
  bytes: RED_PNG.length,
  kind: "image",
};
/** How the daemon shows notes.txt with a question. */
export const NOTES_VIEW: FileView = {
  name: "notes.txt",
  mime: "text/plain",
  bytes: NOTES.length,
  kind: "text",
};

/**
 * What the page's memory tests do and read as a user would: the memories
 * and facts they use, the panel's rows and the cards as shown, text typed
 * over what a field holds, and a download waited for.
 */
import { join } from "node:path";
import type { Page } from "../support/puppeteer.ts";
import type { MemoryView, ProposalView } from "../../src/protocol/protocol.ts";
import { POLL } from "./scripted_daemon.ts";

declare const document: {
  querySelector(selector: string): unknown;
  querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
  activeElement: { id: string } | null;
};

/** Unix seconds of the memories' dates: 9 October 2025, and a month before. */
export const OCTOBER = 1_760_000_000;
export const SEPTEMBER = 1_757_400_000;

/** The memories a page is shown first, newest first. */
export const MEMORIES: MemoryView[] = [
  {
    id: 2,
    text: "Works on a project called Tern",
    created: OCTOBER,
    updated: OCTOBER,
    source: { id: 6, turn: 0 },
  },
  {
    id: 1,
    text: "Prefers metric units",
    created: SEPTEMBER,
    updated: SEPTEMBER,
    source: null,
  },
];

/** A fact proposed from conversation 7. */
export function fact(proposal: string, text: string): ProposalView {
  return { proposal, text, source: { id: 7, turn: 1 } };
}

/** The text of every element matching, in order. */
export function texts(page: Page, selector: string): Promise<string[]> {
  return page.evaluate(
    (sel: string) =>
      Array.from(document.querySelectorAll(sel), (n) => n.textContent ?? ""),
    selector,
  );
}

/** Waits until nothing matches `selector`. */
export async function gone(page: Page, selector: string): Promise<void> {
  await page.waitForFunction(
    (sel: string) => document.querySelector(sel) === null,
    POLL,
    selector,
  );
}

/** The id of the element with the focus. */
export function focused(page: Page): Promise<string> {
  return page.evaluate(() => document.activeElement?.id ?? "");
}

/** What a field holds. */
export function valueOf(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (n) => (n as unknown as { value: string }).value);
}

/** Whether a button is disabled. */
export function disabled(page: Page, selector: string): Promise<boolean> {
  return page.$eval(
    selector,
    (n) => (n as unknown as { disabled: boolean }).disabled,
  );
}

/** Replaces what the focused field holds with `text`, typed. */
export async function retype(page: Page, text: string): Promise<void> {
  await page.keyboard.down("Control");
  await page.keyboard.press("a");
  await page.keyboard.up("Control");
  await page.keyboard.type(text);
}

/** The notices shown, as text. */
export function notices(page: Page): Promise<string[]> {
  return texts(page, "#notices .notice span");
}

/**
 * Lets the page download into a fresh folder; `next()` resolves to the
 * text of the next file it downloads, once complete.
 */
export async function downloads(page: Page) {
  const dir = await Deno.makeTempDir({ prefix: "da-web-dl-" });
  const session = await page.createCDPSession();
  await session.send("Browser.setDownloadBehavior", {
    behavior: "allow",
    downloadPath: dir,
    eventsEnabled: true,
  });
  /** Names of the downloads begun, by their guid. */
  const names = new Map<string, string>();
  session.on("Browser.downloadWillBegin", (event) => {
    names.set(event.guid, event.suggestedFilename);
  });
  return {
    /** The next download's name and text, once it is complete. */
    next(): Promise<{ name: string; text: string }> {
      const done = Promise.withResolvers<{ name: string; text: string }>();
      const listener = (event: { guid: string; state: string }) => {
        if (event.state === "canceled") {
          done.reject(new Error("the download was cancelled"));
        }
        if (event.state !== "completed") return;
        session.off("Browser.downloadProgress", listener);
        const name = names.get(event.guid) ?? "";
        Deno.readTextFile(join(dir, name)).then(
          (text) => done.resolve({ name, text }),
          done.reject,
        );
      };
      session.on("Browser.downloadProgress", listener);
      return done.promise;
    },
    async [Symbol.asyncDispose]() {
      await session.detach();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

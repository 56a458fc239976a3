/**
 * A real headless Chromium for the canvas's tests: Debian's `chromium`
 * (never a downloaded browser) driven over the DevTools protocol by
 * puppeteer-core, with a fresh profile each time. Screenshots of the main
 * states are kept under `$TMPDIR/da-web-screenshots/` after the run.
 */
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "./puppeteer.ts";

/** Where Debian's package puts the browser. */
export const CHROMIUM = "/usr/bin/chromium";

/** Flags of every test browser: headless, and nothing that reaches outside the machine. */
export const CHROMIUM_FLAGS: readonly string[] = Object.freeze([
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
]);

/** Where the screenshots go: kept after the run, one PNG per state. */
export const SCREENSHOTS_DIR: string = join(
  Deno.env.get("TMPDIR") ?? "/tmp",
  "da-web-screenshots",
);

/** Why the browser tests cannot run here, or null when they can. */
export function chromiumMissing(): string | null {
  try {
    if (Deno.statSync(CHROMIUM).isFile) return null;
  } catch {
    // Not installed.
  }
  return `${CHROMIUM} is not installed (apt-get install chromium; .ci/run does)`;
}

/** A browser with its own throwaway profile; `await using` closes both. */
export class TestBrowser implements AsyncDisposable {
  readonly browser: Browser;
  readonly #profile: string;
  /** Errors the pages threw or logged, for the tests to assert none. */
  readonly errors: string[] = [];

  private constructor(browser: Browser, profile: string) {
    this.browser = browser;
    this.#profile = profile;
  }

  /** Starts Chromium with {@link CHROMIUM_FLAGS} plus `extra`. */
  static async launch(extra: string[] = []): Promise<TestBrowser> {
    const profile = await Deno.makeTempDir({ prefix: "da-chromium-" });
    try {
      const browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, ...extra],
        // DevTools over a pipe: no debugging port another local process could use.
        pipe: true,
      });
      return new TestBrowser(browser, profile);
    } catch (error) {
      await Deno.remove(profile, { recursive: true });
      throw error;
    }
  }

  /** A new tab (1200×800 unless told), whose script errors are collected. */
  async page(
    url?: string,
    viewport: { width: number; height: number } = { width: 1200, height: 800 },
  ): Promise<Page> {
    const page = await this.browser.newPage();
    await page.setViewport(viewport);
    page.on("pageerror", (error) => this.errors.push(String(error)));
    page.on("console", (message) => {
      if (message.type() === "error") this.errors.push(message.text());
    });
    if (url !== undefined) await page.goto(url);
    return page;
  }

  /** Closes the browser and removes its profile. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.browser.close();
    await Deno.remove(this.#profile, { recursive: true });
  }
}

/** Saves a screenshot of the page as `<name>.png` in {@link SCREENSHOTS_DIR}. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await Deno.mkdir(SCREENSHOTS_DIR, { recursive: true });
  // A tab in the background draws no frames: the capture would wait for one.
  await page.bringToFront();
  await page.screenshot({
    path: join(SCREENSHOTS_DIR, `${name}.png`) as `${string}.png`,
  });
}

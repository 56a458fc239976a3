/**
 * The page against a scripted daemon: a real Unix socket that greets with a
 * given `hello`, records each command the page sends and sends the events
 * a test says, through the real canvas process and bridge to a real
 * Chromium. Events the daemon does not send yet can be fed this way, as
 * the protocol reference defines them.
 */
import { join } from "node:path";
import type { Page } from "../support/puppeteer.ts";
import { chromiumMissing, TestBrowser } from "../support/browser.ts";
import { within } from "../support/client_harness.ts";
import { greeted, WebProcess } from "../support/web_harness.ts";
import { type Hello, idleHello } from "../support/hello_fixture.ts";

declare const document: {
  querySelector(selector: string): {
    readonly textContent: string | null;
    readonly hidden: boolean;
    readonly placeholder?: string;
    readonly className: string;
  } | null;
};

/** Why the browser tests cannot run here, or null. */
export const skip: string | null = chromiumMissing();
const SHOW_MS = 15_000;
/** How waits poll: on a timer. */
export const POLL = { timeout: SHOW_MS, polling: 50 } as const;

/** A test that needs Chromium, skipped with the reason where it is missing. */
export function pageTest(name: string, fn: () => Promise<void>): void {
  Deno.test({
    name: name + (skip === null ? "" : ` (skipped: ${skip})`),
    ignore: skip !== null,
    fn,
  });
}

/** A daemon that greets with a given hello, records each line it gets and sends what the test says. */
export class ScriptedDaemon implements AsyncDisposable {
  readonly path: string;
  readonly runtimeDir: string;
  readonly received: Record<string, unknown>[] = [];
  readonly #listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>;
  readonly #conns: Deno.UnixConn[] = [];
  readonly #accepting: Promise<void>;
  readonly #readers: Promise<void>[] = [];
  #changed = Promise.withResolvers<void>();
  #connected = Promise.withResolvers<void>();

  constructor(runtimeDir: string, hello: Record<string, unknown>) {
    this.runtimeDir = runtimeDir;
    this.path = join(runtimeDir, "desktop-assistant.sock");
    this.#listener = Deno.listen({ transport: "unix", path: this.path });
    this.#accepting = this.#accept(this.#listener, hello);
  }

  async #accept(
    listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>,
    hello: Record<string, unknown>,
  ): Promise<void> {
    try {
      for await (const conn of listener) {
        this.#conns.push(conn);
        await this.#write(conn, { type: "hello", ...hello });
        this.#readers.push(this.#read(conn));
        this.#connected.resolve();
      }
    } catch {
      // Closed.
    }
  }

  /** Resolves once a page has connected. */
  get connected(): Promise<void> {
    return this.#connected.promise;
  }

  async #write(conn: Deno.UnixConn, event: unknown): Promise<void> {
    const bytes = new TextEncoder().encode(JSON.stringify(event) + "\n");
    for (let at = 0; at < bytes.length;) {
      at += await conn.write(bytes.subarray(at));
    }
  }

  async #read(conn: Deno.UnixConn): Promise<void> {
    let pending = "";
    try {
      for await (
        const text of conn.readable.pipeThrough(new TextDecoderStream())
      ) {
        pending += text;
        for (let end = pending.indexOf("\n"); end !== -1;) {
          this.received.push(JSON.parse(pending.slice(0, end)));
          pending = pending.slice(end + 1);
          end = pending.indexOf("\n");
        }
        const changed = this.#changed;
        this.#changed = Promise.withResolvers<void>();
        changed.resolve();
      }
    } catch {
      // The page left.
    }
  }

  /** Sends events to every connected page. */
  async send(...events: Record<string, unknown>[]): Promise<void> {
    for (const conn of this.#conns) {
      for (const event of events) await this.#write(conn, event);
    }
  }

  /** The first command received of `type` (others are skipped over, once). */
  async command(type: string): Promise<Record<string, unknown>> {
    return await within(
      (async () => {
        while (true) {
          const at = this.received.findIndex((line) => line.type === type);
          if (at !== -1) return this.received.splice(at, 1)[0]!;
          await this.#changed.promise;
        }
      })(),
      `a ${type} command from the page`,
    );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#listener.close();
    for (const conn of this.#conns) {
      try {
        conn.close();
      } catch {
        // Closed by the page.
      }
    }
    await this.#accepting;
    await Promise.all(this.#readers);
  }
}

/** A scripted daemon, the canvas, a browser and a page greeted by the daemon (its `list` taken). */
export async function stack(
  hello: Partial<Hello>,
  viewport?: { width: number; height: number },
) {
  const home = await Deno.makeTempDir({ prefix: "da-web-proto-" });
  const runtime = join(home, "run");
  await Deno.mkdir(runtime, { mode: 0o700 });
  // Every field the daemon's `hello` carries (`helloEvent`).
  const daemon = new ScriptedDaemon(
    runtime,
    idleHello({
      backend: {
        state: "up",
        url: "http://127.0.0.1:8080",
        model: "qwen3-8b",
        ctx_max: 4096,
        message: null,
      },
      ...hello,
    }),
  );
  const web = await WebProcess.start(daemon.path, runtime);
  const browser = await TestBrowser.launch();
  const page = await browser.page(web.url, viewport);
  await daemon.connected;
  await greeted(page);
  // The page lists the conversations when greeted; answer it.
  await daemon.command("list");
  return {
    home,
    daemon,
    web,
    browser,
    page,
    async [Symbol.asyncDispose]() {
      await browser[Symbol.asyncDispose]();
      await web[Symbol.asyncDispose]();
      await daemon[Symbol.asyncDispose]();
      await Deno.remove(home, { recursive: true });
    },
  };
}

/** Waits until the element's text contains `text`. */
export async function shows(page: Page, selector: string, text: string) {
  try {
    await page.waitForFunction(
      (sel: string, want: string) =>
        document.querySelector(sel)?.textContent?.includes(want) === true,
      POLL,
      selector,
      text,
    );
  } catch (error) {
    const now = await page.evaluate(
      (sel: string) => document.querySelector(sel)?.textContent ?? null,
      selector,
    );
    throw new Error(
      `${selector} never showed ${JSON.stringify(text)}; it shows ${
        JSON.stringify(now)
      }`,
      { cause: error },
    );
  }
}

/** Whether the element is hidden (null when absent). */
export function hidden(page: Page, selector: string): Promise<boolean | null> {
  return page.evaluate(
    (sel: string) => document.querySelector(sel)?.hidden ?? null,
    selector,
  );
}

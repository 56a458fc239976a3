/**
 * The browser canvas under test: `main.ts web` as a subprocess with exactly
 * its derived grants on an ephemeral port, and raw HTTP over TCP for the
 * requests a browser would never send (a foreign `Host`, a missing token).
 */
import type { Page } from "./puppeteer.ts";
import { webFlags } from "../../src/web/web.ts";
import { clientEnv, ClientProcess, MAIN } from "./client_harness.ts";

/** A running canvas process and its address. */
export class WebProcess implements AsyncDisposable {
  readonly process: ClientProcess;
  /** The printed address, token included: `http://127.0.0.1:PORT/TOKEN/`. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** `127.0.0.1:PORT`. */
  readonly host: string;
  /** `http://127.0.0.1:PORT`. */
  readonly origin: string;
  /** The flags it was started with. */
  readonly flags: string[];

  private constructor(process: ClientProcess, url: string, flags: string[]) {
    this.process = process;
    this.url = url;
    this.flags = flags;
    const parsed = new URL(url);
    this.port = Number(parsed.port);
    this.token = parsed.pathname.split("/")[1]!;
    this.host = parsed.host;
    this.origin = parsed.origin;
  }

  /** Starts the canvas for the daemon at `socketPath` (in `runtimeDir`) and waits for its address. */
  static async start(
    socketPath: string,
    runtimeDir: string,
  ): Promise<WebProcess> {
    const flags = webFlags({ socketPath, port: 0 });
    const process = ClientProcess.spawn(
      ["run", "--quiet", "--no-prompt", ...flags, MAIN, "web", "--port", "0"],
      { env: clientEnv(runtimeDir) },
    );
    try {
      await process.waitFor(/canvas: http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/\n/);
    } catch (error) {
      await process[Symbol.asyncDispose]();
      throw error;
    }
    const url = process.stdout.match(/http:\/\/127\.0\.0\.1:\d+\/[\w-]+\//)![0];
    return new WebProcess(process, url, flags);
  }

  /** The address of a file of the page, e.g. `app.js`. */
  file(name: string): string {
    return `${this.url}${name}`;
  }

  /** The page's WebSocket address. */
  get socketUrl(): string {
    return `ws://${this.host}/${this.token}/ws`;
  }

  /** What the canvas logged so far. */
  get log(): string {
    return this.process.stderr;
  }

  /** Stops the canvas (SIGTERM) and resolves to its exit code. */
  async stop(): Promise<number> {
    this.process.child.kill("SIGTERM");
    return await this.process.exit();
  }

  /** Kills the canvas if still running. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.process[Symbol.asyncDispose]();
  }
}

/** A raw HTTP answer: status, lower-cased headers, body. */
export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/**
 * Sends one HTTP/1.1 request over a fresh TCP connection exactly as given
 * (`headers` in order, Host included) and reads the answer's head and, for
 * anything but a 101, its body until the server closes.
 */
export async function rawRequest(
  port: number,
  path: string,
  headers: [string, string][],
): Promise<RawAnswer> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const head = [
      `GET ${path} HTTP/1.1`,
      ...headers.map(([k, v]) => `${k}: ${v}`),
    ]
      .join("\r\n") + "\r\n\r\n";
    await conn.write(new TextEncoder().encode(head));
    let bytes = new Uint8Array(0);
    const buffer = new Uint8Array(64 * 1024);
    const latin1 = new TextDecoder("latin1");
    let headEnd = -1;
    let bodyBytes = Infinity;
    while (headEnd === -1 || bytes.length < headEnd + 4 + bodyBytes) {
      const n = await conn.read(buffer);
      if (n === null) break;
      const grown = new Uint8Array(bytes.length + n);
      grown.set(bytes);
      grown.set(buffer.subarray(0, n), bytes.length);
      bytes = grown;
      if (headEnd === -1) {
        headEnd = latin1.decode(bytes).indexOf("\r\n\r\n");
        if (headEnd === -1) continue;
        const headText = latin1.decode(bytes.subarray(0, headEnd));
        const length = /\r\ncontent-length: *(\d+)/i.exec(headText);
        // A 101 has no body; other answers here always carry a length.
        bodyBytes = headText.startsWith("HTTP/1.1 101")
          ? 0
          : Number(length?.[1] ?? Infinity);
      }
    }
    const [statusLine = "", ...lines] = latin1.decode(
      bytes.subarray(0, headEnd),
    ).split("\r\n");
    const headerMap = new Map<string, string>();
    for (const line of lines) {
      const colon = line.indexOf(":");
      headerMap.set(
        line.slice(0, colon).trim().toLowerCase(),
        line.slice(colon + 1).trim(),
      );
    }
    return {
      status: Number(statusLine.split(" ")[1]),
      headers: headerMap,
      body: new TextDecoder().decode(bytes.subarray(headEnd + 4)),
    };
  } finally {
    conn.close();
  }
}

/** The headers of a WebSocket upgrade, with the given Host and Origin (null leaves it out). */
export function upgradeHeaders(
  host: string,
  origin: string | null,
): [string, string][] {
  return [
    ["Host", host],
    ["Upgrade", "websocket"],
    ["Connection", "Upgrade"],
    ["Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="],
    ["Sec-WebSocket-Version", "13"],
    ...(origin === null ? [] : [["Origin", origin] as [string, string]]),
  ];
}

/** How a page's WebSocket ended. */
export interface Closed {
  code: number;
  reason: string;
}

/** A WebSocket to the canvas as a page opens it, with an ordered inbox of parsed messages. */
export class PageSocket implements AsyncDisposable {
  readonly ws: WebSocket;
  /** Every message received, parsed, in order. */
  readonly received: Record<string, unknown>[] = [];
  /** WebSocket messages received (each one or more lines). */
  messages = 0;
  readonly opened: Promise<void>;
  readonly closed: Promise<Closed>;
  #read = 0;
  #changed = Promise.withResolvers<void>();

  /** Opens `url` sending `origin` (null sends none). */
  constructor(url: string, origin: string | null) {
    // Deno's WebSocket takes extra headers: a browser would send its Origin.
    const init = origin === null ? {} : { headers: { origin } };
    this.ws = new WebSocket(url, init as unknown as string[]);
    const opened = Promise.withResolvers<void>();
    const closed = Promise.withResolvers<Closed>();
    this.opened = opened.promise;
    this.closed = closed.promise;
    this.ws.addEventListener("open", () => opened.resolve());
    this.ws.addEventListener("message", (event) => {
      // One or more whole lines: a part line would fail to parse here.
      for (const line of String(event.data).split("\n")) {
        this.received.push(JSON.parse(line));
      }
      this.messages++;
      this.#notify();
    });
    this.ws.addEventListener("close", (event) => {
      opened.reject(new Error(`closed before opening (${event.code})`));
      closed.resolve({ code: event.code, reason: event.reason });
      this.#notify();
    });
    // The close event follows every error; the failure is read there.
    this.ws.addEventListener("error", () => {});
    this.opened.catch(() => {});
  }

  /** Sends one text message. */
  send(value: unknown): void {
    this.ws.send(typeof value === "string" ? value : JSON.stringify(value));
  }

  /** The next message not yet taken (of `type`, skipping others, when given). */
  async next(type?: string): Promise<Record<string, unknown>> {
    while (true) {
      while (this.#read < this.received.length) {
        const message = this.received[this.#read++]!;
        if (type === undefined || message.type === type) return message;
      }
      const ended = await Promise.race([
        this.#changed.promise.then(() => false),
        this.closed.then(() => true),
      ]);
      if (ended && this.#read >= this.received.length) {
        throw new Error(
          `The socket closed while waiting for ${type ?? "a message"}`,
        );
      }
    }
  }

  /** Messages up to and including the first that matches. */
  async until(
    predicate: (message: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>[]> {
    const taken: Record<string, unknown>[] = [];
    while (true) {
      const message = await this.next();
      taken.push(message);
      if (predicate(message)) return taken;
    }
  }

  #notify(): void {
    const changed = this.#changed;
    this.#changed = Promise.withResolvers<void>();
    changed.resolve();
  }

  /** Closes the socket and waits for the close. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.ws.readyState < WebSocket.CLOSING) this.ws.close();
    await this.closed;
  }
}

/** How long the page may take to show something, and how waits poll (a timer: a tab in the background gets no frames). */
export const PAGE_POLL = { timeout: 15_000, polling: 50 } as const;

/** Waits until the page has the daemon's hello and has drawn it. */
export async function greeted(page: Page): Promise<void> {
  await page.waitForFunction(
    () => {
      const scope = globalThis as unknown as {
        daCanvas?: { model: { greeted: boolean } };
        document: {
          getElementById(id: string): { dataset: { tone?: string } } | null;
        };
      };
      return scope.daCanvas?.model.greeted === true &&
        scope.document.getElementById("connection")?.dataset.tone === "up";
    },
    PAGE_POLL,
  );
}

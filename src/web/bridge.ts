/**
 * One page's connection to the daemon: a WebSocket on one side, the daemon's
 * Unix socket on the other, line for line. The lines the daemon writes go
 * to the page as they are, whole and in order: each text message holds the
 * whole lines one read brought, joined by `\n` (see line_batch.ts). Each
 * text message from the page is written as one line. So the page speaks
 * the socket protocol itself. Nothing is parsed or kept here: the bridge
 * knows lengths, never contents.
 */
import { LineBatchStream } from "./line_batch.ts";
import { describeError, log } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";

/** Close codes the page reads (4000–4999 are the application's own). */
export const CLOSE = Object.freeze({
  /** The daemon closed its end (it stopped, or dropped this page as too slow). */
  daemonClosed: 4000,
  /** No daemon answers on the socket. */
  noDaemon: 4001,
  /** The daemon sent a line longer than the bridge carries. */
  lineTooLong: 4002,
  /** The page sent a binary frame: the protocol is text. */
  notText: 1003,
  /** The page sent faster than the daemon takes it, past the bound. */
  tooMuch: 1009,
  /** The canvas is shutting down. */
  goingAway: 1001,
});

/** Options of a {@link Bridge}. */
export interface BridgeOptions {
  /** The daemon's socket. */
  socketPath: string;
  /** Opens the socket; default Deno.connect. */
  connect?: (path: string) => Promise<Deno.Conn>;
  /** Longest line passed to the page, in bytes; a `hello` carries a whole conversation. */
  maxLineBytes?: number;
  /** Bytes the page may have queued towards the daemon before it is cut off. */
  maxUnsentBytes?: number;
  /** Bytes queued towards the page past which the bridge stops reading the daemon until they drain. */
  highWaterBytes?: number;
}

const DEFAULT_MAX_LINE_BYTES = 256 * 1024 * 1024;
const DEFAULT_MAX_UNSENT = 8 * 1024 * 1024;
const DEFAULT_HIGH_WATER = 4 * 1024 * 1024;
/** How often a paused bridge looks at the page's queue: WebSocket has no drain event. */
const DRAIN_POLL_MS = 10;

const encoder = new TextEncoder();

function connectUnix(path: string): Promise<Deno.Conn> {
  return Deno.connect({ transport: "unix", path });
}

/** A WebSocket bridged to a fresh connection to the daemon; ends when either side does. */
export class Bridge implements AsyncDisposable {
  /** Resolves once both sides are closed. */
  readonly closed: Promise<void>;
  readonly #ws: WebSocket;
  readonly #options: BridgeOptions;
  readonly #connecting: Promise<Deno.Conn>;
  #conn: Deno.Conn | null = null;
  #writing: Promise<void> = Promise.resolve();
  #unsent = 0;
  #over = false;
  #linesIn = 0;
  #messagesOut = 0;
  readonly #started = performance.now();
  /** Resolves once the page's side is open, or closed before it opened. */
  readonly #open = Promise.withResolvers<void>();

  /** Starts connecting to the daemon at once; messages the page sends meanwhile wait their turn. */
  constructor(ws: WebSocket, options: BridgeOptions) {
    this.#ws = ws;
    this.#options = options;
    this.#connecting = (options.connect ?? connectUnix)(options.socketPath);
    // A refused connection is handled in #run; this only keeps it observed.
    this.#connecting.catch(() => {});
    if (ws.readyState !== WebSocket.CONNECTING) this.#open.resolve();
    ws.addEventListener("open", () => this.#open.resolve());
    ws.addEventListener("message", (event) => this.#fromPage(event.data));
    ws.addEventListener("close", () => {
      this.#open.resolve();
      this.#end(1000, "");
    });
    this.closed = this.#run();
  }

  /** Closes both sides (the canvas is shutting down) and waits for the end. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#end(CLOSE.goingAway, "the canvas is shutting down");
    await this.closed;
  }

  async #run(): Promise<void> {
    let conn: Deno.Conn;
    try {
      conn = await this.#connecting;
    } catch (error) {
      await this.#open.promise;
      log.warn("web bridge found no daemon", {
        error: describeError(error),
      });
      this.#end(
        CLOSE.noDaemon,
        "no daemon answers on the socket: start it with deno task start",
      );
      return;
    }
    this.#conn = conn;
    if (this.#over) {
      this.#closeConn();
      return;
    }
    await this.#open.promise;
    if (this.#over) {
      this.#closeConn();
      return;
    }
    log.info("web page connected");
    const ws = this.#ws;
    const highWater = this.#options.highWaterBytes ?? DEFAULT_HIGH_WATER;
    let tooLong = false;
    const toPage = new WritableStream<string>({
      write: async (lines) => {
        if (this.#over) throw new Error("closed");
        ws.send(lines);
        this.#messagesOut++;
        // A page that does not read holds the daemon's lines here; past the
        // mark, stop reading the socket, so the daemon sees a slow client
        // and drops it as it would any other.
        while (ws.bufferedAmount > highWater && !this.#over) {
          await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
        }
      },
    });
    try {
      await conn.readable
        .pipeThrough(
          new LineBatchStream({
            maxLineBytes: this.#options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES,
          }),
        )
        .pipeTo(toPage);
    } catch (error) {
      // A reset, a page gone or a line too long: all end the bridge below.
      tooLong = error instanceof RangeError;
    }
    if (tooLong) {
      this.#end(CLOSE.lineTooLong, "the daemon sent a line too long to pass");
    } else {
      this.#end(CLOSE.daemonClosed, "the daemon closed the connection");
    }
    await this.#writing;
    log.info("web page left", {
      lines_in: this.#linesIn,
      messages_out: this.#messagesOut,
      ms: Math.round(performance.now() - this.#started),
    });
  }

  #fromPage(data: unknown): void {
    if (this.#over) return;
    if (typeof data !== "string") {
      this.#end(CLOSE.notText, "the protocol is text: send JSON lines");
      return;
    }
    const bytes = encoder.encode(data + "\n");
    const limit = this.#options.maxUnsentBytes ?? DEFAULT_MAX_UNSENT;
    if (this.#unsent + bytes.length > limit) {
      this.#end(CLOSE.tooMuch, "too much sent before the daemon took it");
      return;
    }
    this.#unsent += bytes.length;
    this.#linesIn++;
    this.#writing = this.#writing.then(async () => {
      try {
        const conn = await this.#connecting;
        if (!this.#over) await writeAll(conn, bytes);
      } catch {
        // The daemon is gone: the reading side ends the bridge.
      } finally {
        this.#unsent -= bytes.length;
      }
    });
  }

  /** Ends both sides once; the page learns why from the close code and reason. */
  #end(code: number, reason: string): void {
    if (this.#over) return;
    this.#over = true;
    this.#open.resolve();
    const ws = this.#ws;
    if (
      ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING
    ) {
      try {
        ws.close(code, reason);
      } catch {
        // Closed meanwhile.
      }
    }
    this.#closeConn();
  }

  #closeConn(): void {
    try {
      this.#conn?.close();
    } catch {
      // Closed already, by the readable's end.
    }
  }
}

/**
 * A test client for the daemon's socket: sends commands as JSON lines (or raw
 * bytes) and reads events back as parsed JSON, in order.
 *
 * ```ts
 * await using client = await SocketClient.connect(path);
 * await client.next("hello");
 * await client.send({ type: "ping" });
 * const pong = await client.next("pong");
 * ```
 */

import type { Event } from "../../src/protocol/protocol.ts";

/** An event as read from the socket: a protocol event, maybe with extra fields. */
export type Received = Event & Record<string, unknown>;

/** True for the `state idle` event that ends every turn. */
export const isIdle = (event: Received): boolean =>
  event.type === "state" && event.state === "idle";

/** An event without the `timings` a finished reply's `done` carries: for asserting the rest of it exactly. */
export function withoutTimings(event: Received): Received {
  const { timings: _timings, ...rest } = event as Received & {
    timings?: unknown;
  };
  return rest as Received;
}

/** The received event of one type. */
export type EventOf<T extends Event["type"]> = Extract<Event, { type: T }>;

/** Options of {@link SocketClient.connect}. */
export interface SocketClientOptions {
  /** How long `next`/`until`/`closed` wait before failing the test; default 10 000 ms. */
  timeoutMs?: number;
  /** False connects without reading (a client that never reads); default true. */
  read?: boolean;
}

const encoder = new TextEncoder();

/** A connected test client with an ordered inbox of parsed events. */
export class SocketClient implements AsyncDisposable {
  /** Every event received so far, in order, including consumed ones. */
  readonly received: Received[] = [];
  readonly #conn: Deno.UnixConn;
  readonly #timeoutMs: number;
  // Unconsumed events are #inbox[#head...]: shifting a long array is O(n).
  #inbox: Received[] = [];
  #head = 0;
  #ended = false;
  #endError: unknown = null;
  #changed = Promise.withResolvers<void>();
  #reading: Promise<void> | null = null;
  #closedByUs = false;

  private constructor(conn: Deno.UnixConn, timeoutMs: number) {
    this.#conn = conn;
    this.#timeoutMs = timeoutMs;
  }

  /** Connects to the socket at path and starts reading (unless `read: false`). */
  static async connect(
    path: string,
    options: SocketClientOptions = {},
  ): Promise<SocketClient> {
    const conn = await Deno.connect({ transport: "unix", path });
    const client = new SocketClient(conn, options.timeoutMs ?? 10_000);
    if (options.read ?? true) client.#reading = client.#readLoop();
    return client;
  }

  /** The raw connection, for tests that need to misbehave. */
  get conn(): Deno.UnixConn {
    return this.#conn;
  }

  /** True once the server closed the connection (or it failed). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Sends a value as one JSON line. */
  send(command: unknown): Promise<void> {
    return this.sendRaw(JSON.stringify(command) + "\n");
  }

  /** Sends text followed by a newline, as is (need not be JSON). */
  sendLine(text: string): Promise<void> {
    return this.sendRaw(text + "\n");
  }

  /** Sends bytes or text exactly as given: no newline added. */
  async sendRaw(data: Uint8Array | string): Promise<void> {
    const bytes = typeof data === "string" ? encoder.encode(data) : data;
    let offset = 0;
    while (offset < bytes.length) {
      offset += await this.#conn.write(bytes.subarray(offset));
    }
  }

  /** Half-closes: the server sees the end of input, the client can still read. */
  closeWrite(): Promise<void> {
    return this.#conn.closeWrite();
  }

  /** The next event; with a type, fails unless the next event is of that type. */
  next(): Promise<Received>;
  /** The next event, which must be of the given type. */
  next<T extends Event["type"]>(type: T): Promise<EventOf<T>>;
  async next(type?: Event["type"]): Promise<Received> {
    const what = type ? `a "${type}" event` : "an event";
    const event = await this.#wait(what, () => this.#take());
    if (type !== undefined && event.type !== type) {
      throw new Error(
        `Expected ${what}, got ${JSON.stringify(event).slice(0, 300)}`,
      );
    }
    return event;
  }

  /** Reads events until one matches; returns them all, the match last. */
  async until(predicate: (event: Received) => boolean): Promise<Received[]> {
    const seen: Received[] = [];
    await this.#wait("an event matching the predicate", () => {
      for (let event = this.#take(); event; event = this.#take()) {
        seen.push(event);
        if (predicate(event)) return event;
      }
      return undefined;
    }, () => seen);
    return seen;
  }

  /** Resolves when the server has closed the connection; returns the events not yet consumed. */
  async closed(): Promise<Received[]> {
    await this.#wait(
      "the server to close the connection",
      () => this.#ended || undefined,
    );
    const rest = this.#inbox.slice(this.#head);
    this.#inbox = [];
    this.#head = 0;
    return rest;
  }

  /** Closes the connection (idempotent) and waits for the reader to stop. */
  async close(): Promise<void> {
    if (!this.#closedByUs) {
      this.#closedByUs = true;
      try {
        this.#conn.close();
      } catch {
        // Closed already.
      }
    }
    await this.#reading;
  }

  /** Same as {@link SocketClient.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #wait<T>(
    what: string,
    take: () => T | undefined,
    partial: () => Received[] = () => [],
  ): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const got = partial().map((e) => e.type).join(", ");
        reject(
          new Error(
            `Timed out after ${this.#timeoutMs} ms waiting for ${what}` +
              (got ? ` (got: ${got})` : ""),
          ),
        );
      }, this.#timeoutMs);
    });
    try {
      while (true) {
        const event = take();
        if (event !== undefined) return event;
        if (this.#ended) {
          const got = partial().map((e) => e.type).join(", ");
          throw new Error(
            `Connection closed while waiting for ${what}` +
              (got ? ` (got: ${got})` : "") +
              (this.#endError ? `: ${String(this.#endError)}` : ""),
          );
        }
        await Promise.race([this.#changed.promise, timeout]);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  #take(): Received | undefined {
    if (this.#head >= this.#inbox.length) return undefined;
    const event = this.#inbox[this.#head++];
    if (this.#head > 1024 && this.#head * 2 > this.#inbox.length) {
      this.#inbox = this.#inbox.slice(this.#head);
      this.#head = 0;
    }
    return event;
  }

  #notify(): void {
    const changed = this.#changed;
    this.#changed = Promise.withResolvers<void>();
    changed.resolve();
  }

  async #readLoop(): Promise<void> {
    const decoder = new TextDecoder();
    let pending = "";
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await this.#conn.read(buffer);
        if (n === null) break;
        pending += decoder.decode(buffer.subarray(0, n), { stream: true });
        if (!pending.includes("\n")) continue;
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) {
          const event = JSON.parse(line) as Received;
          this.received.push(event);
          this.#inbox.push(event);
        }
        this.#notify();
      }
    } catch (error) {
      // A reset after the server closed (unread input on its side) is a close too.
      if (
        !this.#closedByUs &&
        !(error instanceof Deno.errors.ConnectionReset)
      ) {
        this.#endError = error;
      }
    } finally {
      this.#ended = true;
      this.#notify();
    }
    if (pending !== "") {
      this.#endError ??= new Error(
        `Unterminated last line: ${pending.slice(0, 200)}`,
      );
    }
  }
}

/**
 * A lean socket client for measurements: each event is parsed and handed to
 * a callback with the moment its bytes were read, without keeping anything,
 * so 16 clients × 20,000 tokens cost the reader what a real view costs.
 */

/** An event as read; only `type` is relied on. */
export type BenchEvent = { type: string } & Record<string, unknown>;

/** Called for each event with `performance.now()` at the read that brought it. */
export type OnEvent = (event: BenchEvent, at: number) => void;

const encoder = new TextEncoder();

/** A connected client; `await using client = await BenchClient.connect(path)`. */
export class BenchClient implements AsyncDisposable {
  readonly #conn: Deno.UnixConn;
  readonly #reading: Promise<void>;
  #handlers = new Set<OnEvent>();
  #closed = false;

  private constructor(conn: Deno.UnixConn) {
    this.#conn = conn;
    this.#reading = this.#readLoop();
  }

  /** Connects and starts reading. */
  static async connect(path: string): Promise<BenchClient> {
    return new BenchClient(await Deno.connect({ transport: "unix", path }));
  }

  /** Adds a handler; returns a function that removes it. */
  on(handler: OnEvent): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** Resolves with the first event matching `predicate` (and its read time). */
  wait(
    predicate: (event: BenchEvent) => boolean,
  ): Promise<{ event: BenchEvent; at: number }> {
    const found = Promise.withResolvers<{ event: BenchEvent; at: number }>();
    // Made here so a failure names the caller that waited.
    const closed = new Error("Connection closed while waiting for an event");
    const off = this.on((event, at) => {
      if (!predicate(event)) return;
      off();
      found.resolve({ event, at });
    });
    this.#reading.then(() => {
      off();
      found.reject(closed);
    });
    return found.promise;
  }

  /** Sends one command; resolves with `performance.now()` once the write returned. */
  async send(command: unknown): Promise<number> {
    const bytes = encoder.encode(JSON.stringify(command) + "\n");
    let offset = 0;
    while (offset < bytes.length) {
      offset += await this.#conn.write(bytes.subarray(offset));
    }
    return performance.now();
  }

  /** Closes the connection and waits for the reader to stop. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      try {
        this.#conn.close();
      } catch {
        // Closed already.
      }
    }
    await this.#reading;
  }

  /** Same as close. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #readLoop(): Promise<void> {
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(256 * 1024);
    let pending = "";
    try {
      while (true) {
        const n = await this.#conn.read(buffer);
        if (n === null) break;
        const at = performance.now();
        // Only the new text can hold a newline not yet seen.
        let from = pending.length;
        pending += decoder.decode(buffer.subarray(0, n), { stream: true });
        let start = 0;
        for (
          let end = pending.indexOf("\n", from);
          end !== -1;
          end = pending.indexOf("\n", from)
        ) {
          const event = JSON.parse(pending.slice(start, end)) as BenchEvent;
          start = from = end + 1;
          for (const handler of this.#handlers) handler(event, at);
        }
        pending = pending.slice(start);
      }
    } catch {
      // A reset or a close is the end of the stream; waiters are told.
    }
  }
}

/**
 * One client connection of the socket server: its output queue and writer
 * loop (with the stall and backlog limits), and its input as a byte stream.
 */
import { describeError, log } from "../base/log.ts";
import { writeAll, type Writer } from "../streams/write_all.ts";

// Many small events (tokens) go out as one write of at most this size.
const WRITE_BATCH_BYTES = 64 * 1024;
const READ_BYTES = 64 * 1024;

/** The per-client limits the server enforces. */
export interface Limits {
  stallMs: number;
  maxBacklog: number;
  maxLineBytes: number;
}

/** One connection: its output queue, its writer loop and its reader loop. */
export class Client {
  // Unwritten lines are #queue[#head...]: shifting a long array is O(n).
  #queue: Uint8Array[] = [];
  #head = 0;
  /**
   * Bytes queued since the socket last accepted any, and the largest event
   * among them: what piles up while the client reads nothing.
   */
  #stuck = 0;
  #stuckLargest = 0;
  closed = false;
  /** No more input: close once the queue is written. */
  ending = false;
  #wake: PromiseWithResolvers<void> | null = null;
  #writingSince: number | null = null;
  /** The socket, with the stall clock running only while a write waits on it: the server's watchdog reads it, so a write costs no timer of its own. */
  readonly #clocked: Writer = {
    write: async (bytes) => {
      this.#writingSince = performance.now();
      this.onWriting();
      try {
        const n = await this.conn.write(bytes);
        // The client reads: what waited so far no longer counts against it.
        if (n > 0) this.#stuck = this.#stuckLargest = 0;
        return n;
      } finally {
        this.#writingSince = null;
      }
    },
  };
  #release: (() => void) | null = null;

  constructor(
    readonly id: number,
    readonly conn: Deno.UnixConn,
    readonly limits: Limits,
    readonly onGone: (client: Client) => void,
    /** Called as each write starts: the server's watchdog runs only while one waits. */
    readonly onWriting: () => void = () => {},
  ) {}

  /** Whether a write waits on the socket. */
  get writing(): boolean {
    return this.#writingSince !== null;
  }

  /** Queues encoded lines; drops the client when more than the backlog limit piles up while its socket accepts nothing. */
  send(bytes: Uint8Array): void {
    if (this.closed) return;
    this.#queue.push(bytes);
    this.#stuck += bytes.length;
    this.#stuckLargest = Math.max(this.#stuckLargest, bytes.length);
    // One event never counts, however large (the `open` of a long
    // conversation, a late client's `hello`): a client that reads gets it and
    // whatever follows it. What piles up besides it while the socket accepts
    // nothing is a client that stopped reading (the stall clock catches the
    // rest within 2 s).
    if (this.#stuck - this.#stuckLargest > this.limits.maxBacklog) {
      this.drop("backlog", { bytes: this.#stuck });
      return;
    }
    this.#wake?.resolve();
  }

  /** Closes once everything queued so far has been written. */
  end(): void {
    this.ending = true;
    this.#wake?.resolve();
  }

  /** Closes the connection at once; later sends are ignored. */
  drop(reason: string, fields: Record<string, number> = {}): void {
    if (this.closed) return;
    this.#close();
    log.info("client dropped", { client: this.id, reason, ...fields });
  }

  #close(): void {
    this.closed = true;
    this.#queue = [];
    this.#head = 0;
    try {
      this.conn.close();
    } catch {
      // Already closed by a failed operation: nothing left to release.
    }
    this.#wake?.resolve();
    this.#release?.();
    this.onGone(this);
  }

  /** Waits for work on this client's behalf, or for the client to go (then undefined). One at a time. */
  async whileOpen<T>(work: Promise<T>): Promise<T | undefined> {
    if (this.closed) return undefined;
    const waiter = Promise.withResolvers<T | undefined>();
    this.#release = () => waiter.resolve(undefined);
    work.then(waiter.resolve, waiter.reject);
    try {
      return await waiter.promise;
    } finally {
      this.#release = null;
    }
  }

  /** Writes the queue until the client is dropped or has ended. */
  async writeLoop(): Promise<void> {
    while (!this.closed) {
      if (this.#head === this.#queue.length) {
        if (this.ending) {
          this.#close();
          log.info("client left", { client: this.id });
          return;
        }
        this.#wake = Promise.withResolvers<void>();
        await this.#wake.promise;
        this.#wake = null;
        continue;
      }
      const batch = this.#takeBatch();
      try {
        await this.#writeAll(batch);
      } catch (error) {
        if (!this.closed) {
          this.drop("write failed", {});
          log.debug("client write error", {
            client: this.id,
            error: describeError(error),
          });
        }
        return;
      }
    }
  }

  /** Takes the next line, or several short ones joined into one write. */
  #takeBatch(): Uint8Array {
    const queue = this.#queue;
    const start = this.#head;
    let end = start + 1;
    let size = queue[start]!.length;
    while (
      end < queue.length && size + queue[end]!.length <= WRITE_BATCH_BYTES
    ) {
      size += queue[end]!.length;
      end++;
    }
    this.#head = end;
    if (end === queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (end > 1024 && end * 2 > queue.length) {
      this.#queue = queue.slice(end);
      this.#head = 0;
    }
    if (end === start + 1) return queue[start]!;
    const batch = new Uint8Array(size);
    let offset = 0;
    for (let i = start; i < end; i++) {
      batch.set(queue[i]!, offset);
      offset += queue[i]!.length;
    }
    return batch;
  }

  /** Drops the client when its write in flight has waited past the stall limit. */
  checkStall(now: number): void {
    if (this.#writingSince === null) return;
    if (now - this.#writingSince > this.limits.stallMs) {
      this.drop("stall", { ms: Math.round(now - this.#writingSince) });
    }
  }

  async #writeAll(bytes: Uint8Array): Promise<void> {
    await writeAll(this.#clocked, bytes);
  }
}

/** The read in flight, so closing can wait for it to settle. */
export interface PendingRead {
  read: Promise<unknown> | null;
}

/** A byte stream over `conn.read` that, unlike `conn.readable`, leaves the connection open at end of input, so answers still go out after a client half-closes. */
export function inputOf(
  conn: Deno.UnixConn,
  pending: PendingRead,
): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const buffer = new Uint8Array(READ_BYTES);
      const read = conn.read(buffer);
      pending.read = read.catch(() => null);
      const n = await read;
      if (n === null) controller.close();
      else controller.enqueue(buffer.subarray(0, n));
    },
  });
}

/** Byte-stream sinks that keep a bounded part of a tool's output while counting all of it. */
import { concat } from "../streams/bytes.ts";

const decoder = new TextDecoder();

/** Keeps the first `limit` bytes of a byte stream while counting all of it. */
export class HeadCollector {
  readonly writable: WritableStream<Uint8Array>;
  bytes = 0;
  #newlines = 0;
  #lastByte = -1;
  #chunks: Uint8Array[] = [];
  #kept = 0;
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
    this.writable = new WritableStream({ write: (chunk) => this.#take(chunk) });
  }

  #take(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.bytes += chunk.length;
    this.#lastByte = chunk[chunk.length - 1] ?? -1;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) {
      this.#newlines++;
    }
    // A few bytes past the limit tell where the last whole character ends.
    const room = this.#limit + 4 - this.#kept;
    if (room > 0) {
      const part = chunk.length > room ? chunk.slice(0, room) : chunk.slice();
      this.#chunks.push(part);
      this.#kept += part.length;
    }
  }

  get lines(): number {
    return this.#newlines + (this.bytes > 0 && this.#lastByte !== 10 ? 1 : 0);
  }

  /** The kept text, cut on a UTF-8 boundary, with a note when cut. */
  text(): string {
    const buffer = concat(this.#chunks);
    if (this.bytes <= this.#limit) return decoder.decode(buffer);
    let cut = this.#limit;
    while (cut > 0 && ((buffer[cut] ?? 0) & 0xc0) === 0x80) cut--;
    const shown = decoder.decode(buffer.subarray(0, cut));
    const separator = shown === "" || shown.endsWith("\n") ? "" : "\n";
    return `${shown}${separator}[output cut: ${this.bytes} bytes, first ${cut} shown]`;
  }
}

/** Keeps the last `limit` bytes of a byte stream. */
export class TailCollector {
  readonly writable: WritableStream<Uint8Array>;
  bytes = 0;
  #chunks: Uint8Array[] = [];
  #kept = 0;
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
    this.writable = new WritableStream({ write: (chunk) => this.#take(chunk) });
  }

  #take(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    this.#chunks.push(chunk.slice());
    this.#kept += chunk.length;
    if (this.#kept > 2 * this.#limit) {
      const tail = concat(this.#chunks).slice(this.#kept - this.#limit);
      this.#chunks = [tail];
      this.#kept = tail.length;
    }
  }

  /** The last bytes as text, starting on a whole character. */
  text(): string {
    let buffer = concat(this.#chunks);
    if (buffer.length > this.#limit) {
      buffer = buffer.subarray(buffer.length - this.#limit);
      let start = 0;
      while (start < buffer.length && ((buffer[start] ?? 0) & 0xc0) === 0x80) {
        start++;
      }
      buffer = buffer.subarray(start);
    }
    return decoder.decode(buffer);
  }
}

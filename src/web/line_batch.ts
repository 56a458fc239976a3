/**
 * The daemon's lines grouped for the page: every whole line that one read
 * of the socket brought, joined by `\n`, becomes one WebSocket message. A
 * browser spends about as long on each message as on the work in it, so a
 * fast stream sent a line per message would cap the page near 7,000 tokens
 * a second; grouped, it keeps up with the socket. Nothing waits to fill a
 * group: a slow stream still goes out one line at a time, at once.
 */
import { concat } from "../streams/bytes.ts";

/** Options of a {@link LineBatchStream}. */
export interface LineBatchOptions {
  /** Longest line passed on, in bytes; a longer one errors the stream. */
  maxLineBytes: number;
}

const LF = 0x0a;

/** Bytes in, groups of whole lines out (without the last `\n`); a part line waits for its end. */
export class LineBatchStream extends TransformStream<Uint8Array, string> {
  /** Creates the grouping stage; RangeError once a line passes `maxLineBytes`. */
  constructor(options: LineBatchOptions) {
    const max = options.maxLineBytes;
    const decoder = new TextDecoder();
    // The start of a line whose end has not come yet.
    let held: Uint8Array[] = [];
    let heldBytes = 0;
    const tooLong = () =>
      new RangeError(`A line from the daemon passed ${max} bytes`);
    const hold = (part: Uint8Array) => {
      held.push(part.slice());
      heldBytes += part.length;
      if (heldBytes > max) throw tooLong();
    };
    super({
      transform(chunk, controller) {
        const last = chunk.lastIndexOf(LF);
        if (last === -1) {
          hold(chunk);
          return;
        }
        const bytes = held.length === 0
          ? chunk.subarray(0, last)
          : concat([...held, chunk.subarray(0, last)]);
        held = [];
        heldBytes = 0;
        for (let start = 0;;) {
          const end = bytes.indexOf(LF, start);
          if ((end === -1 ? bytes.length : end) - start > max) throw tooLong();
          if (end === -1) break;
          start = end + 1;
        }
        if (last + 1 < chunk.length) hold(chunk.subarray(last + 1));
        controller.enqueue(decoder.decode(bytes));
      },
    });
  }
}

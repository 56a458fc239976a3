/**
 * Byte-bounded line framing for the socket protocol: bytes in, lines out,
 * with a hard cap so one client cannot make the daemon buffer without end.
 */
import { concat } from "./bytes.ts";

/** One framed line (without its `\n` and trailing `\r`), or a report of an over-long line. */
export type LineChunk = { line: Uint8Array } | { tooLong: number };

/** Options of a {@link LineStream}. */
export interface LineStreamOptions {
  /** Longest line accepted, in bytes, without its line end. */
  maxBytes: number;
}

const LF = 0x0a;
const CR = 0x0d;

/** Splits bytes into lines on \n (a trailing \r is dropped); a line past maxBytes is reported once as tooLong and skipped to the next \n. */
export class LineStream extends TransformStream<Uint8Array, LineChunk> {
  /** Creates a splitter that reports lines longer than `options.maxBytes`. */
  constructor(options: LineStreamOptions) {
    const { maxBytes } = options;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
      throw new RangeError(
        `LineStream maxBytes must be a positive integer, got ${maxBytes}`,
      );
    }
    // Pieces of the current line; joined once, when its end arrives, so a
    // line sent one byte at a time costs linear time.
    let parts: Uint8Array[] = [];
    let held = 0;
    // True while skipping the rest of a line already reported as too long.
    let skipping = false;

    const reset = () => {
      parts = [];
      held = 0;
    };

    // The line is over the limit once it holds more than maxBytes without a
    // possible final \r, or more than maxBytes + 1 in any case.
    const overLimit = (): boolean => {
      if (held > maxBytes + 1) return true;
      if (held === maxBytes + 1) return lastByte() !== CR;
      return false;
    };

    const lastByte = (): number | undefined => {
      const last = parts[parts.length - 1];
      return last === undefined ? undefined : last[last.length - 1];
    };

    const emitLine = (
      controller: TransformStreamDefaultController<LineChunk>,
    ) => {
      // Parts are views of the read buffer, which the next read reuses.
      let line = parts.length === 1 ? parts[0]!.slice() : concat(parts);
      reset();
      if (line[line.length - 1] === CR) line = line.subarray(0, -1);
      if (line.length > maxBytes) controller.enqueue({ tooLong: line.length });
      else controller.enqueue({ line });
    };

    super({
      transform(chunk, controller) {
        let start = 0;
        while (start < chunk.length) {
          const end = chunk.indexOf(LF, start);
          const stop = end === -1 ? chunk.length : end;
          if (skipping) {
            if (end === -1) return;
            skipping = false;
            start = end + 1;
            continue;
          }
          if (stop > start) {
            parts.push(chunk.subarray(start, stop));
            held += stop - start;
          }
          if (overLimit()) {
            // Answer at once rather than at the (maybe never sent) newline.
            controller.enqueue({ tooLong: held });
            reset();
            skipping = end === -1;
            if (end === -1) return;
          } else if (end !== -1) {
            emitLine(controller);
          }
          start = stop + 1;
        }
      },
      flush(controller) {
        // An unterminated last line still counts: `printf '{…}' | nc -U` works.
        if (!skipping && held > 0) emitLine(controller);
        reset();
      },
    });
  }
}

/** A stream stage that errors when its source goes quiet or its signal aborts. */

/** Options of `StallGuardStream`. */
export interface StallGuardOptions {
  /** Longest wait for the next chunk, in milliseconds; no stall clock when absent. */
  ms?: number | undefined;
  /** Called once when the wait runs out, to abort the request. */
  onStall?: (() => void) | undefined;
  /** Once it aborts, the stream errors with its reason. */
  signal?: AbortSignal | undefined;
  /** The error a stall ends the stream with; a TimeoutError when absent. */
  stalled?: ((ms: number) => Error) | undefined;
}

/**
 * Guards a body's bytes: errors the stream with `stalled(ms)` when no chunk
 * arrives for `ms` (and calls onStall to abort the fetch), or with the reason
 * of `signal` once it aborts. Either way the pipe
 * that feeds it cancels its source, the response body, whose HTTP connection
 * then closes and llama-server stops generating.
 *
 * The signal is watched here rather than left to fetch: once headers are in,
 * fetch listens on the Request's own signal, which may be garbage-collected
 * with the Response, and an abort after that never reaches the body (seen
 * under GC pressure). This stage holds `signal` while the stream lives.
 *
 * The clock measures arrivals, so a reader slower than `ms` per chunk would
 * count as a stall; the daemon reads deltas as fast as they come.
 */
export class StallGuardStream<T> extends TransformStream<T, T> {
  /** Starts the clock at once: waiting for the first chunk counts too. */
  constructor(options: StallGuardOptions) {
    const { ms, signal } = options;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let controller!: TransformStreamDefaultController<T>;
    // A chunk only moves the deadline; the one timer checks it when it fires,
    // so a token costs no timer call of its own.
    let last = performance.now();
    const onAbort = () => {
      stop();
      controller.error(signal?.reason);
    };
    const stop = () => {
      clearTimeout(timer);
      timer = undefined;
      signal?.removeEventListener("abort", onAbort);
    };
    const check = () => {
      if (ms === undefined) return;
      const idle = performance.now() - last;
      if (idle < ms) {
        timer = setTimeout(check, ms - idle);
        return;
      }
      stop();
      controller.error(
        options.stalled?.(ms) ??
          new DOMException(`No data for ${ms} ms`, "TimeoutError"),
      );
      options.onStall?.();
    };
    super({
      start(c) {
        controller = c;
        if (ms !== undefined) timer = setTimeout(check, ms);
        if (signal?.aborted) onAbort();
        else signal?.addEventListener("abort", onAbort, { once: true });
      },
      transform(chunk, c) {
        last = performance.now();
        c.enqueue(chunk);
      },
      flush: stop,
      cancel: stop,
    });
  }
}

/**
 * A clock and timers that move only when a test says: `advance(ms)` runs
 * what comes due, and `scheduled()` says when the code under test set its
 * next timer. A poll period passes without a real second going by.
 */
import type { PollTimer } from "../../src/llm/backend.ts";

/** Timers on a clock the test moves. */
export class ManualClock implements PollTimer {
  #time = 0;
  #nextHandle = 1;
  readonly #timers = new Map<number, { at: number; run: () => void }>();
  #set = Promise.withResolvers<void>();

  /** Milliseconds since the clock was made, as the test moved them. */
  readonly now = (): number => this.#time;

  /** Runs `run` once the clock has moved `ms` on. */
  set(run: () => void, ms: number): number {
    const handle = this.#nextHandle++;
    this.#timers.set(handle, { at: this.#time + ms, run });
    this.#set.resolve();
    return handle;
  }

  /** Cancels a timer not yet run. */
  cancel(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers set and not yet run or cancelled. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Resolves once a timer is pending: at once when one is. */
  scheduled(): Promise<void> {
    if (this.#timers.size > 0) return Promise.resolve();
    this.#set = Promise.withResolvers<void>();
    return this.#set.promise;
  }

  /** Moves the clock `ms` on, running each timer that comes due, earliest first. */
  advance(ms: number): void {
    const until = this.#time + ms;
    for (;;) {
      const due = [...this.#timers].filter(([, timer]) => timer.at <= until)
        .sort(([, a], [, b]) => a.at - b.at)[0];
      if (due === undefined) break;
      const [handle, timer] = due;
      this.#timers.delete(handle);
      this.#time = timer.at;
      timer.run();
    }
    this.#time = until;
  }
}

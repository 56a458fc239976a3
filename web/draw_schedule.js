// @ts-check
/// <reference lib="dom" />
/**
 * When the page draws: at most once per frame, leaving the page most of its
 * time to read. A draw's cost is its script plus the layout and paint the
 * browser does after it, so it is timed until the frame is over; the next
 * draw then rests twice that long. A fast stream coalesces into fewer,
 * larger draws instead of falling behind. A hidden tab gets no frames: a
 * timer stands in for them.
 */

/** @typedef {import("./model.js").Part} Part */
/** @typedef {{frames: number, drawMs: number, maxDrawMs: number}} DrawStats */

/** Rest after a draw, as a multiple of the draw's time, layout and paint included. */
const DRAW_REST = 2;

/** Collects the parts that changed and draws them in one go. */
export class DrawSchedule {
  /** @type {Set<Part>} */
  #queued = new Set();
  #scheduled = false;
  #settling = false;
  #lastDrawEnd = 0;
  #lastDrawTook = 0;
  #draw;
  #stats;

  /**
   * @param {(changed: Set<Part>) => void} draw
   * @param {DrawStats} stats figures for the tests and the benchmark
   */
  constructor(draw, stats) {
    this.#draw = draw;
    this.#stats = stats;
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && this.#scheduled && !this.#settling) {
        this.#scheduled = false;
        this.#drawNow();
      }
    });
  }

  /** Marks parts to draw and schedules a draw. */
  add(/** @type {Iterable<Part>} */ parts) {
    for (const part of parts) this.#queued.add(part);
    this.#schedule();
  }

  #schedule() {
    if (this.#scheduled || this.#settling || this.#queued.size === 0) return;
    this.#scheduled = true;
    const run = () => {
      if (!this.#scheduled) return;
      this.#scheduled = false;
      this.#drawNow();
    };
    const rest = this.#lastDrawEnd +
      Math.min(this.#lastDrawTook * DRAW_REST, 300) - performance.now();
    setTimeout(() => {
      requestAnimationFrame(run);
      setTimeout(run, 250);
    }, Math.max(0, rest));
  }

  #drawNow() {
    const changed = this.#queued;
    this.#queued = new Set();
    const started = performance.now();
    this.#draw(changed);
    const took = performance.now() - started;
    const stats = this.#stats;
    stats.frames++;
    stats.drawMs += took;
    stats.maxDrawMs = Math.max(stats.maxDrawMs, took);
    this.#settling = true;
    const settle = () => {
      if (!this.#settling) return;
      this.#settling = false;
      this.#lastDrawEnd = performance.now();
      this.#lastDrawTook = this.#lastDrawEnd - started;
      this.#schedule();
    };
    // After the next frame's callbacks come its layout and paint; a task
    // queued from there runs once they are done.
    requestAnimationFrame(() => setTimeout(settle, 0));
    setTimeout(settle, 250);
  }
}

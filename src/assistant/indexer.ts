/**
 * The background job that gives each stored turn its vector for search by
 * meaning (the question, the reply and its files' text, cut to the
 * embedding model's context). It runs only while no reply does and gives
 * way to a question at once (its request is aborted), in small batches;
 * a backlog (a history from before, a new embedding model) is worked
 * through the same way, newest turns first, each step reading a bounded
 * range of ids. `indexing {done, total}` goes to every client at most once
 * a second while it runs, and once when it is through. A failing embedding
 * server stops it until the server answers again (tried every
 * `backend_poll` seconds); nothing of it ever reaches a reply.
 */
import { describeError, log } from "../base/log.ts";
import type { PollTimer } from "../llm/backend.ts";
import type { Embedder } from "../llm/embeddings.ts";
import type { Event } from "../protocol/protocol.ts";
import { SCAN_SPAN, type Vectors } from "../store/vectors.ts";

/** Turns embedded in one request. */
const BATCH = 16;
/** Least time between two `indexing` events. */
const REPORT_MS = 1000;

/** What the indexer needs. */
export interface IndexerOptions {
  embedder: Embedder;
  vectors: Vectors;
  /** A vector as the history keeps it. */
  encode(vector: Float32Array): Uint8Array;
  /** Whether a reply is in flight: no batch starts then. */
  busy(): boolean;
  /** Sends an event to every client. */
  publish(event: Event): void;
  /** Milliseconds before a failed server is tried again; 0 waits for the next turn. */
  retryMs: number;
  timer?: PollTimer;
  now?: () => number;
  /** Told when a backlog is through. */
  done?: () => void;
}

/** Turn ids still to scan: from `below` down to `floor`. */
interface Range {
  below: number;
  floor: number;
}

const REAL_TIMER: PollTimer = {
  set: (run, ms) => setTimeout(run, ms),
  cancel: (handle) => clearTimeout(handle as number),
};

/** The turns' vectors, made in the background. */
export class Indexer implements Disposable {
  readonly #o: IndexerOptions;
  readonly #timer: PollTimer;
  readonly #now: () => number;
  /** The model that makes the vectors, as the server names it; null until it answered. */
  #model: string | null = null;
  /** Highest turn id seen, plus one. */
  #top = 0;
  #ranges: Range[] = [];
  #running: Promise<void> | null = null;
  #controller: AbortController | null = null;
  #retry: unknown = null;
  #up: boolean | null = null;
  #progress: { done: number; total: number } | null = null;
  /** Whether this pass made a vector: a pass that found nothing to do reports nothing. */
  #worked = false;
  #reported = 0;
  #closed = false;

  /** An idle indexer; `kick` starts it. */
  constructor(options: IndexerOptions) {
    this.#o = options;
    this.#timer = options.timer ?? REAL_TIMER;
    this.#now = options.now ?? Date.now;
  }

  /** Whether the embedding server answered last time; null before it was asked. */
  get up(): boolean | null {
    return this.#up;
  }

  /** The embedding model in use, once the server named it. */
  get model(): string | null {
    return this.#model;
  }

  /** Where the work stands while it runs; null when nothing is pending. */
  get progress(): { done: number; total: number } | null {
    return this.#progress && { ...this.#progress };
  }

  /** Turns may wait for their vector (a start, a saved turn, a reply ended): work, unless a reply runs. */
  kick(): void {
    if (this.#closed || this.#running || this.#o.busy()) return;
    if (this.#up === false && this.#retry !== null) return;
    this.#running = this.#run().catch((error) => {
      log.error("indexing failed", { error: describeError(error) });
    }).finally(() => {
      this.#running = null;
      this.#controller = null;
    });
  }

  /** A question starts: the batch in flight gives way at once. */
  pause(): void {
    this.#controller?.abort();
  }

  /** Resolves once no batch runs. */
  async settled(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Stops for good. */
  [Symbol.dispose](): void {
    this.#closed = true;
    this.#controller?.abort();
    if (this.#retry !== null) this.#timer.cancel(this.#retry);
    this.#retry = null;
  }

  async #run(): Promise<void> {
    const { vectors } = this.#o;
    const top = vectors.top();
    if (top > this.#top) {
      // Turns saved since: scanned first, then the rest goes on.
      this.#ranges.push({ below: top, floor: this.#top });
      this.#top = top;
    }
    while (!this.#closed && !this.#o.busy()) {
      const controller = new AbortController();
      this.#controller = controller;
      try {
        if (this.#model === null) await this.#learnModel(controller.signal);
        if (!await this.#step(controller.signal)) return;
      } catch (error) {
        if (controller.signal.aborted) return;
        this.#failed(error);
        return;
      }
    }
  }

  /** One batch, or a step down past a range without work; false when nothing is left. */
  async #step(signal: AbortSignal): Promise<boolean> {
    const range = this.#ranges.at(-1);
    const model = this.#model!;
    if (!range) {
      this.#finish(model);
      return false;
    }
    this.#progress ??= this.#o.vectors.progress(model);
    const rows = this.#o.vectors.pending(
      range.below,
      range.floor,
      model,
      BATCH,
    );
    if (rows.length === 0) {
      range.below = Math.max(range.floor, range.below - SCAN_SPAN);
      if (range.below <= range.floor) this.#ranges.pop();
      // Let other work in between steps of a long backlog.
      await new Promise((resolve) => setTimeout(resolve, 0));
      return true;
    }
    const chars = await this.#o.embedder.inputChars(signal);
    const embedded = await this.#o.embedder.embed(
      rows.map((row) => row.text.slice(0, chars)),
      signal,
    );
    if (signal.aborted) return false;
    this.#up = true;
    if (embedded.model !== model) {
      // Another model answers now: its vectors are made anew, all of them.
      log.info("embedding model changed: indexing again", {});
      this.#model = embedded.model;
      this.#ranges = [{ below: this.#top, floor: 0 }];
      this.#progress = null;
      return true;
    }
    const kept = this.#o.vectors.putAll(
      model,
      rows.map((row, i) => {
        const vector = embedded.vectors[i]!;
        return {
          turn: row.turn,
          dim: vector.length,
          data: this.#o.encode(vector),
        };
      }),
    );
    range.below = rows.at(-1)!.turn;
    this.#worked = true;
    if (this.#progress) this.#progress.done += kept;
    this.#report(false);
    return true;
  }

  async #learnModel(signal: AbortSignal): Promise<void> {
    const { model } = await this.#o.embedder.embed(["ping"], signal);
    this.#model = model;
    this.#up = true;
    this.#ranges = [{ below: this.#top, floor: 0 }];
    log.info("embedding server answers", { dim: "known" });
  }

  #finish(model: string): void {
    if (this.#progress === null) return;
    if (this.#worked) {
      this.#progress = this.#o.vectors.progress(model);
      this.#report(true);
      this.#o.done?.();
    }
    this.#progress = null;
    this.#worked = false;
  }

  #report(final: boolean): void {
    const now = this.#now();
    if (!final && now - this.#reported < REPORT_MS) return;
    this.#reported = now;
    const { done, total } = this.#progress!;
    this.#o.publish({ type: "indexing", done: final ? total : done, total });
  }

  #failed(error: unknown): void {
    if (this.#up !== false) {
      log.warn("embedding server failed: indexing waits", {
        error: describeError(error),
      });
    }
    this.#up = false;
    if (this.#o.retryMs <= 0) return;
    this.#retry = this.#timer.set(() => {
      this.#retry = null;
      this.kick();
    }, this.#o.retryMs);
  }
}

/**
 * The background job that gives each stored turn its vector for search by
 * meaning (the question, the reply and its files' text, cut to what the
 * embedding server takes at once). It runs only while no reply does and
 * gives way to a question at once (its request is aborted), in small
 * batches.
 *
 * A saved turn, named by `kick(turn)` (a new one, a retried or edited one,
 * one with the id of a turn deleted before), gets its vector first and
 * quietly: `wrote` names it, and no `indexing` is reported. Ids are not
 * unique over time (the turns table reuses the id of a newest turn
 * deleted), so being named is what makes a turn's vector anew, never its
 * id being higher than the last seen.
 *
 * A backlog (a history from before, a new embedding model) is worked
 * through newest first, each step reading a bounded range of ids, with
 * `indexing {done, total}` to every client at most once a second and once
 * when it is through, and `done` told then. A failing embedding server
 * stops the work until it answers again (tried every `backend_poll`
 * seconds); a failing history stops it until the next kick. Nothing of it
 * ever reaches a reply.
 */
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";
import { type PollTimer, REAL_TIMER } from "../llm/backend.ts";
import type { Embedder } from "../llm/embeddings.ts";
import type { Event } from "../protocol/protocol.ts";
import {
  SCAN_SPAN,
  type TurnText,
  type VectorModel,
  type Vectors,
} from "../store/vectors.ts";

/** Turns embedded in one request. */
const BATCH = 16;
/** Least time between two `indexing` events. */
const REPORT_MS = 1000;

/** What the indexer needs. */
export interface IndexerOptions {
  embedder: Pick<Embedder, "embed">;
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
  /** Told when a backlog is through: vectors were written below the newest turn. */
  done?: () => void;
  /** Told which turns got a vector outside a backlog (saved ones), so a reader that knew their ids reads them again. */
  wrote?: (turns: number[]) => void;
}

/** Turn ids still to scan: from `below` down to `floor`. */
interface Range {
  below: number;
  floor: number;
}

/** A batch to embed, and where its turns came from. */
type Work =
  | { kind: "named"; rows: TurnText[]; named: number[] }
  | { kind: "above" | "backlog"; rows: TurnText[]; range: Range };

/** The turns' vectors, made in the background. */
export class Indexer implements Disposable {
  readonly #o: IndexerOptions;
  readonly #timer: PollTimer;
  readonly #now: () => number;
  /** The model that makes the vectors; null until the server answered. */
  #model: VectorModel | null = null;
  /** Highest turn id seen, plus one. */
  #top = 0;
  /** Turns named by `kick`, first in line. */
  readonly #named = new Set<number>();
  /** Turns saved above the highest seen without being named: scanned quietly. */
  #above: Range[] = [];
  /** The backlog: reported. */
  #backlog: Range[] = [];
  #running: Promise<void> | null = null;
  #controller: AbortController | null = null;
  #retry: unknown = null;
  #up: boolean | null = null;
  #progress: { done: number; total: number } | null = null;
  /** Whether this backlog made a vector: one that found nothing to do reports nothing. */
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

  /** Where a backlog stands while it runs; null when none does. */
  get progress(): { done: number; total: number } | null {
    return this.#progress && { ...this.#progress };
  }

  /** Turns may wait for their vector (a start, a reply ended; `turn` one just saved): work, unless a reply runs. */
  kick(turn?: number): void {
    if (this.#closed) return;
    if (turn !== undefined) this.#named.add(turn);
    if (this.#running || this.#o.busy()) return;
    if (this.#up === false && this.#retry !== null) return;
    this.#running = this.#run().catch((error) => {
      log.error("indexing failed", { error: describeError(error) });
      return false;
    }).then((through) => {
      this.#running = null;
      this.#controller = null;
      // A turn named while the last step was ending.
      if (through && this.#named.size > 0) this.kick();
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

  /** Works until nothing is left (true), or a question, a failure or the end stops it (false). */
  async #run(): Promise<boolean> {
    while (!this.#closed && !this.#o.busy()) {
      const controller = new AbortController();
      this.#controller = controller;
      try {
        this.#lookAbove();
        if (this.#model === null) await this.#learnModel(controller.signal);
        if (!await this.#step(controller.signal)) {
          return !controller.signal.aborted;
        }
      } catch (error) {
        if (controller.signal.aborted) return false;
        if (error instanceof AssistantError && error.code === "embed_failed") {
          this.#failed(error);
        } else {
          // The history, not the server: the server is not marked down.
          log.error("indexing stopped: the history failed", {
            error: describeError(error),
          });
        }
        return false;
      }
    }
    return false;
  }

  /** Turns saved above the highest seen: scanned quietly (the first look leaves them to the backlog). */
  #lookAbove(): void {
    const top = this.#o.vectors.top();
    if (top <= this.#top) return;
    if (this.#top > 0) this.#above.push({ below: top, floor: this.#top });
    this.#top = top;
  }

  /** The next batch, or null when a step down past a range without work was all; undefined when nothing is left. */
  #next(model: VectorModel): Work | null | undefined {
    const { vectors } = this.#o;
    if (this.#named.size > 0) {
      const named = [...this.#named].slice(0, BATCH);
      const rows = vectors.pendingOf(named, model);
      if (rows.length > 0) return { kind: "named", rows, named };
      // Deleted, or given their vector meanwhile.
      for (const turn of named) this.#named.delete(turn);
      return null;
    }
    const kind = this.#above.length > 0 ? "above" : "backlog";
    const ranges = kind === "above" ? this.#above : this.#backlog;
    const range = ranges.at(-1);
    if (!range) return undefined;
    if (kind === "backlog") this.#progress ??= vectors.progress(model);
    const rows = vectors.pending(range.below, range.floor, model, BATCH);
    if (rows.length > 0) return { kind, rows, range };
    range.below = Math.max(range.floor, range.below - SCAN_SPAN);
    if (range.below <= range.floor) ranges.pop();
    return null;
  }

  /** One batch, or a step without work; false when nothing is left or the batch gave way. */
  async #step(signal: AbortSignal): Promise<boolean> {
    const model = this.#model!;
    const work = this.#next(model);
    if (work === undefined) {
      this.#finish(model);
      return false;
    }
    if (work === null) {
      // Let other work in between steps of a long backlog.
      await new Promise((resolve) => setTimeout(resolve, 0));
      return true;
    }
    const { rows } = work;
    const embedded = await this.#o.embedder.embed(
      rows.map((row) => row.text),
      signal,
    );
    if (signal.aborted) return false;
    this.#up = true;
    if (
      embedded.name !== model.name ||
      (embedded.dim !== null && embedded.dim !== model.dim)
    ) {
      // Another model answers now: its vectors are made anew, all of them.
      log.info("embedding model changed: indexing again", {
        dim: embedded.dim ?? model.dim,
      });
      this.#model = { name: embedded.name, dim: embedded.dim ?? model.dim };
      this.#backlog = [{ below: this.#top, floor: 0 }];
      this.#progress = null;
      return true;
    }
    // A text the server refused gets zeros, which no search finds.
    const kept = this.#o.vectors.putAll(
      model.name,
      rows.map((row, i) => ({
        turn: row.turn,
        dim: model.dim,
        data: this.#o.encode(
          embedded.vectors[i] ?? new Float32Array(model.dim),
        ),
      })),
    );
    if (work.kind === "named") {
      for (const turn of work.named) this.#named.delete(turn);
    } else {
      work.range.below = rows.at(-1)!.turn;
    }
    if (work.kind === "backlog") {
      this.#worked = true;
      if (this.#progress) this.#progress.done += kept;
      this.#report(false);
    } else {
      this.#o.wrote?.(rows.map((row) => row.turn));
    }
    return true;
  }

  async #learnModel(signal: AbortSignal): Promise<void> {
    const { name, dim } = await this.#o.embedder.embed(["ping"], signal);
    if (dim === null) {
      throw new AssistantError("embedding server: it gave no vector", {
        code: "embed_failed",
      });
    }
    this.#model = { name, dim };
    this.#up = true;
    this.#above = [];
    this.#backlog = [{ below: this.#top, floor: 0 }];
    log.info("embedding server answers", { dim });
  }

  #finish(model: VectorModel): void {
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
    this.#o.publish({
      type: "indexing",
      done: final ? total : Math.min(done, total),
      total,
    });
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

/**
 * Side requests to the model (a title, a summary) that never hold up a
 * question: they run one at a time, all kinds together (so one never evicts
 * the cache another relies on), only while no reply does, and a reply that
 * starts aborts the one in flight, which is run again at the next pause. A
 * job is kept under a key; asking again for a key replaces its job.
 */
import { describeError, log } from "../base/log.ts";

/** One side request; its signal aborts when a reply starts (it is then run again later), when it is cancelled, or at shutdown. */
export type SideJob = (signal: AbortSignal) => Promise<void>;

/** What the runner needs. */
export interface IdleRunnerOptions {
  /** Whether a reply is in flight: no job starts then. */
  busy(): boolean;
  /** A job starts. */
  started?(): void;
}

/** The waiting jobs and the one in flight. */
export class IdleRunner<K = unknown> implements Disposable {
  readonly #o: IdleRunnerOptions;
  readonly #jobs = new Map<K, SideJob>();
  #running: { key: K; controller: AbortController } | null = null;
  #finished: Promise<void> = Promise.resolve();
  #closed = false;
  #scheduled = false;

  /** No job yet. */
  constructor(options: IdleRunnerOptions) {
    this.#o = options;
  }

  /** Queues a job under `key` (replacing one waiting there) and starts it at the next pause. */
  request(key: K, job: SideJob): void {
    if (this.#closed) return;
    this.#jobs.set(key, job);
    this.resume();
  }

  /** Drops the jobs whose key matches, aborting one in flight. */
  cancel(matches: (key: K) => boolean): void {
    for (const key of [...this.#jobs.keys()]) {
      if (matches(key)) this.#jobs.delete(key);
    }
    if (this.#running && matches(this.#running.key)) {
      this.#running.controller.abort();
    }
  }

  /** A reply starts: the job in flight gives way and is run again later. */
  pause(): void {
    this.#running?.controller.abort();
  }

  /**
   * Starts the next waiting job when nothing else runs. Deferred to a
   * microtask: a reply that starts right after another ended (a question
   * that stops a reply) is in flight by then, and no job starts.
   */
  resume(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#next();
    });
  }

  /** Resolves once no job is in flight. */
  async settled(): Promise<void> {
    while (this.#running) await this.#finished;
  }

  /** Aborts the job in flight and forgets the waiting ones. */
  [Symbol.dispose](): void {
    this.#closed = true;
    this.#jobs.clear();
    this.#running?.controller.abort();
  }

  #next(): void {
    if (this.#closed || this.#running || this.#o.busy()) return;
    const first = this.#jobs.entries().next();
    if (first.done) return;
    const [key, job] = first.value;
    const controller = new AbortController();
    this.#running = { key, controller };
    this.#o.started?.();
    const { signal } = controller;
    this.#finished = job(signal).catch((error) => {
      // A job handles its own failures; this is a fault in one.
      log.error("side request failed", {
        error: describeError(error),
      });
    }).finally(() => {
      // Given way to a reply, it waits for the next pause; otherwise it is
      // done, unless it was asked for again meanwhile.
      if (!signal.aborted && this.#jobs.get(key) === job) {
        this.#jobs.delete(key);
      }
      this.#running = null;
      this.resume();
    });
  }
}

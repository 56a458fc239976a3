/**
 * Searches on a worker thread with its own read-only connection, so a slow
 * query never blocks the main thread (the socket, the token stream). WAL
 * lets it read beside the store's writer. The worker's side is
 * search_worker_main.ts.
 */
import { log } from "../base/log.ts";
import { AssistantError } from "../base/errors.ts";
import type { SearchHit, SearchOptions } from "./search.ts";
import {
  type NearHit,
  WORKER_SOURCE,
  type WorkerReply,
  type WorkerRequest,
} from "./search_worker_main.ts";

/** Rebuilds an error that crossed the worker boundary as its message. */
function rebuild(name: string, message: string): Error {
  const Kind = name === "TypeError"
    ? TypeError
    : name === "RangeError"
    ? RangeError
    : name === "SyntaxError"
    ? SyntaxError
    : Error;
  const error = new Kind(message);
  if (Kind === Error && name !== "Error") error.name = name;
  return error;
}

/** Options of a {@link SearchWorker}: the store's search tuning, and how a worker is started. */
export interface SearchWorkerOptions extends SearchOptions {
  /** Starts a worker on the module at `url`; default `new Worker(url, {type: "module"})`. Tests inject one that crashes. */
  spawn?: (url: string) => Worker;
  /** Search by meaning too: the worker reads the turns' vectors at its start. */
  vectors?: boolean;
  /** Milliseconds of one slice of that reading, between which searches by words are answered; default 20. */
  sliceMs?: number;
}

function spawnWorker(url: string): Worker {
  return new Worker(url, { type: "module" });
}

/**
 * Searches off the main thread with its own read-only connection. A worker
 * that dies of an uncaught error fails the searches it held with a plain
 * Error (the client reads `search failed`; the worker's message, which may
 * quote a search, goes nowhere) and the next search starts a new one.
 */
export class SearchWorker implements AsyncDisposable {
  #worker: Worker | null = null;
  #url: string;
  #dbPath: string;
  #tuning: SearchOptions = {};
  #spawn: (url: string) => Worker;
  #next = 1;
  #pending = new Map<number, PromiseWithResolvers<SearchHit[] | NearHit[]>>();
  #vectors: boolean;
  #sliceMs: number;
  #closing: PromiseWithResolvers<void> | null = null;
  #closed = false;

  /** Starts the worker on the history file at `dbPath` (opened read-only); `options` as for the store. */
  constructor(dbPath: string, options: SearchWorkerOptions = {}) {
    this.#url = URL.createObjectURL(
      new Blob([WORKER_SOURCE], { type: "application/javascript" }),
    );
    this.#dbPath = dbPath;
    this.#spawn = options.spawn ?? spawnWorker;
    this.#vectors = options.vectors ?? false;
    this.#sliceMs = options.sliceMs ?? 20;
    // Only the tuning numbers cross: the worker has its own clock.
    if (options.rankCap !== undefined) this.#tuning.rankCap = options.rankCap;
    if (options.budgetMs !== undefined) {
      this.#tuning.budgetMs = options.budgetMs;
    }
    this.#start();
  }

  /** Runs one search; rejects with the search's error when it fails. */
  search(q: string, limit: number): Promise<SearchHit[]> {
    return this.#ask((id) => ({ type: "search", id, q, limit })) as Promise<
      SearchHit[]
    >;
  }

  /** The best conversations by the meaning of `query` (a vector of `model`), leaving out `exclude`; rejects when the worker reads no vectors. */
  nearest(
    query: Float32Array,
    model: string,
    limit: number,
    exclude: number | null,
  ): Promise<NearHit[]> {
    return this.#ask((id) => ({
      type: "near",
      id,
      query,
      model,
      limit,
      exclude,
    })) as Promise<NearHit[]>;
  }

  /** New vectors were written below the newest turn (a backlog): the worker catches up now, while nobody searches. */
  refreshVectors(): void {
    if (this.#closed || this.#worker === null) return;
    this.#worker.postMessage({ type: "refresh" } satisfies WorkerRequest);
  }

  /** These turns' vectors were written anew (saved turns, whose ids the worker may know from a turn deleted or replaced): it reads them again. */
  refreshTurns(turns: number[]): void {
    if (this.#closed || this.#worker === null) return;
    this.#worker.postMessage({ type: "turns", turns } satisfies WorkerRequest);
  }

  #ask(
    request: (id: number) => WorkerRequest,
  ): Promise<SearchHit[] | NearHit[]> {
    if (this.#closed) {
      return Promise.reject(
        new AssistantError("Search worker is closed; open a new one."),
      );
    }
    const worker = this.#worker ?? this.#start();
    const id = this.#next++;
    const pending = Promise.withResolvers<SearchHit[] | NearHit[]>();
    this.#pending.set(id, pending);
    worker.postMessage(request(id));
    return pending.promise;
  }

  /** Lets queued searches finish, closes the connection and ends the worker. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    if (worker !== null) {
      this.#closing = Promise.withResolvers<void>();
      worker.postMessage({ type: "close" } satisfies WorkerRequest);
      await this.#closing.promise;
      worker.terminate();
      this.#worker = null;
    }
    URL.revokeObjectURL(this.#url);
    this.#failPending(
      new AssistantError("Search worker is closed; open a new one."),
    );
  }

  /** Ends the worker at once (a close that takes too long): its searches fail. */
  terminate(): void {
    this.#closed = true;
    this.#worker?.terminate();
    this.#worker = null;
    URL.revokeObjectURL(this.#url);
    this.#failPending(
      new AssistantError("Search worker is closed; open a new one."),
    );
  }

  /** Closes the worker. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #start(): Worker {
    const worker = this.#spawn(this.#url);
    worker.onmessage = (event: MessageEvent<WorkerReply>) =>
      this.#receive(event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      this.#crashed(worker, event);
    };
    worker.postMessage(
      {
        type: "open",
        path: this.#dbPath,
        options: this.#tuning,
        vectors: this.#vectors,
        sliceMs: this.#sliceMs,
      } satisfies WorkerRequest,
    );
    this.#worker = worker;
    return worker;
  }

  /** An uncaught error ended the worker: its searches fail, the next search starts another. */
  #crashed(worker: Worker, event: ErrorEvent): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    worker.terminate();
    // The error's class only: its message may quote a search.
    const kind = /^Uncaught (\w+)/.exec(event.message ?? "")?.[1] ?? "error";
    log.error("search worker crashed", {
      error: kind,
      searches: this.#pending.size,
    });
    this.#failPending(
      new Error("Search worker crashed; the next search starts a new one."),
    );
  }

  #receive(reply: WorkerReply): void {
    if (reply.type === "closed") {
      this.#closing?.resolve();
      return;
    }
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (reply.type === "hits") pending.resolve(reply.hits);
    else pending.reject(rebuild(reply.name, reply.message));
  }

  #failPending(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    this.#closing?.resolve();
  }
}

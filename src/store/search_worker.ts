/**
 * Searches on a worker thread with its own read-only connection, so a slow
 * query never blocks the main thread (the socket, the token stream). WAL
 * lets it read beside the store's writer.
 *
 * The worker is started from a blob built from the source text of
 * `prepareSearch`, `prepareSource` and `workerMain`: loading a module file would need read
 * permission on the daemon's own sources, while this way the worker needs
 * nothing but read of the database.
 */
import { log } from "../base/log.ts";
import { AssistantError } from "../base/errors.ts";
import {
  prepareSearch,
  prepareSource,
  type SearchHit,
  type SearchOptions,
} from "./search.ts";

type Request =
  | { type: "open"; path: string; options: SearchOptions }
  | { type: "search"; id: number; q: string; limit: number }
  | { type: "close" };

type Reply =
  | { type: "hits"; id: number; hits: SearchHit[] }
  | { type: "failed"; id: number; name: string; message: string }
  | { type: "closed" };

/**
 * The worker's program. It runs from its source text inside the worker, so
 * it may use only its parameters and globals.
 */
function workerMain(
  prepare: typeof prepareSearch,
  Database: typeof import("node:sqlite").DatabaseSync,
): void {
  const scope = globalThis as unknown as {
    onmessage: ((event: MessageEvent<Request>) => void) | null;
    postMessage(reply: Reply): void;
  };
  let db: InstanceType<typeof Database> | null = null;
  let search: ReturnType<typeof prepareSearch> | null = null;
  let failure: unknown = null;
  scope.onmessage = ({ data }) => {
    if (data.type === "open") {
      try {
        db = new Database(data.path, { readOnly: true });
        db.exec("PRAGMA busy_timeout = 5000");
        search = prepare(db, data.options);
      } catch (error) {
        failure = error;
      }
    } else if (data.type === "search") {
      try {
        if (search === null) throw failure;
        scope.postMessage({
          type: "hits",
          id: data.id,
          hits: search(data.q, data.limit),
        });
      } catch (error) {
        const e = error instanceof Error ? error : new Error(String(error));
        scope.postMessage({
          type: "failed",
          id: data.id,
          name: e.name,
          message: e.message,
        });
      }
    } else {
      db?.close();
      db = null;
      search = null;
      scope.postMessage({ type: "closed" });
    }
  };
}

const SOURCE = `import { DatabaseSync } from "node:sqlite";
(${workerMain.toString()})(
  (db, options) => (${prepareSearch.toString()})(db, options, ${prepareSource.toString()}),
  DatabaseSync,
);
`;

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
  #pending = new Map<number, PromiseWithResolvers<SearchHit[]>>();
  #closing: PromiseWithResolvers<void> | null = null;
  #closed = false;

  /** Starts the worker on the history file at `dbPath` (opened read-only); `options` as for the store. */
  constructor(dbPath: string, options: SearchWorkerOptions = {}) {
    this.#url = URL.createObjectURL(
      new Blob([SOURCE], { type: "application/javascript" }),
    );
    this.#dbPath = dbPath;
    this.#spawn = options.spawn ?? spawnWorker;
    // Only the tuning numbers cross: the worker has its own clock.
    if (options.rankCap !== undefined) this.#tuning.rankCap = options.rankCap;
    if (options.budgetMs !== undefined) {
      this.#tuning.budgetMs = options.budgetMs;
    }
    this.#start();
  }

  /** Runs one search; rejects with the search's error when it fails. */
  search(q: string, limit: number): Promise<SearchHit[]> {
    if (this.#closed) {
      return Promise.reject(
        new AssistantError("Search worker is closed; open a new one."),
      );
    }
    const worker = this.#worker ?? this.#start();
    const id = this.#next++;
    const pending = Promise.withResolvers<SearchHit[]>();
    this.#pending.set(id, pending);
    worker.postMessage({ type: "search", id, q, limit } satisfies Request);
    return pending.promise;
  }

  /** Lets queued searches finish, closes the connection and ends the worker. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    if (worker !== null) {
      this.#closing = Promise.withResolvers<void>();
      worker.postMessage({ type: "close" } satisfies Request);
      await this.#closing.promise;
      worker.terminate();
      this.#worker = null;
    }
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
    worker.onmessage = (event: MessageEvent<Reply>) =>
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
      } satisfies Request,
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

  #receive(reply: Reply): void {
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

/**
 * Searches on a worker thread with its own read-only connection, so a slow
 * query never blocks the main thread (the socket, the token stream). WAL
 * lets it read beside the store's writer.
 *
 * With search by meaning on, the worker reads every vector's sign bits at
 * its start, a slice at a time (a million vectors take seconds): a search
 * by words is answered between slices, a search by meaning once the reading
 * is through.
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
import { prepareVectors } from "./vector_index.ts";

/** A conversation found by meaning: its best turn's text and how close it came. */
export interface NearHit {
  id: number;
  title: string;
  text: string;
  score: number;
}

type Request =
  | {
    type: "open";
    path: string;
    options: SearchOptions;
    vectors: boolean;
    sliceMs: number;
  }
  | { type: "search"; id: number; q: string; limit: number }
  | {
    type: "near";
    id: number;
    query: Float32Array;
    model: string;
    limit: number;
    exclude: number | null;
  }
  | { type: "refresh" }
  | { type: "turns"; turns: number[] }
  | { type: "close" };

type Reply =
  | { type: "hits"; id: number; hits: SearchHit[] | NearHit[] }
  | { type: "failed"; id: number; name: string; message: string }
  | { type: "closed" };

/**
 * The worker's program. It runs from its source text inside the worker, so
 * it may use only its parameters and globals.
 */
function workerMain(
  prepare: typeof prepareSearch,
  prepareNear: typeof prepareVectors,
  Database: typeof import("node:sqlite").DatabaseSync,
): void {
  const scope = globalThis as unknown as {
    onmessage: ((event: MessageEvent<Request>) => void) | null;
    postMessage(reply: Reply): void;
  };
  let db: InstanceType<typeof Database> | null = null;
  let search: ReturnType<typeof prepareSearch> | null = null;
  let near: ReturnType<typeof prepareVectors> | null = null;
  let failure: unknown = null;
  // Requests about the vectors wait while they are being read.
  let loading = false;
  const waiting: Request[] = [];
  /** The best conversations by meaning, each with its best turn's text. */
  const nearest = (
    query: Float32Array,
    model: string,
    limit: number,
    exclude: number | null,
  ): NearHit[] => {
    if (near === null || db === null) throw failure;
    // More turns than conversations wanted: several may share one.
    const hits = near.search(query, model, limit * 4, exclude ?? undefined);
    const best = new Map<number, { turn: number; score: number }>();
    for (const hit of hits) {
      if (!best.has(hit.conv)) best.set(hit.conv, hit);
      if (best.size === limit) break;
    }
    const read = db.prepare(
      `SELECT t.id AS turn, t.user AS user, t.reply AS reply, c.title AS title
       FROM turns t JOIN conversations c ON c.id = t.conv
       WHERE t.id IN (SELECT value FROM json_each(?))`,
    );
    const rows = new Map<number, Record<string, unknown>>();
    const turns = [...best.values()].map((b) => b.turn);
    for (const row of read.iterate(JSON.stringify(turns))) {
      rows.set(Number(row.turn), row);
    }
    const found: NearHit[] = [];
    for (const [conv, { turn, score }] of best) {
      const row = rows.get(turn);
      if (!row) continue;
      found.push({
        id: conv,
        title: String(row.title ?? ""),
        text: `${row.user ?? ""}\n${row.reply ?? ""}`,
        score,
      });
    }
    return found;
  };
  // The next slice is a message to itself: it queues behind the messages
  // that came meanwhile, and unlike a chain of timers it is never delayed.
  const slices = new MessageChannel();
  /** Reads the vectors a slice at a time, letting messages in between; then answers those that waited. */
  const load = (sliceMs: number) => {
    if (!loading) return;
    try {
      if (near?.load(sliceMs)) {
        slices.port2.postMessage(sliceMs);
        return;
      }
    } catch (error) {
      failure = error;
      near = null;
    }
    loading = false;
    slices.port1.close();
    for (const request of waiting.splice(0)) handle(request);
  };
  slices.port1.onmessage = ({ data }) => load(data);
  const handle = (data: Request) => {
    if (data.type === "open") {
      try {
        db = new Database(data.path, { readOnly: true });
        db.exec("PRAGMA busy_timeout = 5000");
        search = prepare(db, data.options);
        // Read once, at the start: every vector's sign bits (docs/search.md).
        if (data.vectors) {
          near = prepareNear(db, { lazy: true });
          loading = true;
          slices.port2.postMessage(data.sliceMs);
        }
      } catch (error) {
        failure = error;
      }
    } else if (data.type === "refresh" || data.type === "turns") {
      try {
        if (data.type === "refresh") near?.refresh();
        else near?.update(data.turns);
      } catch {
        // The next search catches up on its own.
      }
    } else if (data.type === "search" || data.type === "near") {
      try {
        if (search === null) throw failure;
        scope.postMessage({
          type: "hits",
          id: data.id,
          hits: data.type === "search"
            ? search(data.q, data.limit)
            : nearest(data.query, data.model, data.limit, data.exclude),
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
      loading = false;
      slices.port1.close();
      waiting.length = 0;
      near = null;
      db?.close();
      db = null;
      search = null;
      scope.postMessage({ type: "closed" });
    }
  };
  scope.onmessage = ({ data }) => {
    const vectors = data.type === "near" || data.type === "refresh" ||
      data.type === "turns";
    if (loading && vectors) waiting.push(data);
    else handle(data);
  };
}

const SOURCE = `import { DatabaseSync } from "node:sqlite";
(${workerMain.toString()})(
  (db, options) => (${prepareSearch.toString()})(db, options, ${prepareSource.toString()}),
  (db, options) => (${prepareVectors.toString()})(db, options),
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
      new Blob([SOURCE], { type: "application/javascript" }),
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
    this.#worker.postMessage({ type: "refresh" } satisfies Request);
  }

  /** These turns' vectors were written anew (saved turns, whose ids the worker may know from a turn deleted or replaced): it reads them again. */
  refreshTurns(turns: number[]): void {
    if (this.#closed || this.#worker === null) return;
    this.#worker.postMessage({ type: "turns", turns } satisfies Request);
  }

  #ask(request: (id: number) => Request): Promise<SearchHit[] | NearHit[]> {
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
        vectors: this.#vectors,
        sliceMs: this.#sliceMs,
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

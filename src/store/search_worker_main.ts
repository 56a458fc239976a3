/**
 * The search worker's own program: it opens its read-only connection and
 * answers the main thread's requests (search_worker.ts sends them).
 *
 * With search by meaning on, the worker reads every vector's sign bits at
 * its start, a slice at a time (a million vectors take seconds): a search
 * by words is answered between slices, a search by meaning once the reading
 * is through.
 *
 * The worker is started from a blob built from the source text of
 * `prepareSearch`, `prepareSource`, the vector index and `workerMain`:
 * loading a module file would need read permission on the daemon's own
 * sources, while this way the worker needs nothing but read of the
 * database.
 */
import {
  prepareSearch,
  prepareSource,
  type SearchHit,
  type SearchOptions,
} from "./search.ts";
import { type prepareVectors, vectorsSource } from "./vector_index.ts";

/** A conversation found by meaning: its best turn's text and how close it came. */
export interface NearHit {
  id: number;
  title: string;
  text: string;
  score: number;
}

/** A message from the main thread to the worker. */
export type WorkerRequest =
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

/** A message from the worker to the main thread. */
export type WorkerReply =
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
    onmessage: ((event: MessageEvent<WorkerRequest>) => void) | null;
    postMessage(reply: WorkerReply): void;
  };
  let db: InstanceType<typeof Database> | null = null;
  let search: ReturnType<typeof prepareSearch> | null = null;
  let near: ReturnType<typeof prepareVectors> | null = null;
  /** The texts of the turns found by meaning, prepared with `near`. */
  let nearTexts: ReturnType<InstanceType<typeof Database>["prepare"]> | null =
    null;
  let failure: unknown = null;
  // Requests about the vectors wait while they are being read.
  let loading = false;
  const waiting: WorkerRequest[] = [];
  /** The best conversations by meaning, each with its best turn's text. */
  const nearest = (
    query: Float32Array,
    model: string,
    limit: number,
    exclude: number | null,
  ): NearHit[] => {
    if (near === null || nearTexts === null) throw failure;
    // More turns than conversations wanted: several may share one.
    const hits = near.search(query, model, limit * 4, exclude ?? undefined);
    const best = new Map<number, { turn: number; score: number }>();
    for (const hit of hits) {
      if (!best.has(hit.conv)) best.set(hit.conv, hit);
      if (best.size === limit) break;
    }
    const rows = new Map<number, Record<string, unknown>>();
    const turns = [...best.values()].map((b) => b.turn);
    for (const row of nearTexts.iterate(JSON.stringify(turns))) {
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
  const handle = (data: WorkerRequest) => {
    if (data.type === "open") {
      try {
        db = new Database(data.path, { readOnly: true });
        db.exec("PRAGMA busy_timeout = 5000");
        search = prepare(db, data.options);
        // Read once, at the start: every vector's sign bits (docs/search.md).
        if (data.vectors) {
          near = prepareNear(db, { lazy: true });
          nearTexts = db.prepare(
            `SELECT t.id AS turn, t.user AS user, t.reply AS reply,
                    c.title AS title
             FROM turns t JOIN conversations c ON c.id = t.conv
             WHERE t.id IN (SELECT value FROM json_each(?))`,
          );
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
      nearTexts = null;
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

/** The worker's module text, run from a blob URL. */
export const WORKER_SOURCE = `import { DatabaseSync } from "node:sqlite";
(${workerMain.toString()})(
  (db, options) => (${prepareSearch.toString()})(db, options, ${prepareSource.toString()}),
  ${vectorsSource()},
  DatabaseSync,
);
`;

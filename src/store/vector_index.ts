/**
 * Search by meaning over the `vectors` table: sign bits in memory, exact
 * cosine over the few best rows read again from SQLite. docs/search.md has
 * how it works, why, and the measurements that chose it.
 *
 * The search worker may import nothing, so each part is a module whose one
 * function it runs from source text (`vectorsSource`): the memory
 * (vector_slots.ts), keeping up with the table (vector_refresh.ts), the
 * scan over the bits (vector_scan.ts) and the exact rescoring
 * (vector_rescore.ts).
 */
import type { DatabaseSync } from "node:sqlite";
import { prepareRefresh } from "./vector_refresh.ts";
import { rescoreExact, type VectorHit } from "./vector_rescore.ts";
import { scanCandidates } from "./vector_scan.ts";
import { prepareSlots } from "./vector_slots.ts";

/** A turn found near a query: its id, its conversation and its cosine score. */
export type { VectorHit } from "./vector_rescore.ts";

/** Tuning (plain numbers: the search worker receives them as data). */
export interface VectorOptions {
  /** Vectors the bit prefilter passes on; default 4096. */
  candidates?: number;
  /** Vectors read from SQLite and ranked exactly; default 400 or one in 1024 of the model's, whichever is more; at least 4 × the limit asked. */
  rescore?: number;
  /** Least milliseconds between sweeps; default 20 × the last one's duration; Infinity: at refresh() only. */
  sweepMs?: number;
  /** True: nothing is read at the start; `load` reads the table a slice at a time (a search meanwhile reads the rest first). */
  lazy?: boolean;
}

/** The index over one connection; each call first catches up with the table. */
export interface VectorSearch {
  /** The best turns by cosine, best first, among vectors of `model` of the query's dimension (none when there are none: vectors of another are made again); `exclude` leaves out one conversation. */
  search(
    query: Float32Array,
    model: string,
    limit: number,
    exclude?: number,
  ): VectorHit[];
  /** How many vectors of `model` a search may answer (deleted conversations left out). */
  count(model: string): number;
  /** Catches up with every change now, sweep included. */
  refresh(): void;
  /** Reads these turns' rows again now: written anew under an id the index may hold (an id used again, a turn replaced), each takes its new vector and conversation, or goes. */
  update(turns: readonly number[]): void;
  /** With `lazy`, reads more of the table for about `ms`; false once all of it is read. */
  load(ms: number): boolean;
  /** Bytes of the arrays the index holds. */
  bytes(): number;
}

/** The parts `prepareVectors` is made of, given as values so that the search worker can pass their source text. */
export interface VectorParts {
  slots: typeof prepareSlots;
  refresh: typeof prepareRefresh;
  scan: typeof scanCandidates;
  rescore: typeof rescoreExact;
}

const PARTS: VectorParts = {
  slots: prepareSlots,
  refresh: prepareRefresh,
  scan: scanCandidates,
  rescore: rescoreExact,
};

/** Prepares the index on one connection, reading every vector once (at once, or with `lazy` by `load`); the search worker runs it from its source text with its parts' (`vectorsSource`), so its body uses only its parameters and globals. */
export function prepareVectors(
  db: DatabaseSync,
  options: VectorOptions = {},
  parts: VectorParts = PARTS,
): VectorSearch {
  const candidates = options.candidates ?? 4096;
  const rescore = options.rescore ?? 400;
  const sweepMs = options.sweepMs ?? -1;
  if (![candidates, rescore].every((n) => Number.isSafeInteger(n) && n > 0)) {
    throw new RangeError(
      `Vector search candidates ${candidates} and rescore ${rescore} must be positive integers.`,
    );
  }
  const slots = parts.slots();
  const table = parts.refresh(db, slots, sweepMs, options.lazy === true);

  const search: VectorSearch["search"] = (query, model, limit, exclude) => {
    table.look(false);
    // Vectors of another dimension are the old ones of a model whose name
    // stayed: the indexer makes them again, and none is an answer.
    const g = slots.find(model, query.length);
    const norm = Math.hypot(...query);
    if (!Number.isFinite(norm)) {
      throw new TypeError("The query vector has a component NaN or infinite.");
    }
    const wanted = Math.floor(limit);
    if (
      g === undefined || slots.sizeOf(g) === 0 || norm === 0 || !(wanted >= 1)
    ) {
      return [];
    }
    // Recall at a million vectors is bound by how many are rescored.
    const least = options.rescore ?? Math.max(rescore, slots.sizeOf(g) >> 10);
    const keep = Math.min(slots.sizeOf(g), Math.max(least, 4 * wanted));
    const pool = Math.min(slots.sizeOf(g), Math.max(candidates, keep));
    const skip = exclude ?? -1;
    const blocks = slots.blocksOf(g);
    const asked = parts.scan(
      query,
      g,
      blocks,
      slots.shift,
      pool,
      keep,
      skip,
      table.isBlocked,
    );
    const { hits, answered, replaced } = parts.rescore(
      table.exact(asked),
      query,
      norm,
      g,
      skip,
      table.isBlocked,
      wanted,
    );
    if (replaced) table.resweep();
    // Gone from the table: forgotten.
    const gone = asked.filter((t) =>
      !answered.has(t) && slots.filed(t) === g.id
    );
    for (const turn of gone) slots.file(turn, 0);
    slots.stale ||= gone.length > 0;
    return hits;
  };

  const count: VectorSearch["count"] = (model) => {
    table.look(false);
    let total = 0;
    for (const g of slots.groupsOf(model)) {
      for (const { size, slots: words } of slots.blocksOf(g)) {
        for (let o = 1; o < size * (g.words + 2); o += g.words + 2) {
          if (!table.isBlocked(words[o]!)) total++;
        }
      }
    }
    return total;
  };

  return {
    search,
    count,
    refresh: () => table.look(true),
    update: table.update,
    load: table.load,
    bytes: () => slots.bytes() + table.bytes(),
  };
}

/** `prepareVectors` as source text, `(db, options) => …` with its parts' source in it, for a worker that imports nothing. */
export function vectorsSource(): string {
  return `(db, options) => (${prepareVectors.toString()})(db, options, {
  slots: ${prepareSlots.toString()},
  refresh: ${prepareRefresh.toString()},
  scan: ${scanCandidates.toString()},
  rescore: ${rescoreExact.toString()},
})`;
}

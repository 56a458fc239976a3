/**
 * The last stage of a search by meaning (docs/search.md): the exact cosine
 * of the query with the stored bytes of the rows the scan chose, each row
 * checked against the group it was chosen from, so a row replaced, or of a
 * conversation deleted since, is never an answer. The search worker runs
 * this from its source text, so its body uses only its parameters and
 * globals.
 */
import type { VectorGroup } from "./vector_slots.ts";

/** One answer: a turn, its conversation, and the cosine similarity to the query. */
export type VectorHit = { turn: number; conv: number; score: number };

/** What the rows gave: the best hits, the turns whose row still holds a vector of the group, and whether one holds another kind. */
export interface Rescored {
  hits: VectorHit[];
  answered: Set<number>;
  replaced: boolean;
}

/** Ranks the chosen turns' `rows` by cosine with `query` (of length `norm`), best first, at most `wanted`; `skip` (-1: none) and blocked conversations are left out. */
export function rescoreExact(
  rows: Iterable<Record<string, unknown>>,
  query: Float32Array,
  norm: number,
  g: VectorGroup,
  skip: number,
  isBlocked: (conv: number) => boolean,
  wanted: number,
): Rescored {
  const hits: VectorHit[] = [];
  const answered = new Set<number>();
  let replaced = false;
  for (const row of rows) {
    const turn = Number(row.turn);
    const data = row.data;
    if (
      row.model !== g.model || Number(row.dim) !== g.dim ||
      !(data instanceof Uint8Array) || data.length !== g.dim + 4
    ) {
      // Replaced in place by another kind of vector: the sweep files it.
      replaced = true;
      continue;
    }
    answered.add(turn);
    const conv = Number(row.conv);
    if (row.conv === null || conv === skip || isBlocked(conv)) continue;
    const values = new Int8Array(data.buffer, data.byteOffset + 4, g.dim);
    let dot = 0;
    let length = 0;
    for (let d = 0; d < g.dim; d++) {
      dot += query[d]! * values[d]!;
      length += values[d]! * values[d]!;
    }
    if (length > 0) {
      hits.push({ turn, conv, score: dot / (norm * Math.sqrt(length)) });
    }
  }
  hits.sort((a, b) => b.score - a.score || b.turn - a.turn);
  return { hits: hits.slice(0, wanted), answered, replaced };
}

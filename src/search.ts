/**
 * Full-text search over the history, shared by the store's connection and
 * the search worker's read-only one.
 *
 * The query is the user's text as one FTS5 phrase with a prefix star
 * (`"<text>"*`, inner `"` doubled, NUL turned into a space), so FTS5 syntax
 * in it is plain text and a half-typed last word matches whole words.
 * Results are conversations, best first, each with the snippet of its best
 * turn, matches marked `**`.
 *
 * The bound: a query matching at most `rankCap` turns (4000 by default) is
 * ranked exactly by bm25 over all of its matches, questions weighted twice
 * replies. A query matching more turns ranks only its newest `rankCap`
 * matching turns (newest by turn id, i.e. by save order); older matches are
 * not considered, except that when those newest turns come from fewer
 * conversations than the result limit asks for, the window reaches back
 * through older matches, newest first, until it holds that many
 * conversations. So a common word or a short prefix finds the best of the
 * recent turns in bounded time, and a rarer one is ranked over the whole
 * history.
 */
import type { DatabaseSync } from "node:sqlite";

/** One search result: a conversation and the snippet of its best turn. */
export interface SearchHit {
  id: number;
  title: string;
  snippet: string;
}

/** Tuning of the search. */
export interface SearchOptions {
  /** Matching turns ranked exactly before only the newest are kept; default 4000. */
  rankCap?: number;
}

/** A prepared search: the text as typed, and the most conversations wanted. */
export type Search = (q: string, limit: number) => SearchHit[];

/**
 * Prepares the search statements on one connection and returns the search.
 *
 * The search worker runs this function from its source text, because a
 * worker may read nothing but the database: the body must use only its
 * parameters and globals, nothing else of this module and no imports.
 */
export function prepareSearch(
  db: DatabaseSync,
  options: SearchOptions = {},
): Search {
  const rankCap = options.rankCap ?? 4000;
  if (!Number.isSafeInteger(rankCap) || rankCap < 1) {
    throw new RangeError(
      `Search rank cap ${rankCap} is not a positive integer; pass one such as 4000.`,
    );
  }
  // node:sqlite binds every JS number as REAL, and FTS5 silently drops a
  // rowid bound that is not an INTEGER, hence the CASTs below.
  // FTS5 walks a doclist newest first for ORDER BY rowid DESC, so the OFFSET
  // costs rankCap steps, not a pass over every match.
  const nthNewest = db.prepare(
    `SELECT rowid AS turn FROM turns_fts WHERE turns_fts MATCH ?
     ORDER BY rowid DESC LIMIT 1 OFFSET ?`,
  );
  // bm25() is evaluated in a materialized CTE while the FTS5 cursor sits on
  // its row; CROSS JOIN keeps the FTS5 scan as the outer loop.
  const rank = db.prepare(
    `WITH m AS MATERIALIZED (
       SELECT rowid AS turn, bm25(turns_fts, 2.0, 1.0) AS score
       FROM turns_fts WHERE turns_fts MATCH :q AND rowid >= CAST(:floor AS INTEGER)
     )
     SELECT t.conv AS conv, m.turn AS turn, min(m.score) AS score
     FROM m CROSS JOIN turns t ON t.id = m.turn
     GROUP BY t.conv ORDER BY score, turn DESC LIMIT :limit`,
  );
  const older = db.prepare(
    `SELECT f.rowid AS turn, t.conv AS conv
     FROM turns_fts f CROSS JOIN turns t ON t.id = f.rowid
     WHERE turns_fts MATCH ? AND f.rowid < CAST(? AS INTEGER)
     ORDER BY f.rowid DESC`,
  );
  const snippet = db.prepare(
    `SELECT c.title AS title,
       snippet(turns_fts, -1, '**', '**', '…', 12) AS snippet
     FROM turns_fts f CROSS JOIN conversations c
     WHERE turns_fts MATCH ? AND f.rowid = CAST(? AS INTEGER) AND c.id = ?`,
  );

  const rankWindow = (phrase: string, floor: number, limit: number) =>
    rank.all({ q: phrase, floor, limit }).map((row) => ({
      conv: Number(row.conv),
      turn: Number(row.turn),
    }));

  const run: Search = (q, wanted) => {
    if (q.trim() === "" || !(wanted >= 1)) return [];
    const limit = Math.floor(wanted);
    // NUL would end FTS5's query string inside the phrase.
    const phrase = `"${q.replaceAll("\0", " ").replaceAll('"', '""')}"*`;
    const nth = nthNewest.get(phrase, rankCap - 1);
    let floor = nth === undefined ? 0 : Number(nth.turn);
    let ranked = rankWindow(phrase, floor, limit);
    if (floor > 0 && ranked.length < limit) {
      // Too few conversations in the window: reach back, newest first.
      const seen = new Set(ranked.map((r) => r.conv));
      for (const row of older.iterate(phrase, floor)) {
        floor = Number(row.turn);
        seen.add(Number(row.conv));
        if (seen.size >= limit) break;
      }
      ranked = rankWindow(phrase, floor, limit);
    }
    const hits: SearchHit[] = [];
    for (const { conv, turn } of ranked) {
      const row = snippet.get(phrase, turn, conv);
      if (row === undefined) continue;
      hits.push({
        id: conv,
        title: String(row.title ?? ""),
        snippet: String(row.snippet ?? ""),
      });
    }
    return hits;
  };

  return (q, limit) => {
    try {
      return run(q, limit);
    } catch (error) {
      // SQLite's messages may quote the query; only its generic text leaves.
      const reason = (error as { errstr?: unknown } | null)?.errstr;
      if (typeof reason !== "string") throw error;
      throw new Error(`Search failed: ${reason}; run the history check.`);
    }
  };
}

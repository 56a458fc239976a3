/**
 * Full-text search over the history, shared by the store's connection and
 * the search worker's read-only one.
 *
 * The query is the user's text as one FTS5 phrase with a prefix star
 * (`"<text>"*`, inner `"` doubled, NUL turned into a space), so FTS5 syntax
 * in it is plain text and a half-typed last word matches whole words.
 * Results are conversations, one row each, with a snippet of a matching
 * turn: as `text` with the matches' offsets in `marks`, and as `snippet`
 * with each match between `**`.
 *
 * FTS5's snippet() marks a match with the bytes 0xFF and 0xFE, which occur
 * in no UTF-8 (and the history holds only UTF-8 that JavaScript strings
 * made), and the snippet is read as bytes: a reply's own `**bold**` or any
 * character it may hold is never taken for a mark.
 *
 * How results are chosen, so that every query answers in bounded time:
 * - A query matching at most `rankCap` turns (4000 by default) is ranked by
 *   bm25 over all of its matches in the whole history, questions weighted
 *   twice replies; a conversation ranks by its best turn and shows its
 *   snippet.
 * - A query matching more turns lists the conversations of its newest
 *   matching turns, newest first, each with the snippet of its newest
 *   match. bm25 is not bounded there: before ranking a single row it counts
 *   every matching turn of the history for its document frequency (38 ms
 *   for a word found in nearly every turn of a million, 190 ms for a phrase
 *   of two common words), while the walk from the newest turn stops once
 *   the limit is filled.
 * - A phrase (two words or more) is counted over ever larger ranges of the
 *   newest turns, sized to a budget of `budgetMs` (40 ms by default). When
 *   the budget runs out first (a phrase of very common words that seldom
 *   meet, whose positions FTS5 must check in nearly every turn), only the
 *   turns counted so far are searched, newest first. A phrase counted past
 *   `rankCap` matches lists conversations from the turns counted.
 * - Any query whose counting took longer than the budget is listed newest
 *   first too: bm25 would read all its matches twice more.
 *
 * Questions and replies (`turns_fts`) and the text of attached files
 * (`files_fts`) are searched alike, each by the rules above; a conversation
 * shows its best hit of either, and a hit in a file names the file. Both
 * ranked: by bm25 score; otherwise newest turn first.
 *
 * A deleted conversation keeps its turns and index entries for the moments
 * until the store's upkeep removes them (see src/store/store.ts): every query that
 * returns turns skips conversations in `deleted_conversations`, so it is
 * never found. Only the counts above (which pick ranking or recency) and
 * bm25's statistics may still include its turns meanwhile.
 */
import type { DatabaseSync } from "node:sqlite";
import { prepareSource } from "./search_source.ts";

export { prepareSource } from "./search_source.ts";

/** One search result: a conversation and the snippet of its best turn. */
export interface SearchHit {
  id: number;
  title: string;
  /** The snippet with each match between `**` (ambiguous when the text has its own `**`). */
  snippet: string;
  /** The snippet as stored, without markers. */
  text: string;
  /** Each match as `[start, end)` UTF-16 offsets into `text`, in order. */
  marks: [number, number][];
  /** The attached file the snippet is from; absent for a question or a reply. */
  file?: string;
}

/** Tuning of the search (plain numbers: the worker receives them as data). */
export interface SearchOptions {
  /** Most matching turns a query may have to be ranked by bm25; default 4000. */
  rankCap?: number;
  /** Milliseconds of counting past which a query is listed newest first; default 40. */
  budgetMs?: number;
}

/** A prepared search: the text as typed, and the most conversations wanted. */
export type Search = (q: string, limit: number) => SearchHit[];

/**
 * Prepares the search on one connection and returns it. The search worker
 * runs this function from its source text, because a worker may read
 * nothing but the database: the body must use only its parameters and
 * globals, with `source` given (prepareSource's own text).
 */
export function prepareSearch(
  db: DatabaseSync,
  options: SearchOptions = {},
  source: typeof prepareSource = prepareSource,
): Search {
  const rankCap = options.rankCap ?? 4000;
  const budgetMs = options.budgetMs ?? 40;
  if (!Number.isSafeInteger(rankCap) || rankCap < 1) {
    throw new RangeError(
      `Search rank cap ${rankCap} is not a positive integer; pass one such as 4000.`,
    );
  }
  if (!(budgetMs >= 0)) {
    throw new RangeError(
      `Search budget ${budgetMs} ms is not a non-negative number; pass one such as 40.`,
    );
  }
  const sources = [
    source(db, "turns", rankCap, budgetMs),
    source(db, "files", rankCap, budgetMs),
  ];
  const titlesOf = db.prepare(
    `SELECT id, title FROM conversations
     WHERE id IN (SELECT value FROM json_each(?))`,
  );

  const run: Search = (q, wanted) => {
    if (q.trim() === "" || !(wanted >= 1)) return [];
    const limit = Math.floor(wanted);
    // The whole text, however long: cutting it would match more than it says.
    const words = [...q.matchAll(/[\p{L}\p{N}\p{M}\p{Co}]+/gu)].length;
    // NUL would end FTS5's query string inside the phrase.
    const phrase = `"${q.replaceAll("\0", " ").replaceAll('"', '""')}"*`;
    const found = sources.map((search) =>
      search(phrase, words, limit, performance.now())
    );
    // Both ranked: by score; else newest turn first. One per conversation.
    const ranked = found.every((f) => f.ranked);
    const all = found.flatMap((f) => f.picks).sort((a, b) =>
      ranked ? a.score! - b.score! || b.turn - a.turn : b.turn - a.turn
    );
    const seen = new Set<number>();
    const picks = all.filter((p) => !seen.has(p.conv) && seen.add(p.conv))
      .slice(0, limit);
    if (picks.length === 0) return [];

    const titles = new Map<number, string>();
    for (
      const row of titlesOf.iterate(JSON.stringify(picks.map((p) => p.conv)))
    ) {
      titles.set(Number(row.id), String(row.title ?? ""));
    }
    return picks.map((p) => ({
      id: p.conv,
      title: titles.get(p.conv) ?? "",
      snippet: p.snippet,
      text: p.text,
      marks: p.marks,
      ...(p.file === null ? {} : { file: p.file }),
    }));
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

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
 * A deleted conversation keeps its turns and index entries for the moments
 * until the store's upkeep removes them (see src/store/store.ts): every query that
 * returns turns skips conversations in `deleted_conversations`, so it is
 * never found. Only the counts above (which pick ranking or recency) and
 * bm25's statistics may still include its turns meanwhile.
 */
import type { DatabaseSync } from "node:sqlite";

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
  // A match between the bytes 0xFF and 0xFE, read as bytes (see above).
  const OPEN = 0xff;
  const CLOSE = 0xfe;
  const SNIPPET = `CAST(snippet(turns_fts, -1, CAST(X'FF' AS TEXT),
    CAST(X'FE' AS TEXT), '…', 12) AS BLOB)`;
  const decoder = new TextDecoder();
  /** A snippet's bytes as its text, its marks, and the text with `**` around each mark. */
  const readSnippet = (value: unknown): Snippet => {
    const bytes = value instanceof Uint8Array ? value : new Uint8Array();
    const marks: [number, number][] = [];
    let text = "";
    let snippet = "";
    let from = 0;
    const take = (to: number) => {
      const piece = decoder.decode(bytes.subarray(from, to));
      text += piece;
      snippet += piece;
      from = to + 1;
    };
    // Where the mark being read starts in `text`; -1 outside a mark.
    let open = -1;
    for (let at = 0; at < bytes.length; at++) {
      if (bytes[at] === OPEN) {
        take(at);
        open = text.length;
        snippet += "**";
      } else if (bytes[at] === CLOSE && open >= 0) {
        take(at);
        if (text.length > open) marks.push([open, text.length]);
        snippet += "**";
        open = -1;
      }
    }
    take(bytes.length);
    // FTS5 closes every mark; one left open would end with the snippet.
    if (open >= 0 && text.length > open) marks.push([open, text.length]);
    return { text, snippet, marks };
  };

  // node:sqlite binds every JS number as REAL, and FTS5 silently ignores a
  // rowid bound that is not an INTEGER: hence the CASTs.
  const newest = db.prepare("SELECT max(id) AS top FROM turns");
  // Walking a word's doclist newest first, FTS5 stops after `need` matches.
  const countNewest = db.prepare(
    `SELECT count(*) AS n FROM (
       SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?
       ORDER BY rowid DESC LIMIT ?)`,
  );
  // bm25() is evaluated in a materialized CTE while the FTS5 cursor sits on
  // its row; CROSS JOIN keeps the FTS5 scan as the outer loop.
  const rankAll = db.prepare(
    `WITH m AS MATERIALIZED (
       SELECT rowid AS turn, bm25(turns_fts, 2.0, 1.0) AS score
       FROM turns_fts WHERE turns_fts MATCH ?
     )
     SELECT t.conv AS conv, m.turn AS turn, min(m.score) AS score
     FROM m CROSS JOIN turns t ON t.id = m.turn
     WHERE t.conv NOT IN (SELECT id FROM deleted_conversations)
     GROUP BY t.conv ORDER BY score, turn DESC LIMIT ?`,
  );
  // One pass over the range of the chosen turns: a prefix without a prefix
  // index costs a merge of doclists per statement, not per row.
  const snippetsOf = db.prepare(
    `SELECT rowid AS turn, ${SNIPPET} AS snippet
     FROM turns_fts WHERE turns_fts MATCH ?
       AND rowid BETWEEN CAST(? AS INTEGER) AND CAST(? AS INTEGER)
       AND +rowid IN (SELECT value FROM json_each(?))`,
  );
  // Newest first, the snippet computed only for the first (newest) turn of
  // each conversation, which the function below recognises.
  let firstSeen = new Set<number>();
  db.function("desktop_assistant_first_of", (conv) => {
    const id = Number(conv);
    if (firstSeen.has(id)) return 0;
    firstSeen.add(id);
    return 1;
  });
  const newestFirst = db.prepare(
    `SELECT f.rowid AS turn, t.conv AS conv,
       CASE WHEN desktop_assistant_first_of(t.conv)
         THEN ${SNIPPET} END AS snippet
     FROM turns_fts f CROSS JOIN turns t ON t.id = f.rowid
     WHERE turns_fts MATCH ?
       AND t.conv NOT IN (SELECT id FROM deleted_conversations)
     ORDER BY f.rowid DESC`,
  );
  // A phrase's matches among the newest ids, scanned upwards (and stopping
  // past `need`): FTS5 checks a rowid bound only once it has found a match,
  // so a phrase scanned towards older ids past its last match would read on
  // to the oldest turn, while upwards the newest turn ends the scan.
  const countFrom = db.prepare(
    `SELECT count(*) AS n, min(turn) AS low FROM (
       SELECT rowid AS turn FROM turns_fts
       WHERE turns_fts MATCH ? AND rowid >= CAST(? AS INTEGER)
       ORDER BY rowid LIMIT ?)`,
  );
  const titlesOf = db.prepare(
    `SELECT id, title FROM conversations
     WHERE id IN (SELECT value FROM json_each(?))`,
  );

  interface Snippet {
    text: string;
    snippet: string;
    marks: [number, number][];
  }

  interface Pick extends Snippet {
    conv: number;
    turn: number;
  }

  /** The best turns by bm25, one per conversation, with their snippets. */
  const byRank = (phrase: string, limit: number): Pick[] => {
    const ranked = rankAll.all(phrase, limit).map((row) => ({
      conv: Number(row.conv),
      turn: Number(row.turn),
    }));
    if (ranked.length === 0) return [];
    const turns = ranked.map((r) => r.turn);
    const snippets = new Map<number, Snippet>();
    const rows = snippetsOf.iterate(
      phrase,
      Math.min(...turns),
      Math.max(...turns),
      JSON.stringify(turns),
    );
    for (const row of rows) {
      snippets.set(Number(row.turn), readSnippet(row.snippet));
    }
    return ranked.map((r) => ({
      ...r,
      ...(snippets.get(r.turn) ?? readSnippet(null)),
    }));
  };

  /**
   * The newest matching turn of each conversation, newest first, down to
   * the turn `oldest` when given: a phrase's walk must not step past its
   * oldest counted match (see countFrom).
   */
  const byRecency = (
    phrase: string,
    limit: number,
    oldest: number | null,
    deadline: number,
  ): Pick[] => {
    const picks: Pick[] = [];
    firstSeen = new Set();
    let walked = 0;
    for (const row of newestFirst.iterate(phrase)) {
      const turn = Number(row.turn);
      if (row.snippet !== null) {
        picks.push({
          conv: Number(row.conv),
          turn,
          ...readSnippet(row.snippet),
        });
        if (picks.length >= limit) break;
      }
      if (oldest !== null && turn <= oldest) break;
      // Past rankCap turns, a few conversations with many matching turns
      // each are all there is to walk: the clock may end it there.
      if (++walked > rankCap && performance.now() > deadline) break;
    }
    firstSeen = new Set();
    return picks;
  };

  /**
   * Counts a phrase's matches over ever more of the newest ids, until more
   * than rankCap are found, all ids are covered (`whole`) or the budget is
   * spent. A phrase costs a fixed part per statement (a seek per word and
   * index segment) and a part per id (checking positions): two rounds
   * measure both, and the next round is sized to the time left.
   */
  const countPhrase = (phrase: string, top: number, started: number) => {
    const deadline = started + budgetMs;
    let span = 16_384;
    let last: { size: number; ms: number } | null = null;
    let fixed = 0;
    let perId = -1;
    for (;;) {
      const low = Math.max(1, top - span + 1);
      const before = performance.now();
      const row = countFrom.get(phrase, low, rankCap + 1);
      const ms = performance.now() - before;
      const found = Number(row?.n ?? 0);
      const oldest = found === 0 ? null : Number(row?.low);
      if (found > rankCap || low === 1) {
        return { found, oldest, whole: low === 1 };
      }
      const left = deadline - performance.now();
      const size = top - low + 1;
      if (last !== null && size !== last.size) {
        perId = Math.max(0, (ms - last.ms) / (size - last.size));
        fixed = Math.max(0, ms - perId * size);
      }
      last = { size, ms };
      const fits = perId < 0
        ? (ms < left ? size * 4 : 0)
        : perId === 0
        ? top
        : Math.floor((left - fixed) / perId);
      if (left <= 0 || fits <= size) return { found, oldest, whole: false };
      span = fits;
    }
  };

  const run: Search = (q, wanted) => {
    if (q.trim() === "" || !(wanted >= 1)) return [];
    const limit = Math.floor(wanted);
    const started = performance.now();
    // The whole text, however long: cutting it would match more than it says.
    const words = [...q.matchAll(/[\p{L}\p{N}\p{M}\p{Co}]+/gu)];
    // NUL would end FTS5's query string inside the phrase.
    const phrase = `"${q.replaceAll("\0", " ").replaceAll('"', '""')}"*`;
    const top = Number(newest.get()?.top ?? 0);
    if (top < 1) return [];

    // One word: its doclist holds only matches, so counting and walking
    // newest first cost what they visit, and the walk may go on past the
    // newest rankCap matches to fill the limit.
    const { found, oldest, whole } = words.length < 2
      ? {
        found: Number(countNewest.get(phrase, rankCap + 1)?.n ?? 0),
        oldest: null,
        whole: true,
      }
      : countPhrase(phrase, top, started);
    if (found === 0) return [];
    const counted = performance.now() - started;
    // bm25 reads every match twice more (its document frequency, then the
    // rows): only for a query under the cap that was quick to count.
    const picks = found <= rankCap && whole && counted < budgetMs
      ? byRank(phrase, limit)
      : byRecency(phrase, limit, oldest, performance.now() + budgetMs);
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

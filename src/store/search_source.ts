/**
 * The search of one indexed table (see search.ts for the rules they share):
 * its statements, ranking by bm25 or listing newest first, and its
 * snippets read with their marks.
 */
import type { DatabaseSync } from "node:sqlite";

/** What one indexed table gave: its best rows, one per conversation, and whether by bm25. */
export interface SourcePicks {
  ranked: boolean;
  picks: {
    conv: number;
    /** The turn the row belongs to: recency orders by it. */
    turn: number;
    /** bm25, lower better; null when listed by recency. */
    score: number | null;
    /** The file's name, for a row of an attached file. */
    file: string | null;
    text: string;
    snippet: string;
    marks: [number, number][];
  }[];
}

/** The search of one indexed table: the phrase, its words, the limit, when the query started. */
export type SourceSearch = (
  phrase: string,
  words: number,
  limit: number,
  started: number,
) => SourcePicks;

/**
 * Prepares the statements of one indexed table: `turns` (questions and
 * replies, questions weighted twice) or `files` (attached files' names and
 * text). Like `prepareSearch`, it runs from its source text in the search
 * worker: it uses only its parameters and globals.
 */
export function prepareSource(
  db: DatabaseSync,
  source: "turns" | "files",
  rankCap: number,
  budgetMs: number,
): SourceSearch {
  const files = source === "files";
  const fts = files ? "files_fts" : "turns_fts";
  const weights = files ? "1.0, 1.0" : "2.0, 1.0";
  // Each row's conversation and turn: a file's through its turn.
  const owner = (row: string) =>
    files
      ? `turn_files o ON o.id = ${row} CROSS JOIN turns t ON t.id = o.turn`
      : `turns t ON t.id = ${row}`;
  const name = files ? "o.name" : "NULL";
  // A match between the bytes 0xFF and 0xFE, read as bytes (see above).
  const OPEN = 0xff;
  const CLOSE = 0xfe;
  const SNIPPET = `CAST(snippet(${fts}, -1, CAST(X'FF' AS TEXT),
    CAST(X'FE' AS TEXT), '…', 12) AS BLOB)`;
  const decoder = new TextDecoder();
  interface Snippet {
    text: string;
    snippet: string;
    marks: [number, number][];
  }
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
  const newest = db.prepare(
    `SELECT max(id) AS top FROM ${files ? "turn_files" : "turns"}`,
  );
  // Walking a word's doclist newest first, FTS5 stops after `need` matches.
  const countNewest = db.prepare(
    `SELECT count(*) AS n FROM (
       SELECT rowid FROM ${fts} WHERE ${fts} MATCH ?
       ORDER BY rowid DESC LIMIT ?)`,
  );
  // bm25() is evaluated in a materialized CTE while the FTS5 cursor sits on
  // its row; CROSS JOIN keeps the FTS5 scan as the outer loop.
  const rankAll = db.prepare(
    `WITH m AS MATERIALIZED (
       SELECT rowid AS row, bm25(${fts}, ${weights}) AS score
       FROM ${fts} WHERE ${fts} MATCH ?
     )
     SELECT t.conv AS conv, t.id AS turn, m.row AS row, ${name} AS file,
       min(m.score) AS score
     FROM m CROSS JOIN ${owner("m.row")}
     WHERE t.conv NOT IN (SELECT id FROM deleted_conversations)
     GROUP BY t.conv ORDER BY score, row DESC LIMIT ?`,
  );
  // One pass over the range of the chosen rows: a prefix without a prefix
  // index costs a merge of doclists per statement, not per row.
  const snippetsOf = db.prepare(
    `SELECT rowid AS row, ${SNIPPET} AS snippet
     FROM ${fts} WHERE ${fts} MATCH ?
       AND rowid BETWEEN CAST(? AS INTEGER) AND CAST(? AS INTEGER)
       AND +rowid IN (SELECT value FROM json_each(?))`,
  );
  // Newest first, the snippet computed only for the first (newest) row of
  // each conversation, which the function below recognises.
  let firstSeen = new Set<number>();
  db.function(`desktop_assistant_first_of_${source}`, (conv) => {
    const id = Number(conv);
    if (firstSeen.has(id)) return 0;
    firstSeen.add(id);
    return 1;
  });
  const newestFirst = db.prepare(
    `SELECT f.rowid AS row, t.id AS turn, t.conv AS conv, ${name} AS file,
       CASE WHEN desktop_assistant_first_of_${source}(t.conv)
         THEN ${SNIPPET} END AS snippet
     FROM ${fts} f CROSS JOIN ${owner("f.rowid")}
     WHERE ${fts} MATCH ?
       AND t.conv NOT IN (SELECT id FROM deleted_conversations)
     ORDER BY f.rowid DESC`,
  );
  // A phrase's matches among the newest ids, scanned upwards (and stopping
  // past `need`): FTS5 checks a rowid bound only once it has found a match,
  // so a phrase scanned towards older ids past its last match would read on
  // to the oldest row, while upwards the newest row ends the scan.
  const countFrom = db.prepare(
    `SELECT count(*) AS n, min(row) AS low FROM (
       SELECT rowid AS row FROM ${fts}
       WHERE ${fts} MATCH ? AND rowid >= CAST(? AS INTEGER)
       ORDER BY rowid LIMIT ?)`,
  );

  type Pick = SourcePicks["picks"][number];
  const fileOf = (value: unknown) => value === null ? null : String(value);

  /** The best rows by bm25, one per conversation, with their snippets. */
  const byRank = (phrase: string, limit: number): Pick[] => {
    const ranked = rankAll.all(phrase, limit).map((row) => ({
      conv: Number(row.conv),
      turn: Number(row.turn),
      row: Number(row.row),
      score: Number(row.score),
      file: fileOf(row.file),
    }));
    if (ranked.length === 0) return [];
    const rows = ranked.map((r) => r.row);
    const snippets = new Map<number, Snippet>();
    for (
      const found of snippetsOf.iterate(
        phrase,
        Math.min(...rows),
        Math.max(...rows),
        JSON.stringify(rows),
      )
    ) {
      snippets.set(Number(found.row), readSnippet(found.snippet));
    }
    return ranked.map(({ row, ...r }) => ({
      ...r,
      ...(snippets.get(row) ?? readSnippet(null)),
    }));
  };

  /**
   * The newest matching row of each conversation, newest first, down to the
   * row `oldest` when given: a phrase's walk must not step past its oldest
   * counted match (see countFrom).
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
    for (const found of newestFirst.iterate(phrase)) {
      const row = Number(found.row);
      if (found.snippet !== null) {
        picks.push({
          conv: Number(found.conv),
          turn: Number(found.turn),
          score: null,
          file: fileOf(found.file),
          ...readSnippet(found.snippet),
        });
        if (picks.length >= limit) break;
      }
      if (oldest !== null && row <= oldest) break;
      // Past rankCap rows, a few conversations with many matching rows
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

  return (phrase, words, limit, started) => {
    const top = Number(newest.get()?.top ?? 0);
    if (top < 1) return { ranked: true, picks: [] };
    // One word: its doclist holds only matches, so counting and walking
    // newest first cost what they visit, and the walk may go on past the
    // newest rankCap matches to fill the limit.
    const { found, oldest, whole } = words < 2
      ? {
        found: Number(countNewest.get(phrase, rankCap + 1)?.n ?? 0),
        oldest: null,
        whole: true,
      }
      : countPhrase(phrase, top, started);
    if (found === 0) return { ranked: true, picks: [] };
    const counted = performance.now() - started;
    // bm25 reads every match twice more (its document frequency, then the
    // rows): only for a query under the cap that was quick to count.
    return found <= rankCap && whole && counted < budgetMs
      ? { ranked: true, picks: byRank(phrase, limit) }
      : {
        ranked: false,
        picks: byRecency(phrase, limit, oldest, performance.now() + budgetMs),
      };
  };
}

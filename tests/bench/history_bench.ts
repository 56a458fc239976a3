/**
 * The history figures on generated files: insert per `done` through the
 * Store, and the search mix through the SearchWorker, beside the two ways
 * peers search the same data (an unbounded FTS5 bm25 ranking over every
 * match, and a `LIKE '%q%'` scan), measured in the same run.
 */
import { DatabaseSync } from "node:sqlite";
import { SearchWorker } from "../../src/store/search_worker.ts";
import { Store } from "../../src/store/store.ts";
import {
  type Generated,
  generated,
  Random,
  TextGenerator,
} from "./history_gen.ts";
import {
  count,
  type GroupResult,
  max,
  mb,
  median,
  ms,
  percentile,
  progress,
  ratio,
  type Row,
  type Section,
} from "./report.ts";

/** History sizes and repeats. */
export interface HistorySizes {
  turns: number;
  large: number;
  /** Rounds over the whole query mix (after one warm-up round). */
  searchRounds: number;
  /** Runs of each reference query at the base size; one at the large size. */
  referenceRuns: number;
  /** Turns saved for the insert figure. */
  inserts: number;
}

/** Full and smoke sizes. */
export const HISTORY_SIZES: Record<"full" | "smoke", HistorySizes> = {
  full: {
    turns: 100_000,
    large: 1_000_000,
    searchRounds: 10,
    referenceRuns: 3,
    inserts: 500,
  },
  smoke: {
    turns: 1_000,
    large: 2_000,
    searchRounds: 2,
    referenceRuns: 1,
    inserts: 20,
  },
};

/** One query of the fixed mix. */
export interface MixQuery {
  kind: string;
  q: string;
}

/** The fixed search mix. */
export const QUERY_MIX: readonly MixQuery[] = [
  { kind: "rare word", q: "quokka" },
  { kind: "word in nearly every turn", q: "the" },
  { kind: "1-letter prefix", q: "s" },
  { kind: "2-letter prefix", q: "co" },
  { kind: "3-letter prefix", q: "pro" },
  { kind: "three-word phrase", q: "one of the" },
  { kind: "accent-free query for accented text", q: "citta" },
];

/** Results a search asks for, as the daemon's default. */
const LIMIT = 50;

/** What the history group needs to know. */
export interface HistoryOptions {
  seed: number;
  turns: number;
  large: number;
  cacheDir?: string;
  mode: "full" | "smoke";
}

/** The file of one size, generated or from the cache, with a progress line. */
export function historyFile(
  options: { seed: number; turns: number; cacheDir?: string },
  shape: "natural" | "catalog" = "natural",
): Generated {
  progress(`history: ${count(options.turns)} turns (${shape})…`);
  const started = performance.now();
  const file = generated(
    {
      seed: options.seed,
      turns: options.turns,
      shape,
      progress: (turns) =>
        progress(
          `  generated ${count(turns)} turns in ${
            ((performance.now() - started) / 1000).toFixed(0)
          } s`,
        ),
    },
    ...(options.cacheDir === undefined ? [] : [options.cacheDir]),
  );
  progress(
    file.cached
      ? `  from the cache: ${file.path}`
      : `  generated in ${file.seconds.toFixed(0)} s: ${file.path}`,
  );
  return file;
}

/** The two ways peers search: unbounded bm25 over every match, and a LIKE scan. */
class References implements Disposable {
  #db: DatabaseSync;
  #rank;
  #snippet;
  #like;
  #count;

  constructor(path: string) {
    this.#db = new DatabaseSync(path, { readOnly: true });
    this.#rank = this.#db.prepare(
      `WITH m AS MATERIALIZED (
         SELECT rowid AS turn, bm25(turns_fts, 2.0, 1.0) AS score
         FROM turns_fts WHERE turns_fts MATCH ?
       )
       SELECT t.conv AS conv, m.turn AS turn, min(m.score) AS score
       FROM m CROSS JOIN turns t ON t.id = m.turn
       GROUP BY t.conv ORDER BY score LIMIT ?`,
    );
    this.#snippet = this.#db.prepare(
      `SELECT snippet(turns_fts, -1, '**', '**', '…', 12) AS snippet
       FROM turns_fts WHERE turns_fts MATCH ? AND rowid = ?`,
    );
    this.#like = this.#db.prepare(
      `SELECT id, conv, user, reply FROM turns
       WHERE user LIKE ?1 ESCAPE '\\' OR reply LIKE ?1 ESCAPE '\\'
       ORDER BY id DESC`,
    );
    this.#count = this.#db.prepare(
      "SELECT count(*) AS n FROM turns_fts WHERE turns_fts MATCH ?",
    );
  }

  /** Exact bm25 ranking of every match, one row per conversation, snippets for those returned. */
  bm25(q: string): number {
    const phrase = `"${q.replaceAll('"', '""')}"*`;
    const rows = this.#rank.all(phrase, LIMIT);
    for (const row of rows) this.#snippet.get(phrase, row.turn as number);
    return rows.length;
  }

  /** A LIKE scan newest first until LIMIT conversations, with a snippet cut in JS. */
  like(q: string): number {
    const pattern = `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const seen = new Map<number, string>();
    for (const row of this.#like.iterate(pattern)) {
      const conv = Number(row.conv);
      if (seen.has(conv)) continue;
      // The snippet a peer cuts around the first match, kept so it is paid for.
      const text = `${row.user}\n${row.reply}`;
      const at = text.toLowerCase().indexOf(q.toLowerCase());
      seen.set(conv, text.slice(Math.max(0, at - 40), at + 40));
      if (seen.size >= LIMIT) break;
    }
    return seen.size;
  }

  /** Turns matching the query, as the search sees it. */
  matches(q: string): number {
    return Number(
      this.#count.get(`"${q.replaceAll('"', '""')}"*`)?.n ?? 0,
    );
  }

  [Symbol.dispose](): void {
    this.#db.close();
  }
}

function time<T>(work: () => T): [number, T] {
  const started = performance.now();
  const result = work();
  return [performance.now() - started, result];
}

interface QueryFigures {
  query: MixQuery;
  matches: number;
  results: number;
  ours: number[];
  bm25: number[];
  like: number[];
  likeResults: number;
}

/** Measures the mix at one size: ours through the worker, then the references. */
async function searchMix(
  file: Generated,
  sizes: HistorySizes,
  large: boolean,
): Promise<QueryFigures[]> {
  const figures: QueryFigures[] = QUERY_MIX.map((query) => ({
    query,
    matches: 0,
    results: 0,
    ours: [],
    bm25: [],
    like: [],
    likeResults: 0,
  }));
  // The store first, as in the daemon: it lays the WAL the reader needs.
  using _store = new Store(file.path);
  {
    await using worker = new SearchWorker(file.path);
    // A warm-up round brings the file into the page cache; not counted.
    for (const { query } of figures) await worker.search(query.q, LIMIT);
    for (let round = 0; round < sizes.searchRounds; round++) {
      for (const figure of figures) {
        const started = performance.now();
        const hits = await worker.search(figure.query.q, LIMIT);
        figure.ours.push(performance.now() - started);
        figure.results = hits.length;
      }
    }
  }
  using references = new References(file.path);
  const runs = large ? 1 : sizes.referenceRuns;
  for (const figure of figures) {
    figure.matches = references.matches(figure.query.q);
    for (let run = 0; run < runs; run++) {
      const [bm25] = time(() => references.bm25(figure.query.q));
      figure.bm25.push(bm25);
      const [like, found] = time(() => references.like(figure.query.q));
      figure.like.push(like);
      figure.likeResults = found;
    }
    progress(
      `  ${figure.query.kind}: ours ${ms(median(figure.ours))}, bm25 ${
        ms(median(figure.bm25))
      }, LIKE ${ms(median(figure.like))}`,
    );
  }
  return figures;
}

/** Timings of the insert figure: each save, and the upkeep that follows it. */
interface InsertFigures {
  /** Milliseconds of each `saveTurn`. */
  saves: number[];
  /** Milliseconds of each upkeep step (each `maintain()` call). */
  steps: number[];
  /** Milliseconds of upkeep after each save, all steps together. */
  upkeep: number[];
}

/**
 * Saves `n` new turns through the Store (half in new conversations), timing
 * each, then removes them. After each save the upkeep the store's timer
 * would run in the daemon (checkpoint, FTS5 merge steps) runs to completion
 * and is timed apart: it happens after the `done`, off the save.
 */
function inserts(file: Generated, n: number, seed: number): InsertFigures {
  const db = new DatabaseSync(file.path);
  const before = db.prepare(
    "SELECT (SELECT max(id) FROM turns) AS turn, (SELECT max(id) FROM conversations) AS conv",
  ).get();
  const topTurn = Number(before?.turn ?? 0);
  const topConv = Number(before?.conv ?? 0);
  const updated = new Map<number, number>();
  const random = new Random(seed + 1);
  const text = new TextGenerator(random);
  const samples: number[] = [];
  const steps: number[] = [];
  const upkeep: number[] = [];
  try {
    using store = new Store(file.path);
    // What an open leaves (a WAL to checkpoint, segments to merge) is done
    // before the first save, as the daemon's first done comes later.
    while (store.maintain());
    for (let i = 0; i < n; i++) {
      let conv: number | null = null;
      if (i % 2 === 1 && topConv > 0) {
        // A recent conversation, as a person goes back to one.
        conv = Math.max(1, topConv - random.int(0, 500));
        if (!updated.has(conv)) {
          const row = db.prepare(
            "SELECT updated FROM conversations WHERE id = ?",
          )
            .get(conv);
          updated.set(conv, Number(row?.updated ?? 0));
        }
      }
      const language = text.language();
      const user = text.question(language);
      const reply = text.reply(language);
      const tools = text.tools();
      const [elapsed] = time(() =>
        store.saveTurn(conv, {
          user,
          reply,
          tools,
          messages: [
            { role: "user", content: user },
            { role: "assistant", content: reply },
          ],
        })
      );
      samples.push(elapsed);
      let total = 0;
      for (let more = true; more;) {
        const [step, left] = time(() => store.maintain());
        steps.push(step);
        total += step;
        more = left;
      }
      upkeep.push(total);
    }
  } finally {
    // Put the cached file back as it was, so every run searches the same data.
    db.exec("BEGIN IMMEDIATE");
    db.prepare("DELETE FROM turns WHERE id > ?").run(topTurn);
    db.prepare("DELETE FROM conversations WHERE id > ?").run(topConv);
    const restore = db.prepare(
      "UPDATE conversations SET updated = ? WHERE id = ?",
    );
    for (const [conv, at] of updated) restore.run(at, conv);
    db.exec("COMMIT");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
  }
  return { saves: samples, steps, upkeep };
}

function label(turns: number): string {
  return turns >= 1_000_000 && turns % 1_000_000 === 0
    ? `${turns / 1_000_000}M`
    : turns >= 1000 && turns % 1000 === 0
    ? `${turns / 1000}k`
    : String(turns);
}

/** Runs the history figures at the base size and the large one; `worst` names the slowest queries at the base size. */
export async function historyBenchmarks(
  options: HistoryOptions,
  smoke: boolean,
): Promise<GroupResult & { worst: string[] }> {
  const sizes = HISTORY_SIZES[options.mode];
  const rows: Row[] = [];
  const sections: Section[] = [];
  const sizesRun = [options.turns];
  if (options.large > 0 && options.large !== options.turns) {
    sizesRun.push(options.large);
  }
  let worst: string[] = [];
  const files: string[] = [];
  for (const turns of sizesRun) {
    const large = turns === options.large && sizesRun.length > 1;
    const file = historyFile({ ...options, turns });
    files.push(
      `| ${label(turns)} | ${count(file.turns)} | ${
        count(file.conversations)
      } | ${mb(file.bytes)} | ${
        file.cached ? "cached" : `${file.seconds.toFixed(0)} s`
      } |`,
    );
    progress(`  search mix, ${sizes.searchRounds} rounds`);
    const figures = await searchMix(file, sizes, large);
    progress(`  inserts: ${sizes.inserts}`);
    const { saves, steps, upkeep } = inserts(
      file,
      sizes.inserts,
      options.seed,
    );
    const name = label(turns);

    rows.push({
      id: `insert.${large ? "large" : "base"}`,
      figure: `history insert per done, ${name} turns: p50 / p99`,
      value: `${ms(percentile(saves, 50))} / ${ms(percentile(saves, 99))}`,
      reference: "—",
      ratio: "—",
      target: "p99 ≤ 5 ms",
      met: smoke ? null : percentile(saves, 99) <= 5,
    });

    const ours = figures.flatMap((f) => f.ours);
    const bm25All = figures.flatMap((f) => f.bm25);
    const likeAll = figures.flatMap((f) => f.like);
    const p95 = percentile(ours, 95);
    const top = max(ours);
    rows.push({
      id: `search.${large ? "large" : "base"}`,
      figure:
        `search, mix of ${QUERY_MIX.length} queries × ${sizes.searchRounds}, ${name} turns: p50 / p95 / max`,
      value: `${ms(percentile(ours, 50))} / ${ms(p95)} / ${ms(top)}`,
      reference: `unbounded bm25 ${ms(percentile(bm25All, 50))} / ${
        ms(percentile(bm25All, 95))
      } / ${ms(max(bm25All))}; LIKE ${ms(percentile(likeAll, 50))} / ${
        ms(percentile(likeAll, 95))
      } / ${ms(max(likeAll))}`,
      ratio: ratio(percentile(bm25All, 95) / p95),
      target: "p95 ≤ 50 ms, max ≤ 250 ms",
      met: smoke ? null : p95 <= 50 && top <= 250,
    });
    const hardest = [...figures].sort((a, b) =>
      median(b.bm25) - median(a.bm25)
    )[0]!;
    const speedup = median(hardest.bm25) / median(hardest.ours);
    rows.push({
      id: `search.worst.${large ? "large" : "base"}`,
      figure:
        `search, worst query for the ranking (${hardest.query.kind} "${hardest.query.q}"), ${name} turns`,
      value: ms(median(hardest.ours)),
      reference: `unbounded bm25 ${ms(median(hardest.bm25))}; LIKE ${
        ms(median(hardest.like))
      }`,
      ratio: `${ratio(speedup)} faster`,
      target: "≥ 10× faster than bm25",
      met: smoke ? null : speedup >= 10,
    });
    if (!large) {
      worst = [...figures]
        .sort((a, b) => max(b.ours) - max(a.ours))
        .slice(0, 3)
        .map((f) => f.query.q);
    }
    sections.push({
      title: `Search mix per query, ${name} turns`,
      body: [
        `Ours: the daemon's SearchWorker (limit ${LIMIT}), ${sizes.searchRounds} runs after a warm-up round. ` +
        `bm25: every match ranked exactly, one row per conversation, snippets for the ${LIMIT} returned` +
        ` (${large ? 1 : sizes.referenceRuns} run${
          large || sizes.referenceRuns === 1 ? "" : "s"
        }). ` +
        `LIKE: \`user LIKE '%q%' OR reply LIKE '%q%'\` newest first until ${LIMIT} conversations ` +
        "(ASCII case folding only, no accent folding: `citta` does not find `città` that way).\n",
        "| query | text | matching turns | results | ours p50 | ours max | bm25 | LIKE (results) | bm25 / ours |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ...figures.map((f) =>
          `| ${f.query.kind} | \`${f.query.q}\` | ${
            count(f.matches)
          } | ${f.results} | ${ms(median(f.ours))} | ${ms(max(f.ours))} | ${
            ms(median(f.bm25))
          } | ${ms(median(f.like))} (${f.likeResults}) | ${
            ratio(median(f.bm25) / median(f.ours))
          } |`
        ),
        "",
        `Insert per done (${saves.length} saves, half into new conversations, half appended to recent ones; ` +
        `WAL, synchronous=FULL, one transaction each): p50 ${
          ms(percentile(saves, 50))
        }, p90 ${ms(percentile(saves, 90))}, p99 ${
          ms(percentile(saves, 99))
        }, max ${ms(max(saves))}. ` +
        `Upkeep after each save (checkpoint and FTS5 merge steps, run by the store after the done, off the save): ` +
        `${ms(percentile(upkeep, 50))} p50, ${
          ms(percentile(upkeep, 99))
        } p99, ${ms(max(upkeep))} max per save; ${steps.length} steps, ${
          ms(percentile(steps, 50))
        } p50, ${ms(max(steps))} max each.`,
      ].join("\n"),
    });
  }
  sections.unshift({
    title: "Generated histories",
    body: [
      "Seeded (seed " + options.seed +
      "), cached under the temp dir; several languages (English most, then French, German, Spanish, Italian, Portuguese)" +
      " with accented words, questions of 5–60 words, replies of 50–800 words (log-uniform), markdown in 30% and code in 10% of replies," +
      " 1–200 turns a conversation (mostly short), tool names on 12% of turns. Generation time is shown when this run generated the file.\n",
      "| size | turns | conversations | file | generation |",
      "| --- | --- | --- | --- | --- |",
      ...files,
    ].join("\n"),
  });
  return { rows, sections, worst };
}

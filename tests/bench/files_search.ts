/**
 * Search over a history with attached text: the generated history with a
 * text file on about one turn in five (1–6 KB of log and config lines,
 * `turn_files` rows indexed by `files_fts` as the daemon's schema does,
 * and the file's text in the question the turn's messages keep), searched
 * through the SearchWorker with the history group's query mix plus
 * queries only files can answer; the same mix on the same history without
 * files is the reference, measured in the same run.
 */
import { DatabaseSync } from "node:sqlite";
import { SearchWorker } from "../../src/store/search_worker.ts";
import { Store } from "../../src/store/store.ts";
import {
  FILE_NAMES,
  FILE_PHRASE,
  FILE_PREFIX,
  FILE_RARE,
  FILE_WORD,
  fileText,
} from "./file_text.ts";
import { historyFile, type MixQuery, QUERY_MIX } from "./history_bench.ts";
import {
  cacheDir,
  copyHistory,
  type Generated,
  Random,
} from "./history_gen.ts";
import {
  count,
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
import { cachedFile } from "./cache_file.ts";

/** Bump when the generated files change, so stale caches are not reused. */
const FILES_VERSION = 1;
/** Turns with a file: about one in five. */
const SHARE = 0.2;
/** Results a search asks for, as the daemon's default. */
const LIMIT = 50;

/** The queries only files answer, besides the history group's mix. */
export const FILE_QUERIES: readonly MixQuery[] = [
  { kind: "word only in files, in most of them", q: FILE_WORD },
  { kind: "rare word only in files", q: FILE_RARE },
  { kind: "4-letter prefix only in files", q: FILE_PREFIX },
  { kind: "phrase only in files", q: FILE_PHRASE },
];

/** What was added to the history. */
interface Added {
  path: string;
  files: number;
  bytes: number;
  seconds: number;
  cached: boolean;
}

/** Adds the files to a copy of the generated history (cached beside it). */
function withFiles(
  base: Generated,
  options: { seed: number; turns: number; cacheDir?: string },
): Added {
  const dir = options.cacheDir ?? cacheDir();
  const path =
    `${dir}/files-v${FILES_VERSION}-seed${options.seed}-${base.turns}.db`;
  const summary = (seconds: number, cached: boolean): Added => {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const row = db.prepare(
        "SELECT count(*) AS n, sum(bytes) AS bytes FROM turn_files",
      ).get();
      return {
        path,
        files: Number(row?.n ?? 0),
        bytes: Number(row?.bytes ?? 0),
        seconds,
        cached,
      };
    } finally {
      db.close();
    }
  };
  const started = performance.now();
  const cached = cachedFile(path, (partial) => {
    progress(`files: adding text files to one turn in five…`);
    copyHistory(base.path, partial);
    // The daemon's schema, the files' tables included.
    new Store(partial).close();
    const random = new Random(options.seed + 101);
    const db = new DatabaseSync(partial);
    try {
      db.exec("PRAGMA journal_mode = MEMORY");
      db.exec("PRAGMA synchronous = OFF");
      db.exec("PRAGMA cache_size = -262144");
      const add = db.prepare(
        `INSERT INTO turn_files(turn, idx, name, mime, bytes, kind, text, data)
         VALUES (?, 0, ?, 'text/plain', ?, 'text', ?, NULL)`,
      );
      const read = db.prepare("SELECT messages FROM turns WHERE id = ?");
      const write = db.prepare("UPDATE turns SET messages = ? WHERE id = ?");
      const top = Number(
        db.prepare("SELECT max(id) AS top FROM turns").get()?.top ?? 0,
      );
      db.exec("BEGIN");
      for (let turn = 1; turn <= top; turn++) {
        if (random.next() >= SHARE) continue;
        const name = random.pick(FILE_NAMES);
        const text = fileText(
          random,
          random.logInt(1024, 6144),
          random.next() < 1 / 2000,
        );
        const bytes = new TextEncoder().encode(text).length;
        add.run(turn, name, bytes, text);
        // The question as sent: its text, then the file named and fenced.
        const messages = JSON.parse(String(read.get(turn)?.messages ?? "[]"));
        if (messages[0]) {
          messages[0].content += `\n\nFile ${name}:\n\`\`\`\n${text}\n\`\`\``;
          write.run(JSON.stringify(messages), turn);
        }
        if (turn % 50_000 === 0) {
          db.exec("COMMIT");
          db.exec("BEGIN");
        }
      }
      db.exec("COMMIT");
      db.exec("PRAGMA journal_mode = WAL");
    } finally {
      db.close();
    }
    new Store(partial).close();
  });
  return summary(cached ? 0 : (performance.now() - started) / 1000, cached);
}

interface Figures {
  query: MixQuery;
  ours: number[];
  results: number;
  fromFiles: number;
  inTurns: number;
  inFiles: number;
}

function newFigures(queries: readonly MixQuery[]): Figures[] {
  return queries.map((query) => ({
    query,
    ours: [],
    results: 0,
    fromFiles: 0,
    inTurns: 0,
    inFiles: 0,
  }));
}

/** How many turns and files of a history match each query, as the search sees it. */
function countMatches(path: string, figures: Figures[]): void {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const inTurns = db.prepare(
      "SELECT count(*) AS n FROM turns_fts WHERE turns_fts MATCH ?",
    );
    const inFiles = db.prepare(
      "SELECT count(*) AS n FROM files_fts WHERE files_fts MATCH ?",
    );
    for (const figure of figures) {
      const phrase = `"${figure.query.q.replaceAll('"', '""')}"*`;
      figure.inTurns = Number(inTurns.get(phrase)?.n ?? 0);
      figure.inFiles = Number(inFiles.get(phrase)?.n ?? 0);
    }
  } finally {
    db.close();
  }
}

/**
 * The mix through a SearchWorker on each file, a warm-up round, then
 * `rounds` in which each query runs on one file and then the other, so both
 * share the machine's noise.
 */
async function searchMix(
  paths: readonly [string, string],
  queries: readonly MixQuery[],
  rounds: number,
): Promise<[Figures[], Figures[]]> {
  const both: [Figures[], Figures[]] = [
    newFigures(queries),
    newFigures(queries),
  ];
  // The stores first, as in the daemon: each lays the WAL its reader needs.
  using _a = new Store(paths[0]);
  using _b = new Store(paths[1]);
  {
    await using a = new SearchWorker(paths[0]);
    await using b = new SearchWorker(paths[1]);
    const workers = [a, b];
    for (const query of queries) {
      for (const worker of workers) await worker.search(query.q, LIMIT);
    }
    for (let round = 0; round < rounds; round++) {
      for (const [i, query] of queries.entries()) {
        for (const [w, worker] of workers.entries()) {
          const figure = both[w]![i]!;
          const started = performance.now();
          const hits = await worker.search(query.q, LIMIT);
          figure.ours.push(performance.now() - started);
          figure.results = hits.length;
          figure.fromFiles = hits.filter((hit) => hit.file !== undefined)
            .length;
        }
      }
    }
  }
  countMatches(paths[0], both[0]);
  countMatches(paths[1], both[1]);
  return both;
}

/** Runs the search figure at the base history size. */
export async function searchWithFiles(
  options: { seed: number; turns: number; cacheDir?: string },
  rounds: number,
  smoke: boolean,
): Promise<{ row: Row; section: Section }> {
  const base = historyFile(options);
  const added = withFiles(base, options);
  progress(
    added.cached
      ? `  from the cache: ${added.path}`
      : `  added in ${added.seconds.toFixed(0)} s: ${added.path}`,
  );
  const queries = [...QUERY_MIX, ...FILE_QUERIES];
  progress(`files: search mix, ${rounds} rounds, with files and without`);
  const [figures, reference] = await searchMix(
    [added.path, base.path],
    queries,
    rounds,
  );
  const ours = figures.flatMap((f) => f.ours);
  const without = reference.flatMap((f) => f.ours);
  const p95 = percentile(ours, 95);
  const spread = (values: number[]) =>
    `${ms(percentile(values, 50))} / ${ms(percentile(values, 95))} / ${
      ms(max(values))
    }`;
  const row: Row = {
    id: "files.search",
    figure: `search with attached text (a file on ${
      Math.round(SHARE * 100)
    }% of turns), mix of ${queries.length} queries × ${rounds}, ${
      count(base.turns)
    } turns: p50 / p95 / max`,
    value: spread(ours),
    reference: `the same history without files: ${spread(without)}`,
    ratio: ratio(p95 / percentile(without, 95)),
    target: "p95 ≤ 50 ms",
    met: smoke ? null : p95 <= 50,
  };
  const section: Section = {
    title: `Files: search with attached text, ${count(base.turns)} turns`,
    body: [
      `The generated history of ${count(base.turns)} turns (${
        mb(base.bytes)
      }) with a text file on ${count(added.files)} turns (${
        mb(added.bytes)
      } of log and config lines, 1–6 KB each, in \`turn_files\` and \`files_fts\`, and in the question each turn's messages keep; ${
        added.cached ? "cached" : `added in ${added.seconds.toFixed(0)} s`
      }). ` +
      `Through the SearchWorker (limit ${LIMIT}), ${rounds} rounds after a warm-up round; the reference runs the same queries on the same history without files, each query on one file right after the other.\n`,
      "| query | text | matching turns | matching files | results (from a file) | p50 | max | without files p50 |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
      ...figures.map((f, i) =>
        `| ${f.query.kind} | \`${f.query.q}\` | ${count(f.inTurns)} | ${
          count(f.inFiles)
        } | ${f.results} (${f.fromFiles}) | ${ms(median(f.ours))} | ${
          ms(max(f.ours))
        } | ${ms(median(reference[i]!.ours))} |`
      ),
    ].join("\n"),
  };
  return { row, section };
}

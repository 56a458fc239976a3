/**
 * Search by meaning on generated 768-dimension vectors (vector_gen.ts): the
 * index of src/store/vector_index.ts (bit prefilter, exact rescoring from
 * SQLite) against the exact cosine ranking of the same vectors, an exact
 * scan of every stored blob read from SQLite, and an exact scan of int8
 * vectors held in memory (the other design measured), all in the same run.
 */
import { DatabaseSync } from "node:sqlite";
import { encodeVector } from "../../src/store/vector_codec.ts";
import {
  prepareVectors,
  type VectorHit,
} from "../../src/store/vector_index.ts";
import { cacheDir } from "./history_gen.ts";
import {
  DIM,
  exactTop,
  MODEL,
  turnOf,
  vectorFile,
  World,
} from "./vector_gen.ts";
import { rss } from "./process_bench.ts";
import {
  count,
  type GroupResult,
  max,
  mb,
  median,
  ms,
  out,
  percentile,
  progress,
  ratio,
  type Row,
} from "./report.ts";

/** Queries and repeats. */
export interface VectorSizes {
  /** Queries at the base size (recall over all, latency over `rounds` of them). */
  queries: number;
  /** Queries at the large size. */
  largeQueries: number;
  rounds: number;
  /** Rows written for the pick-up figure. */
  pickup: number;
}

/** Full and smoke sizes. */
export const VECTOR_SIZES: Record<"full" | "smoke", VectorSizes> = {
  full: { queries: 100, largeQueries: 50, rounds: 3, pickup: 500 },
  smoke: { queries: 5, largeQueries: 5, rounds: 1, pickup: 5 },
};

const LIMIT = 50;

/** The other design: every vector's bytes in memory, scanned exactly. */
function int8Scan(db: DatabaseSync) {
  const rows = db.prepare("SELECT count(*) AS n FROM vectors").get();
  const n = Number(rows?.n);
  const bytes = new Int8Array(n * DIM);
  const turns = new Uint32Array(n);
  const norms = new Float32Array(n);
  let k = 0;
  for (const row of db.prepare("SELECT turn, data FROM vectors").iterate()) {
    const data = row.data as Uint8Array;
    const values = new Int8Array(data.buffer, data.byteOffset + 4, DIM);
    bytes.set(values, k * DIM);
    let sum = 0;
    for (let d = 0; d < DIM; d++) sum += values[d]! * values[d]!;
    norms[k] = Math.sqrt(sum);
    turns[k++] = Number(row.turn);
  }
  return (query: Float32Array, limit: number): number[] => {
    const best: { turn: number; score: number }[] = [];
    for (let i = 0, o = 0; i < n; i++, o += DIM) {
      let dot = 0;
      for (let d = 0; d < DIM; d++) dot += query[d]! * bytes[o + d]!;
      const score = dot / norms[i]!;
      if (best.length === limit && score <= best[limit - 1]!.score) continue;
      best.push({ turn: turns[i]!, score });
      best.sort((a, b) => b.score - a.score);
      best.length = Math.min(best.length, limit);
    }
    return best.map((b) => b.turn);
  };
}

/** The peers' way without an index: every blob read from SQLite and scored, per query. */
function sqliteScan(db: DatabaseSync, query: Float32Array): number {
  const all = db.prepare(
    `SELECT max(turn) AS top, CAST(group_concat(data, '') AS BLOB) AS data
     FROM (SELECT turn, data FROM vectors WHERE turn > ? ORDER BY turn LIMIT 2048)`,
  );
  let best = -2;
  for (let from = 0;;) {
    const row = all.get(from);
    if (row?.top === null || row === undefined) return best;
    from = Number(row.top);
    const values = new Int8Array((row.data as Uint8Array).buffer);
    for (let o = 4; o < values.length; o += DIM + 4) {
      let dot = 0;
      let sum = 0;
      for (let d = 0; d < DIM; d++) {
        dot += query[d]! * values[o + d]!;
        sum += values[o + d]! * values[o + d]!;
      }
      best = Math.max(best, dot / Math.sqrt(sum));
    }
  }
}

function recall(found: number[][], exact: number[][]): number {
  const each = exact.slice(0, found.length).map((top, j) => {
    const mine = new Set(found[j]!.slice(0, 10));
    return top.filter((turn) => mine.has(turn)).length / top.length;
  });
  return each.reduce((a, b) => a + b, 0) / each.length;
}

/** RSS growth of a fresh process that loads `design` over `path` and answers a few queries. */
async function childRss(path: string, design: string, seed: number, n: number) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--v8-flags=--expose-gc",
      new URL(import.meta.url).pathname,
      "--rss",
      path,
      design,
      String(seed),
      String(n),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error(`RSS child for ${design} failed`);
  return JSON.parse(new TextDecoder().decode(output.stdout)) as {
    growth: number;
    loadMs: number;
    bytes: number;
  };
}

async function measureRss(args: string[]): Promise<void> {
  const [path, design, seed, n] = args as [string, string, string, string];
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const world = new World(Number(seed));
  const queries = Array.from(
    { length: 5 },
    (_, j) => world.query(j, Number(n)),
  );
  const db = new DatabaseSync(path, { readOnly: true });
  db.prepare("SELECT count(*) FROM turns").get();
  gc();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const before = rss(Deno.pid);
  const started = performance.now();
  const index = design === "bits" ? prepareVectors(db) : null;
  const scan = design === "bits" ? null : int8Scan(db);
  const loadMs = performance.now() - started;
  for (const q of queries) index?.search(q, MODEL, LIMIT) ?? scan!(q, LIMIT);
  gc();
  await new Promise((resolve) => setTimeout(resolve, 200));
  const growth = rss(Deno.pid) - before;
  out(JSON.stringify({ growth, loadMs, bytes: index?.bytes() ?? 0 }));
}

/** What the vectors group needs: the sizes come from the history flags. */
export interface VectorBenchOptions {
  seed: number;
  turns: number;
  large: number;
  cacheDir?: string;
  mode: "full" | "smoke";
}

/** Times each query's search; returns the times and the first round's turns. */
function timed(
  search: (q: Float32Array) => number[],
  queries: Float32Array[],
  rounds: number,
) {
  const times: number[] = [];
  const found: number[][] = [];
  for (let round = 0; round < rounds; round++) {
    for (const q of queries) {
      const started = performance.now();
      const turns = search(q);
      times.push(performance.now() - started);
      if (round === 0) found.push(turns);
    }
  }
  return { times, found };
}

/** Rows inserted on a copy of the file: new turns above the top, then older turns' vectors. */
function pickup(world: World, path: string, n: number, rows: number) {
  const copy = `${Deno.makeTempDirSync()}/vectors.db`;
  Deno.copyFileSync(path, copy);
  const writer = new DatabaseSync(copy);
  writer.exec("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON");
  const reader = new DatabaseSync(copy, { readOnly: true });
  try {
    const index = prepareVectors(reader, { sweepMs: Infinity });
    const add = writer.prepare(
      "INSERT INTO vectors(turn, model, dim, data) VALUES (?, ?, ?, ?)",
    );
    const turn = writer.prepare("INSERT INTO turns(id, conv) VALUES (?, 1)");
    const top = turnOf(n - 1);
    writer.exec("BEGIN");
    for (let i = 1; i <= rows; i++) {
      turn.run(top + i);
      add.run(top + i, MODEL, DIM, encodeVector(world.vector(n + i)));
    }
    writer.exec("COMMIT; BEGIN");
    for (let i = 1; i <= rows; i++) {
      add.run(101 * i, MODEL, DIM, encodeVector(world.vector(n + rows + i)));
    }
    writer.exec("COMMIT");
    const q = world.query(0, n);
    let started = performance.now();
    index.search(q, MODEL, LIMIT);
    const tail = performance.now() - started;
    started = performance.now();
    index.refresh();
    const sweep = performance.now() - started;
    if (index.count(MODEL) !== n + 2 * rows) {
      throw new Error(
        `picked up ${index.count(MODEL) - n} of ${2 * rows} rows`,
      );
    }
    return { tail, sweep };
  } finally {
    reader.close();
    writer.close();
    Deno.removeSync(copy.replace(/\/vectors\.db$/, ""), { recursive: true });
  }
}

/** The vectors group: ours against the references, at the base and large sizes. */
export async function vectorBenchmarks(
  options: VectorBenchOptions,
  smoke: boolean,
): Promise<GroupResult> {
  const sizes = VECTOR_SIZES[options.mode];
  const world = new World(options.seed);
  const rows: Row[] = [];
  const tuning: string[] = [];
  const sizesRun: [string, number, number][] = [
    ["base", options.turns, sizes.queries],
    ["large", options.large, sizes.largeQueries],
  ];
  for (const [name, n, many] of sizesRun) {
    if (n === 0) continue;
    const label = count(n);
    progress(`vectors: ${label} vectors of ${DIM} dimensions…`);
    const path = vectorFile(world, n, options.cacheDir ?? cacheDir());
    const queries = Array.from({ length: many }, (_, j) => world.query(j, n));
    progress("  exact ranking of the float vectors…");
    const exact = exactTop(world, n, queries);
    const db = new DatabaseSync(path, { readOnly: true });
    const started = performance.now();
    const index = prepareVectors(db);
    const loadMs = performance.now() - started;
    const turns = (hits: VectorHit[]) => hits.map((hit) => hit.turn);
    const search = (q: Float32Array) => turns(index.search(q, MODEL, LIMIT));
    timed(search, queries, 1);
    const ours = timed(search, queries, sizes.rounds);
    const p95 = percentile(ours.times, 95);
    progress("  the other designs…");
    const designs = [[1024, 1024], [2048, 200], [4096, 400], [8192, 800]];
    for (const [candidates = 0, rescore = 0] of designs) {
      const other = prepareVectors(db, { candidates, rescore });
      const s = (q: Float32Array) => turns(other.search(q, MODEL, LIMIT));
      const t = timed(s, queries, 1);
      tuning.push(
        `| ${label} | ${candidates} | ${rescore} | ${
          recall(t.found, exact).toFixed(3)
        } | ${ms(percentile(t.times, 50))} / ${ms(percentile(t.times, 95))} |`,
      );
    }
    tuning.push(
      `| ${label} | 4096 | ${Math.max(400, n >> 10)} (default) | ${
        recall(ours.found, exact).toFixed(3)
      } | ${ms(percentile(ours.times, 50))} / ${ms(p95)} |`,
    );
    const few = queries.slice(0, name === "base" ? 20 : 5);
    const scan = int8Scan(db);
    const int8 = timed((q) => scan(q, LIMIT), few, 1);
    const int8Recall = recall(int8.found, exact);
    const direct = few.slice(0, name === "base" ? 3 : 1).map((q) => {
      const t = performance.now();
      sqliteScan(db, q);
      return performance.now() - t;
    });
    db.close();
    const limit = name === "base" ? 50 : 250;
    progress("  memory in a fresh process…");
    const bits = await childRss(path, "bits", options.seed, n);
    rows.push({
      id: `vectors.search.${name}`,
      figure: `search by meaning, ${label} vectors: p50 / p95 / max`,
      value: `${ms(percentile(ours.times, 50))} / ${ms(p95)} / ${
        ms(max(ours.times))
      }`,
      reference: `exact scan of SQLite ${
        ms(median(direct))
      }; int8 in memory p95 ${ms(percentile(int8.times, 95))}`,
      ratio: `${ratio(median(direct) / p95)} faster`,
      target: `p95 ≤ ${limit} ms`,
      met: smoke ? null : p95 <= limit,
    }, {
      id: `vectors.recall.${name}`,
      figure: `recall@10 by meaning, ${label} vectors (${many} queries)`,
      value: recall(ours.found, exact).toFixed(3),
      reference: `exact float cosine 1; int8 exact scan ${
        int8Recall.toFixed(3)
      }`,
      ratio: "—",
      target: "≥ 0.95",
      met: smoke ? null : recall(ours.found, exact) >= 0.95,
    }, {
      id: `vectors.load.${name}`,
      figure: `index load at start, ${label} vectors`,
      value: `${ms(loadMs)} (arrays ${mb(index.bytes())}, RSS +${
        mb(bits.growth)
      })`,
      reference: `one exact scan of SQLite ${ms(median(direct))}`,
      ratio: ratio(loadMs / median(direct)),
      target: "reported",
      met: null,
    });
    const moved = pickup(world, path, n, sizes.pickup);
    rows.push({
      id: `vectors.pickup.${name}`,
      figure: `pick up ${count(sizes.pickup)} new turns' vectors / sweep for ${
        count(sizes.pickup)
      } older ones, ${label}`,
      value: `${ms(moved.tail)} / ${ms(moved.sweep)}`,
      reference: `one search p50 ${ms(percentile(ours.times, 50))}`,
      ratio: "—",
      target: "reported",
      met: null,
    });
    if (name !== "base") continue;
    const bytes = await childRss(path, "int8", options.seed, n);
    rows.push({
      id: "vectors.rss.base",
      figure: `RSS growth with the index loaded, ${label} vectors`,
      value: `${mb(bits.growth)} (arrays ${mb(bits.bytes)})`,
      reference: `int8 in memory ${mb(bytes.growth)}`,
      ratio: ratio(bits.growth / 40e6),
      target: "≤ 40 MB",
      met: smoke ? null : bits.growth <= 40e6,
    }, {
      id: "vectors.int8.base",
      figure:
        `other design: exact scan of int8 vectors in memory, ${label}: p95 / RSS growth`,
      value: `${ms(percentile(int8.times, 95))} / ${mb(bytes.growth)}`,
      reference: `ours ${ms(p95)} / ${mb(bits.growth)}`,
      ratio: ratio(bytes.growth / bits.growth),
      target: "p95 ≤ 50 ms, RSS ≤ 40 MB",
      met: smoke
        ? null
        : percentile(int8.times, 95) <= 50 && bytes.growth <= 40e6,
    });
  }
  return {
    rows,
    sections: [{
      title: "Search by meaning: candidates and rescoring",
      body: [
        `Recall@10 against the exact cosine ranking of the float vectors, and latency (limit ${LIMIT}), for the prefilter's candidates and the rows rescored from SQLite (1024/1024: Hamming alone, no asymmetric stage; by default one vector in 1,024 is rescored, 400 at least). Vectors: docs/search.md.\n`,
        "| vectors | candidates | rescored | recall@10 | p50 / p95 |",
        "| --- | --- | --- | --- | --- |",
        ...tuning,
      ].join("\n"),
    }],
  };
}

if (import.meta.main && Deno.args[0] === "--rss") {
  await measureRss(Deno.args.slice(1));
}

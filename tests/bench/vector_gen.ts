/**
 * Seeded 768-dimension vectors for the vectors benchmark, reproducible one
 * by one: a mixture of 1–3 of 4096 centroids (grouped under 64 topics, all
 * sharing a common direction, as real embeddings do), plus noise,
 * normalised. Queries are stored vectors moved by as much noise again.
 * Files are cached under the temp dir keyed by seed and size; every 101st
 * turn has no vector, as if a backlog had not reached it, so a sweep has
 * rows below the top to find.
 */
import { DatabaseSync } from "node:sqlite";
import { encodeVector } from "../../src/store/vector_codec.ts";
import { count, progress } from "./report.ts";
import { cachedFile } from "./cache_file.ts";

/** Dimensions of every generated vector. */
export const DIM = 768;
/** The model name the vectors are stored under. */
export const MODEL = "embeddinggemma-300m";
const TOPICS = 64;
const CENTROIDS = 4096;
const GENERATOR_VERSION = 1;

/** A uint32 generator (mulberry32) seeded from two integers. */
function stream(seed: number, index: number): () => number {
  let a = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^
    Math.imul(index, 0xc2b2ae35);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** The seeded vector space: its normal samples, common direction and centroids. */
export class World {
  normals = new Float32Array(65536);
  centroids: Float32Array[] = [];
  constructor(readonly seed: number) {
    const next = stream(seed, -1);
    for (let i = 0; i < 65536; i++) {
      const u = (next() + 1) / 4294967297;
      const v = next() / 4294967296;
      this.normals[i] = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    }
    const common = this.#noise(next, new Float32Array(DIM), 1);
    const topics = Array.from(
      { length: TOPICS },
      () => this.#noise(next, new Float32Array(DIM), 1),
    );
    for (let s = 0; s < CENTROIDS; s++) {
      const c = this.#noise(next, new Float32Array(DIM), 0.6);
      const topic = topics[s % TOPICS]!;
      for (let d = 0; d < DIM; d++) c[d]! += 0.5 * common[d]! + 0.6 * topic[d]!;
      this.centroids.push(normalise(c));
    }
  }

  /** Adds noise of about `size` in length. */
  #noise(next: () => number, out: Float32Array, size: number): Float32Array {
    const scale = size / Math.sqrt(DIM);
    for (let d = 0; d < DIM; d += 2) {
      const x = next();
      out[d]! += this.normals[x & 0xffff]! * scale;
      out[d + 1]! += this.normals[x >>> 16]! * scale;
    }
    return out;
  }

  /** Stored vector `k`. */
  vector(k: number, out = new Float32Array(DIM)): Float32Array {
    out.fill(0);
    const next = stream(this.seed, k);
    const parts = 1 + (next() % 3);
    const first = next() % CENTROIDS;
    for (let p = 0; p < parts; p++) {
      const near = (first + TOPICS * (next() % 64)) % CENTROIDS;
      const s = p === 0 ? first : next() & 1 ? near : next() % CENTROIDS;
      const weight = p === 0 ? 1 : next() / 4294967296;
      const c = this.centroids[s]!;
      for (let d = 0; d < DIM; d++) out[d]! += weight * c[d]!;
    }
    return normalise(this.#noise(next, out, 0.9));
  }

  /** Query `j` of a set of `n` stored vectors: one of them moved by noise. */
  query(j: number, n: number): Float32Array {
    const next = stream(this.seed + 1, j);
    return normalise(this.#noise(next, this.vector(next() % n), 1));
  }
}

function normalise(v: Float32Array): Float32Array {
  let sum = 0;
  for (let d = 0; d < v.length; d++) sum += v[d]! * v[d]!;
  const scale = 1 / Math.sqrt(sum);
  for (let d = 0; d < v.length; d++) v[d]! *= scale;
  return v;
}

/** The turn of stored vector `k`: every 101st turn is left without one. */
export const turnOf = (k: number): number => k + Math.floor(k / 100) + 1;
const convOf = (turn: number): number => Math.floor((turn - 1) / 12) + 1;

/** The cached file of `n` vectors, generated when absent. */
export function vectorFile(world: World, n: number, dir: string): string {
  Deno.mkdirSync(dir, { recursive: true });
  const path = `${dir}/vectors-v${GENERATOR_VERSION}-seed${world.seed}-${n}.db`;
  const started = performance.now();
  const cached = cachedFile(path, (partial) => {
    const db = new DatabaseSync(partial);
    db.exec(`PRAGMA journal_mode = WAL;
      CREATE TABLE conversations(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT);
      CREATE TABLE turns(id INTEGER PRIMARY KEY,
        conv INTEGER REFERENCES conversations ON DELETE CASCADE, user TEXT);
      CREATE TABLE deleted_conversations(
        id INTEGER PRIMARY KEY REFERENCES conversations ON DELETE CASCADE);
      CREATE TABLE vectors(turn INTEGER PRIMARY KEY REFERENCES turns ON DELETE CASCADE,
        model TEXT NOT NULL, dim INTEGER NOT NULL, data BLOB NOT NULL);`);
    const conv = db.prepare(
      "INSERT OR IGNORE INTO conversations(id) VALUES (?)",
    );
    const turn = db.prepare("INSERT INTO turns(id, conv) VALUES (?, ?)");
    const vector = db.prepare(
      "INSERT INTO vectors(turn, model, dim, data) VALUES (?, ?, ?, ?)",
    );
    const out = new Float32Array(DIM);
    db.exec("BEGIN");
    for (let k = 0; k < n; k++) {
      const t = turnOf(k);
      if (k > 0 && k % 100 === 0) {
        conv.run(convOf(t - 1));
        turn.run(t - 1, convOf(t - 1));
      }
      conv.run(convOf(t));
      turn.run(t, convOf(t));
      vector.run(t, MODEL, DIM, encodeVector(world.vector(k, out)));
      if (k % 50_000 === 49_999) {
        db.exec("COMMIT; BEGIN");
        progress(`  generated ${count(k + 1)} vectors`);
      }
    }
    db.exec("COMMIT; PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
  });
  if (cached) {
    progress(`  from the cache: ${path}`);
    return path;
  }
  progress(
    `  generated in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  return path;
}

/** The exact top 10 of each query over the generated float vectors. */
export function exactTop(
  world: World,
  n: number,
  queries: Float32Array[],
): number[][] {
  const tops = queries.map(() => ({
    turns: [] as number[],
    scores: [] as number[],
  }));
  const v = new Float32Array(DIM);
  for (let k = 0; k < n; k++) {
    world.vector(k, v);
    for (let j = 0; j < queries.length; j++) {
      const q = queries[j]!;
      let dot = 0;
      for (let d = 0; d < DIM; d++) dot += q[d]! * v[d]!;
      const top = tops[j]!;
      if (top.scores.length === 10 && dot <= top.scores[9]!) continue;
      let at = top.scores.length;
      while (at > 0 && top.scores[at - 1]! < dot) at--;
      top.scores.splice(at, 0, dot);
      top.turns.splice(at, 0, turnOf(k));
      top.scores.length = Math.min(10, top.scores.length);
      top.turns.length = top.scores.length;
    }
  }
  return tops.map((top) => top.turns);
}

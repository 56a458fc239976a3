/**
 * Search by meaning over the `vectors` table; docs/search.md has the design,
 * why, and the measurements. Memory holds each vector's sign bits, turn and
 * conversation; a search ranks all by Hamming distance, the nearest
 * `candidates` by the query against their bits, and the best `rescore` by
 * exact cosine over their rows read again from SQLite, so a row deleted or
 * replaced since memory learnt of it is never answered. Each call catches
 * up first: after a commit (`PRAGMA data_version`), the rows above the
 * highest turn known, and at most every `sweepMs` a sweep of the whole
 * table for rows written below it or deleted.
 */
import type { DatabaseSync } from "node:sqlite";

export { decodeVector, encodeVector } from "./vector_codec.ts";

/** One answer: a turn, its conversation, and the cosine similarity to the query. */
export interface VectorHit {
  turn: number;
  conv: number;
  score: number;
}

/** Tuning (plain numbers: the search worker receives them as data). */
export interface VectorOptions {
  /** Vectors the bit prefilter passes on; default 4096. */
  candidates?: number;
  /** Vectors read from SQLite and ranked exactly; default 400, and at least 4 × the limit asked. */
  rescore?: number;
  /** Least milliseconds between sweeps; default 20 × the last one's duration; Infinity: at refresh() only. */
  sweepMs?: number;
}

/** The index over one connection; each call first catches up with the table. */
export interface VectorSearch {
  /** The best turns by cosine, best first, among vectors of `model`; `exclude` leaves out one conversation. */
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
  /** Bytes of the arrays the index holds. */
  bytes(): number;
}

/**
 * Prepares the index on one connection, reading every vector once. The
 * search worker runs this function from its source text: the body uses only
 * its parameters and globals.
 */
export function prepareVectors(
  db: DatabaseSync,
  options: VectorOptions = {},
): VectorSearch {
  const candidates = options.candidates ?? 4096;
  const rescore = options.rescore ?? 400;
  const sweepMs = options.sweepMs ?? -1;
  if (![candidates, rescore].every((n) => Number.isSafeInteger(n) && n > 0)) {
    throw new RangeError(
      `Vector search candidates ${candidates} and rescore ${rescore} must be positive integers.`,
    );
  }
  // Blocks of 2^SHIFT slots, never moved or freed while in use: memory that
  // grows by copying leaves the old copy to the allocator (docs/search.md).
  const SHIFT = 12;
  const BLOCK = 1 << SHIFT;
  interface Block {
    size: number;
    codes: Uint32Array;
    turns: Uint32Array;
    convs: Uint32Array;
    dist: Uint16Array;
  }
  interface Group {
    id: number;
    model: string;
    dim: number;
    words: number;
    size: number;
    blocks: Block[];
  }
  const groups: Group[] = [];
  const byModel = new Map<string, Group[]>();
  // Turn -> id of the group holding its vector (0: none) in pages of 2^16
  // turns; bit 15 marks a turn the sweep saw.
  const pages: Uint16Array[] = [];
  const filed = (t: number) => (pages[t >>> 16]?.[t & 0xffff] ?? 0) & 0x7fff;
  const file = (t: number, id: number) =>
    (pages[t >>> 16] ??= new Uint16Array(65536))[t & 0xffff] = id;
  // Conversation -> 1 while in deleted_conversations.
  let blocked = new Uint8Array(0);
  let blockedCount = 0;
  let watermark = 0;
  let version = -1;
  let sweepPending = false;
  let lastSweep = Infinity;
  let sweepCost = 0;
  let stale = false;

  const versionOf = db.prepare("PRAGMA data_version");
  const deletedIds = db.prepare(
    "SELECT group_concat(id) AS ids FROM deleted_conversations",
  );
  // A chunk's rows of each group end to end in hex: one crossing into
  // JavaScript per chunk is faster than one per row, and a string of 100 kB
  // is young garbage the next scavenge takes, where blobs left the process
  // 15-40 MB larger (docs/search.md). The aggregates of a group step through
  // its rows in one order.
  const chunked = (where: string) =>
    db.prepare(
      `SELECT model, dim, fits, max(turn) AS top, group_concat(turn) AS turns,
         group_concat(conv) AS convs, group_concat(hex(data), '') AS data
       FROM (SELECT v.turn AS turn, v.model AS model, v.dim AS dim,
               v.data AS data, t.conv AS conv,
               typeof(v.data) = 'blob' AND v.dim > 0 AND t.conv IS NOT NULL
                 AND length(v.data) = v.dim + 4 AS fits
             FROM vectors v LEFT JOIN turns t ON t.id = v.turn
             WHERE ${where} ORDER BY v.turn LIMIT 64)
       GROUP BY model, dim, fits`,
    );
  const above = chunked("v.turn > CAST(? AS INTEGER)");
  const listed = chunked("v.turn IN (SELECT value FROM json_each(?))");
  const find = (model: string, dim: number) =>
    byModel.get(model)?.find((g) => g.dim === dim);
  db.function("desktop_assistant_vector_known", (turn, model, dim) => {
    const t = Number(turn);
    const page = pages[t >>> 16];
    if (page !== undefined) page[t & 0xffff]! |= 0x8000;
    return filed(t) === (find(String(model), Number(dim))?.id ?? -1) ? 1 : 0;
  });
  const unknown = db.prepare(
    `SELECT group_concat(turn) AS turns FROM vectors
     WHERE NOT desktop_assistant_vector_known(turn, model, dim)`,
  );
  const exact = db.prepare(
    `SELECT v.turn AS turn, v.model AS model, v.dim AS dim, v.data AS data,
       t.conv AS conv
     FROM vectors v LEFT JOIN turns t ON t.id = v.turn
     WHERE v.turn IN (SELECT value FROM json_each(?))`,
  );
  const numbers = (list: unknown) =>
    typeof list === "string" && list !== "" ? list.split(",").map(Number) : [];
  const isBlocked = (conv: number) => blockedCount > 0 && blocked[conv] === 1;

  const groupFor = (model: string, dim: number): Group => {
    const known = find(model, dim);
    if (known !== undefined) return known;
    if (groups.length === 0x7fff) {
      throw new RangeError("More than 32767 kinds of vectors are stored.");
    }
    const group: Group = {
      id: groups.length + 1,
      model,
      dim,
      words: Math.ceil(dim / 32),
      size: 0,
      blocks: [],
    };
    groups.push(group);
    byModel.set(model, [...(byModel.get(model) ?? []), group]);
    return group;
  };

  /** Files one chunk of a group's rows; `hex` holds their blobs end to end in hex. */
  const ingest = (g: Group, turns: number[], convs: number[], hex: string) => {
    for (let i = 0; i < turns.length; i++) {
      let block = g.blocks[g.blocks.length - 1];
      if (block === undefined || block.size === BLOCK) {
        block = {
          size: 0,
          codes: new Uint32Array(BLOCK * g.words),
          turns: new Uint32Array(BLOCK),
          convs: new Uint32Array(BLOCK),
          dist: new Uint16Array(BLOCK),
        };
        g.blocks.push(block);
      }
      const at = block.size++;
      g.size++;
      const turn = turns[i]!;
      // Filed before in another group: another model's vector replaced it.
      if (filed(turn) !== 0) stale = true;
      file(turn, g.id);
      block.turns[at] = turn;
      block.convs[at] = convs[i]!;
      // A byte's sign is its first hex digit: 0-7 is zero or more.
      const from = 2 * (i * (g.dim + 4) + 4);
      for (let w = 0; w < g.words; w++) {
        let bits = 0;
        for (let k = 0; k < 32 && w * 32 + k < g.dim; k++) {
          if (hex.charCodeAt(from + 2 * (w * 32 + k)) < 56) bits |= 1 << k;
        }
        block.codes[at * g.words + w] = bits;
      }
    }
  };

  /** Reads a statement's chunks; `above` again from each chunk's top turn until none is left. */
  const read = (statement: typeof above, parameter: number | string) => {
    for (let rows = statement.all(parameter); rows.length > 0;) {
      let top = 0;
      for (const row of rows) {
        top = Math.max(top, Number(row.top));
        if (Number(row.fits) !== 1) continue;
        const g = groupFor(String(row.model), Number(row.dim));
        ingest(g, numbers(row.turns), numbers(row.convs), String(row.data));
      }
      watermark = Math.max(watermark, top);
      if (statement !== above) return;
      rows = statement.all(top);
    }
  };

  /** Drops the slots whose turn is no longer filed in their group, packing the rest to the front. */
  const compact = () => {
    for (const g of groups) {
      let kept = 0;
      for (const from of g.blocks) {
        for (let j = 0; j < from.size; j++) {
          if (filed(from.turns[j]!) !== g.id) continue;
          const to = g.blocks[kept >>> SHIFT]!;
          const at = kept++ & (BLOCK - 1);
          to.codes.set(
            from.codes.subarray(j * g.words, (j + 1) * g.words),
            at * g.words,
          );
          to.turns[at] = from.turns[j]!;
          to.convs[at] = from.convs[j]!;
        }
      }
      for (const [i, b] of g.blocks.entries()) {
        b.size = Math.max(0, Math.min(BLOCK, kept - i * BLOCK));
      }
      g.blocks = g.blocks.filter((b) => b.size > 0);
      g.size = kept;
    }
    stale = false;
  };

  const sweep = () => {
    const started = performance.now();
    for (const page of pages) {
      for (let i = 0; page !== undefined && i < page.length; i++) {
        page[i]! &= 0x7fff;
      }
    }
    const found = numbers(unknown.get()?.turns);
    for (const g of groups) {
      for (const b of g.blocks) {
        for (let j = 0; j < b.size; j++) {
          const t = b.turns[j]!;
          if (pages[t >>> 16]![t & 0xffff] === g.id) {
            file(t, 0);
            stale = true;
          }
        }
      }
    }
    if (stale) compact();
    for (let i = 0; i < found.length; i += 128) {
      read(listed, JSON.stringify(found.slice(i, i + 128)));
    }
    if (stale) compact();
    sweepPending = false;
    lastSweep = performance.now();
    sweepCost = lastSweep - started;
  };

  const look = (force: boolean) => {
    if (stale) compact();
    const now = Number(versionOf.get()?.data_version);
    if (now !== version) {
      version = now;
      const ids = numbers(deletedIds.get()?.ids);
      blocked = new Uint8Array(ids.reduce((a, b) => Math.max(a, b), 0) + 1);
      for (const id of ids) blocked[id] = 1;
      blockedCount = ids.length;
      read(above, watermark);
      sweepPending = true;
    }
    const gap = sweepMs >= 0 ? sweepMs : 20 * sweepCost;
    if (sweepPending && (force || performance.now() - lastSweep >= gap)) {
      sweep();
    }
    if (stale) compact();
  };

  const search = (
    query: Float32Array,
    model: string,
    limit: number,
    exclude?: number,
  ): VectorHit[] => {
    if (!(query instanceof Float32Array)) {
      throw new TypeError("A query vector must be a Float32Array.");
    }
    look(false);
    const mine = (byModel.get(model) ?? []).filter((m) => m.size > 0);
    const g = mine.find((m) => m.dim === query.length);
    if (g === undefined && mine.length > 0) {
      throw new TypeError(
        `The query vector has ${query.length} dimensions but the vectors of model ${
          JSON.stringify(model)
        } have ${mine.map((m) => m.dim).join(" or ")}.`,
      );
    }
    let norm = 0;
    for (let d = 0; d < query.length; d++) {
      if (!Number.isFinite(query[d])) {
        throw new TypeError(
          `The query vector's component ${d} is ${query[d]}.`,
        );
      }
      norm += query[d]! * query[d]!;
    }
    const wanted = Math.floor(limit);
    if (g === undefined || norm === 0 || !(wanted >= 1)) return [];
    norm = Math.sqrt(norm);
    const keep = Math.min(g.size, Math.max(rescore, 4 * wanted));
    const pool = Math.min(g.size, Math.max(candidates, keep));
    const skip = exclude ?? -1;
    const W = g.words;

    // Hamming distances, a histogram of them, and the nearest `pool`.
    const bits = new Uint32Array(W);
    for (let d = 0; d < g.dim; d++) {
      if (query[d]! >= 0) bits[d >>> 5]! |= 1 << (d & 31);
    }
    const histogram = new Uint32Array(g.dim + 2);
    const none = g.dim + 1;
    for (const { size, codes, convs, dist } of g.blocks) {
      for (let j = 0, o = 0; j < size; j++, o += W) {
        if (convs[j] === skip || isBlocked(convs[j]!)) {
          histogram[dist[j] = none]!++;
          continue;
        }
        let total = 0;
        for (let w = 0; w < W;) {
          // A byte of nibble sums gains at most 8 a word: 31 words fit.
          let bytes = 0;
          for (const end = Math.min(W, w + 31); w < end; w++) {
            let x = codes[o + w]! ^ bits[w]!;
            x -= (x >>> 1) & 0x55555555;
            x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
            bytes += (x + (x >>> 4)) & 0x0f0f0f0f;
          }
          bytes = (bytes & 0x00ff00ff) + ((bytes >>> 8) & 0x00ff00ff);
          total += (bytes & 0xffff) + (bytes >>> 16);
        }
        histogram[dist[j] = total]!++;
      }
    }
    let cut = 0;
    for (let sum = 0; cut < none && sum + histogram[cut]! < pool; cut++) {
      sum += histogram[cut]!;
    }
    const chosen: number[] = [];
    for (const below of [true, false]) {
      g.blocks.forEach(({ size, dist }, b) => {
        for (let j = 0; j < size && chosen.length < pool; j++) {
          if (below ? dist[j]! < cut : dist[j] === cut && cut < none) {
            chosen.push(b * BLOCK + j);
          }
        }
      });
    }

    // The query's components summed over each byte of bits, per byte value.
    const table = new Float32Array(W * 4 * 256);
    for (let b = 0; b < W * 4; b++) {
      const at = (k: number) => b * 8 + k < g.dim ? query[b * 8 + k]! : 0;
      for (let k = 0; k < 8; k++) table[b * 256]! -= at(k);
      for (let v = 1; v < 256; v++) {
        table[b * 256 + v] = table[b * 256 + (v & (v - 1))]! +
          2 * at(31 - Math.clz32(v & -v));
      }
    }
    const rough = chosen.map((slot) => {
      const { codes } = g.blocks[slot >>> SHIFT]!;
      const o = (slot & (BLOCK - 1)) * W;
      let s = 0;
      for (let w = 0, t = 0; w < W; w++, t += 1024) {
        const x = codes[o + w]!;
        s += table[t + (x & 255)]! + table[t + 256 + ((x >>> 8) & 255)]! +
          table[t + 512 + ((x >>> 16) & 255)]! + table[t + 768 + (x >>> 24)]!;
      }
      return s;
    });
    const asked = chosen.map((_, i) => i)
      .sort((a, b) => rough[b]! - rough[a]!)
      .slice(0, keep)
      .map((i) =>
        g.blocks[chosen[i]! >>> SHIFT]!.turns[chosen[i]! & (BLOCK - 1)]!
      );

    // Exact cosine over the stored bytes, each row checked against the table.
    const hits: VectorHit[] = [];
    const answered = new Set<number>();
    for (const row of exact.all(JSON.stringify(asked))) {
      const turn = Number(row.turn);
      const data = row.data;
      answered.add(turn);
      if (
        row.model !== g.model || Number(row.dim) !== g.dim ||
        !(data instanceof Uint8Array) || data.length !== g.dim + 4
      ) {
        // Replaced in place by another kind of vector: the sweep files it.
        answered.delete(turn);
        sweepPending = true;
        continue;
      }
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
    for (const turn of asked) {
      if (!answered.has(turn) && filed(turn) === g.id) {
        file(turn, 0);
        stale = true;
      }
    }
    return hits.sort((a, b) => b.score - a.score || b.turn - a.turn)
      .slice(0, wanted);
  };

  const count = (model: string): number => {
    look(false);
    let total = 0;
    for (const g of byModel.get(model) ?? []) {
      for (const b of g.blocks) {
        if (blockedCount === 0) total += b.size;
        else {for (let j = 0; j < b.size; j++) {
            total += isBlocked(b.convs[j]!) ? 0 : 1;
          }}
      }
    }
    return total;
  };

  const bytes = () =>
    pages.reduce((sum, p) => sum + p.byteLength, 0) + blocked.byteLength +
    groups.flatMap((g) => g.blocks).reduce(
      (sum, b) =>
        sum + b.codes.byteLength + b.turns.byteLength + b.convs.byteLength +
        b.dist.byteLength,
      0,
    );

  // The first look reads every row; no sweep is due until something changes.
  look(false);
  lastSweep = performance.now();
  return { search, count, refresh: () => look(true), bytes };
}

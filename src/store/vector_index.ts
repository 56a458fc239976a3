/**
 * Search by meaning over the `vectors` table: sign bits in memory, exact
 * cosine over the few best rows read again from SQLite. docs/search.md has
 * how it works, why, and the measurements that chose it.
 */
import type { DatabaseSync } from "node:sqlite";

/** One answer: a turn, its conversation, and the cosine similarity to the query. */
export type VectorHit = { turn: number; conv: number; score: number };

/** Tuning (plain numbers: the search worker receives them as data). */
export interface VectorOptions {
  /** Vectors the bit prefilter passes on; default 4096. */
  candidates?: number;
  /** Vectors read from SQLite and ranked exactly; default 400 or one in 1024 of the model's, whichever is more; at least 4 × the limit asked. */
  rescore?: number;
  /** Least milliseconds between sweeps; default 20 × the last one's duration; Infinity: at refresh() only. */
  sweepMs?: number;
  /** True: nothing is read at the start; `load` reads the table a slice at a time (a search meanwhile reads the rest first). */
  lazy?: boolean;
}

/** The index over one connection; each call first catches up with the table. */
export interface VectorSearch {
  /** The best turns by cosine, best first, among vectors of `model` of the query's dimension (none when there are none: vectors of another are made again); `exclude` leaves out one conversation. */
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
  /** Reads these turns' rows again now: written anew under an id the index may hold (an id used again, a turn replaced), each takes its new vector and conversation, or goes. */
  update(turns: readonly number[]): void;
  /** With `lazy`, reads more of the table for about `ms`; false once all of it is read. */
  load(ms: number): boolean;
  /** Bytes of the arrays the index holds. */
  bytes(): number;
}

/** Prepares the index on one connection, reading every vector once (at once, or with `lazy` by `load`); the search worker runs it from its source text, so its body uses only its parameters and globals. */
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
  // Blocks of 2^SHIFT slots, each allocated once: an array grown by copying
  // leaves its old copy to collect, up to 1.5 times the index while loading.
  const SHIFT = 12;
  const BLOCK = 1 << SHIFT;
  const CHUNK = 64;
  // A slot is its turn, its conversation and `words` words of sign bits.
  type Block = { size: number; slots: Uint32Array; dist: Uint16Array };
  type Group = { id: number; model: string; dim: number; words: number };
  const blocksOf = new Map<Group, Block[]>();
  const sizeOf = (g: Group) => blocksOf.get(g)!.reduce((n, b) => n + b.size, 0);
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
  let blockedCount = 0, watermark = 0, version = -1, sweepCost = 0;
  // A sweep is due (after a change), slots must go (`compact`).
  let sweepPending = false, stale = false, swept = Infinity;
  // The first reading is under way (`lazy`): its first data_version.
  let loading = options.lazy === true, loadedFrom = -1;

  const versionOf = db.prepare("PRAGMA data_version");
  const deletedIds = db.prepare(
    "SELECT group_concat(id) AS ids FROM deleted_conversations",
  );
  // A chunk's rows of a group end to end (the aggregates step through them
  // in one order), in hex: young garbage, where blobs left the process 11-30
  // MB larger (docs/search.md); and one crossing per chunk, not per row.
  const chunked = (where: string) =>
    db.prepare(
      `SELECT model, dim, fits, max(turn) AS top, group_concat(turn) AS turns,
         group_concat(conv) AS convs, group_concat(hex(data), '') AS data
       FROM (SELECT v.turn AS turn, v.model AS model, v.dim AS dim,
               v.data AS data, t.conv AS conv,
               typeof(v.data) = 'blob' AND v.dim > 0 AND t.conv IS NOT NULL
                 AND length(v.data) = v.dim + 4 AS fits
             FROM vectors v LEFT JOIN turns t ON t.id = v.turn
             WHERE ${where} ORDER BY v.turn LIMIT ${CHUNK})
       GROUP BY model, dim, fits`,
    );
  const above = chunked("v.turn > CAST(? AS INTEGER)");
  const listed = chunked("v.turn IN (SELECT value FROM json_each(?))");
  const find = (model: string, dim: number) =>
    byModel.get(model)?.find((g) => g.dim === dim);
  // A name of its own: a second index on this connection would replace it.
  const known = `desktop_assistant_vector_known_${Math.random() * 1e9 | 0}`;
  db.function(known, (turn, model, dim) => {
    const t = Number(turn);
    const page = pages[t >>> 16];
    if (page !== undefined) page[t & 0xffff]! |= 0x8000;
    return filed(t) === (find(String(model), Number(dim))?.id ?? -1) ? 1 : 0;
  });
  const unknown = db.prepare(
    `SELECT group_concat(turn) AS turns FROM vectors
     WHERE NOT ${known}(turn, model, dim)`,
  );
  const exact = db.prepare(
    `SELECT v.turn AS turn, v.model AS model, v.dim AS dim, v.data AS data,
       t.conv AS conv FROM vectors v LEFT JOIN turns t ON t.id = v.turn
     WHERE v.turn IN (SELECT value FROM json_each(?))`,
  );
  const numbers = (list: unknown) =>
    typeof list === "string" && list !== "" ? list.split(",").map(Number) : [];
  const isBlocked = (conv: number) => blockedCount > 0 && blocked[conv] === 1;

  const groupFor = (model: string, dim: number): Group => {
    const found = find(model, dim);
    if (found !== undefined) return found;
    if (groups.length === 0x7fff) {
      throw new RangeError("More than 32767 kinds of vectors are stored.");
    }
    const group = { id: groups.length + 1, model, dim, words: dim + 31 >> 5 };
    groups.push(group);
    blocksOf.set(group, []);
    byModel.set(model, [...(byModel.get(model) ?? []), group]);
    return group;
  };

  /** Files one chunk of a group's rows; `hex` holds their blobs end to end in hex. */
  const ingest = (g: Group, turns: number[], convs: number[], hex: string) => {
    const blocks = blocksOf.get(g)!;
    const stride = g.words + 2;
    for (let i = 0; i < turns.length; i++) {
      let block = blocks[blocks.length - 1];
      if (block === undefined || block.size === BLOCK) {
        const slots = new Uint32Array(BLOCK * stride);
        blocks.push(block = { size: 0, slots, dist: new Uint16Array(BLOCK) });
      }
      const o = block.size++ * stride;
      const turn = turns[i]!;
      // Filed before in another group: another model's vector replaced it.
      if (filed(turn) !== 0) stale = true;
      file(turn, g.id);
      block.slots[o] = turn;
      block.slots[o + 1] = convs[i]!;
      // A byte's sign is its first hex digit: 0-7 is zero or more.
      const from = 2 * (i * (g.dim + 4) + 4);
      for (let w = 0; w < g.words; w++) {
        let bits = 0;
        for (let k = 0; k < 32 && w * 32 + k < g.dim; k++) {
          if (hex.charCodeAt(from + 2 * (w * 32 + k)) < 56) bits |= 1 << k;
        }
        block.slots[o + 2 + w] = bits;
      }
    }
  };

  /** Reads a statement's chunks; `above` again from each chunk's top turn until none is left (true) or `until` passed (false). */
  const read = (
    statement: typeof above,
    parameter: number | string,
    until = Infinity,
  ): boolean => {
    for (let rows = statement.all(parameter); rows.length > 0;) {
      let top = 0;
      for (const row of rows) {
        top = Math.max(top, Number(row.top));
        if (Number(row.fits) !== 1) continue;
        const g = groupFor(String(row.model), Number(row.dim));
        ingest(g, numbers(row.turns), numbers(row.convs), String(row.data));
      }
      watermark = Math.max(watermark, top);
      if (statement !== above) return true;
      if (performance.now() >= until) return false;
      rows = statement.all(top);
    }
    return true;
  };

  const readBlocked = () => {
    const ids = numbers(deletedIds.get()?.ids);
    blocked = new Uint8Array(ids.reduce((a, b) => Math.max(a, b), 0) + 1);
    for (const id of ids) blocked[id] = 1;
    blockedCount = ids.length;
  };

  /** Drops the slots whose turn is no longer filed in their group (or, in a sweep, was not seen), packing the rest to the front. */
  const compact = (sweeping = false) => {
    for (const g of groups) {
      const blocks = blocksOf.get(g)!;
      const stride = g.words + 2;
      let kept = 0;
      for (const { size, slots } of blocks) {
        for (let o = 0; o < size * stride; o += stride) {
          const t = slots[o]!;
          if (filed(t) !== g.id) continue;
          if (sweeping && pages[t >>> 16]![t & 0xffff]! < 0x8000) {
            file(t, 0);
            continue;
          }
          const at = (kept & (BLOCK - 1)) * stride;
          const to = blocks[kept++ >>> SHIFT]!.slots;
          to.set(slots.subarray(o, o + stride), at);
        }
      }
      for (const [i, b] of blocks.entries()) {
        b.size = Math.max(0, Math.min(BLOCK, kept - i * BLOCK));
      }
      blocksOf.set(g, blocks.filter((b) => b.size > 0));
    }
    stale = false;
  };

  const sweep = () => {
    const started = performance.now();
    for (const page of pages) page?.set(page.map((v) => v & 0x7fff));
    const found = numbers(unknown.get()?.turns);
    compact(true);
    for (let i = 0; i < found.length; i += CHUNK) {
      read(listed, JSON.stringify(found.slice(i, i + CHUNK)));
    }
    if (stale) compact();
    sweepPending = false;
    swept = performance.now();
    sweepCost = swept - started;
  };

  /** One slice of the first reading (`lazy`), each in a snapshot of its own so the writer's checkpoints go on; false once it is through. */
  const load = (ms: number): boolean => {
    if (!loading) return false;
    const until = performance.now() + ms;
    db.exec("SAVEPOINT desktop_assistant_vectors");
    try {
      const now = Number(versionOf.get()?.data_version);
      if (loadedFrom === -1) loadedFrom = now;
      if (read(above, watermark, until)) {
        loading = false;
        version = now;
        readBlocked();
        // A row changed below the watermark meanwhile is the sweep's.
        sweepPending = now !== loadedFrom;
        swept = performance.now();
      }
    } finally {
      db.exec("RELEASE desktop_assistant_vectors");
    }
    if (stale) compact();
    return loading;
  };

  const look = (force: boolean) => {
    while (load(Infinity));
    if (stale) compact();
    // One snapshot for the version and every read that follows it.
    db.exec("SAVEPOINT desktop_assistant_vectors");
    try {
      const now = Number(versionOf.get()?.data_version);
      if (now !== version) {
        version = now;
        readBlocked();
        read(above, watermark);
        sweepPending = true;
      }
      const gap = sweepMs >= 0 ? sweepMs : 20 * sweepCost;
      if (sweepPending && (force || performance.now() - swept >= gap)) sweep();
    } finally {
      db.exec("RELEASE desktop_assistant_vectors");
    }
    if (stale) compact();
  };

  const search: VectorSearch["search"] = (query, model, limit, exclude) => {
    look(false);
    // Vectors of another dimension are the old ones of a model whose name
    // stayed: the indexer makes them again, and none is an answer.
    const g = find(model, query.length);
    const norm = Math.hypot(...query);
    if (!Number.isFinite(norm)) {
      throw new TypeError("The query vector has a component NaN or infinite.");
    }
    const wanted = Math.floor(limit);
    if (g === undefined || sizeOf(g) === 0 || norm === 0 || !(wanted >= 1)) {
      return [];
    }
    // Recall at a million vectors is bound by how many are rescored.
    const least = options.rescore ?? Math.max(rescore, sizeOf(g) >> 10);
    const keep = Math.min(sizeOf(g), Math.max(least, 4 * wanted));
    const pool = Math.min(sizeOf(g), Math.max(candidates, keep));
    const skip = exclude ?? -1;
    const W = g.words;
    const stride = W + 2;
    const blocks = blocksOf.get(g)!;

    // Hamming distances, a histogram of them, and the nearest `pool`.
    const bits = new Uint32Array(W);
    for (let d = 0; d < g.dim; d++) {
      if (query[d]! >= 0) bits[d >>> 5]! |= 1 << (d & 31);
    }
    const histogram = new Uint32Array(g.dim + 2);
    const none = g.dim + 1;
    for (const { size, slots, dist } of blocks) {
      for (let j = 0, o = 2; j < size; j++, o += stride) {
        if (slots[o - 1] === skip || isBlocked(slots[o - 1]!)) {
          histogram[dist[j] = none]!++;
          continue;
        }
        let total = 0;
        for (let w = 0; w < W;) {
          // A byte of nibble sums gains at most 8 a word: 31 words fit.
          let bytes = 0;
          for (const end = Math.min(W, w + 31); w < end; w++) {
            let x = slots[o + w]! ^ bits[w]!;
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
      blocks.forEach(({ size, dist }, b) => {
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
    const slotOf = (at: number) =>
      [blocks[at >>> SHIFT]!.slots, (at & (BLOCK - 1)) * stride] as const;
    const rough = chosen.map((at) => {
      const [slots, o] = slotOf(at);
      let s = 0;
      for (let w = 0, t = 0; w < W; w++, t += 1024) {
        const x = slots[o + 2 + w]!;
        s += table[t + (x & 255)]! + table[t + 256 + ((x >>> 8) & 255)]! +
          table[t + 512 + ((x >>> 16) & 255)]! + table[t + 768 + (x >>> 24)]!;
      }
      return s;
    });
    const asked = chosen.map((_, i) => i)
      .sort((a, b) => rough[b]! - rough[a]!).slice(0, keep)
      .map((i) => slotOf(chosen[i]!)).map(([slots, o]) => slots[o]!);

    // Exact cosine over the stored bytes, each row checked against the table.
    const hits: VectorHit[] = [];
    const answered = new Set<number>();
    for (const row of exact.all(JSON.stringify(asked))) {
      const turn = Number(row.turn);
      const data = row.data;
      if (
        row.model !== g.model || Number(row.dim) !== g.dim ||
        !(data instanceof Uint8Array) || data.length !== g.dim + 4
      ) {
        // Replaced in place by another kind of vector: the sweep files it.
        sweepPending = true;
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
    // Gone from the table: forgotten.
    const gone = asked.filter((t) => !answered.has(t) && filed(t) === g.id);
    for (const turn of gone) file(turn, 0);
    stale ||= gone.length > 0;
    return hits.sort((a, b) => b.score - a.score || b.turn - a.turn)
      .slice(0, wanted);
  };

  const count: VectorSearch["count"] = (model) => {
    look(false);
    let total = 0;
    for (const g of byModel.get(model) ?? []) {
      for (const { size, slots } of blocksOf.get(g)!) {
        for (let o = 1; o < size * (g.words + 2); o += g.words + 2) {
          if (!isBlocked(slots[o]!)) total++;
        }
      }
    }
    return total;
  };

  const update: VectorSearch["update"] = (turns) => {
    // Above the watermark: the next look reads them anyway.
    const held = turns.filter((t) => t <= watermark);
    if (held.length === 0) return;
    while (load(Infinity));
    db.exec("SAVEPOINT desktop_assistant_vectors");
    try {
      const rows = new Map<number, Record<string, unknown>>();
      for (const row of exact.all(JSON.stringify(held))) {
        rows.set(Number(row.turn), row);
      }
      const again: number[] = [];
      for (const t of held) {
        const row = rows.get(t);
        const data = row?.data;
        const g = row !== undefined && data instanceof Uint8Array &&
            row.conv !== null && Number(row.dim) > 0 &&
            data.length === Number(row.dim) + 4
          ? find(String(row.model), Number(row.dim))
          : undefined;
        const was = filed(t);
        if (g !== undefined && was === g.id) {
          // Its slot, found by a scan that only compares: taken over.
          const stride = g.words + 2;
          for (const { size, slots } of blocksOf.get(g)!) {
            let o = 0;
            while (o < size * stride && slots[o] !== t) o += stride;
            if (o === size * stride) continue;
            slots[o + 1] = Number(row!.conv);
            for (let w = 0; w < g.words; w++) {
              let bits = 0;
              for (let k = 0; k < 32 && w * 32 + k < g.dim; k++) {
                if ((data as Uint8Array)[4 + w * 32 + k]! < 128) bits |= 1 << k;
              }
              slots[o + 2 + w] = bits;
            }
            break;
          }
          continue;
        }
        if (was !== 0) {
          file(t, 0);
          stale = true;
        }
        if (row !== undefined) again.push(t);
      }
      if (stale) compact();
      for (let i = 0; i < again.length; i += CHUNK) {
        read(listed, JSON.stringify(again.slice(i, i + CHUNK)));
      }
    } finally {
      db.exec("RELEASE desktop_assistant_vectors");
    }
  };

  const bytes = () =>
    [...blocksOf.values()].flat().reduce(
      (sum, b) => sum + b.slots.byteLength + b.dist.byteLength,
      pages.filter(Boolean).length * 131072 + blocked.byteLength,
    );

  // The first look reads every row; no sweep is due until something changes.
  if (!loading) {
    look(false);
    sweepPending = false;
    swept = performance.now();
  }
  return { search, count, refresh: () => look(true), update, load, bytes };
}

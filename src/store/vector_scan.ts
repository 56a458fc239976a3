/**
 * The first two stages of a search by meaning (docs/search.md), over the
 * sign bits in memory: the Hamming distance to the query's bits picks the
 * nearest `pool` slots, and the query's own components against their bits
 * the best `keep`, whose rows vector_rescore.ts ranks exactly. The search
 * worker runs this from its source text, so its body uses only its
 * parameters and globals.
 */
import type { VectorBlock, VectorGroup } from "./vector_slots.ts";

/** The turns of the best `keep` slots of a group for `query`, of its nearest `pool`; `skip` (-1: none) and blocked conversations are left out. */
export function scanCandidates(
  query: Float32Array,
  g: VectorGroup,
  blocks: readonly VectorBlock[],
  shift: number,
  pool: number,
  keep: number,
  skip: number,
  isBlocked: (conv: number) => boolean,
): number[] {
  const SHIFT = shift;
  const BLOCK = 1 << SHIFT;
  const W = g.words;
  const stride = W + 2;

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
  return chosen.map((_, i) => i)
    .sort((a, b) => rough[b]! - rough[a]!).slice(0, keep)
    .map((i) => slotOf(chosen[i]!)).map(([slots, o]) => slots[o]!);
}

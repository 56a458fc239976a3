/**
 * The vector index's memory (docs/search.md): per model and dimension a
 * group of slots, each a turn, its conversation and one sign bit a
 * dimension, and for every turn the group that holds it. Reading the table
 * into it is vector_refresh.ts's. The search worker runs this from its
 * source text, so its body uses only its parameters and globals.
 */

/** Slots of one group, allocated once: the first `size` used, `words + 2` words each; `dist` is a scan's. */
export type VectorBlock = {
  size: number;
  slots: Uint32Array;
  dist: Uint16Array;
};

/** The vectors of one model and dimension; its turns are filed under `id`. */
export type VectorGroup = {
  id: number;
  model: string;
  dim: number;
  words: number;
};

/** The groups, their slots, and the group each turn is filed in. */
export interface VectorSlots {
  /** A block holds 2^shift slots. */
  readonly shift: number;
  /** Some slot's turn is filed elsewhere now, or nowhere: `compact` drops it. */
  stale: boolean;
  /** The group of a model and dimension, once a vector of them was read. */
  find(model: string, dim: number): VectorGroup | undefined;
  /** The group of a model and dimension, made when there is none yet. */
  groupFor(model: string, dim: number): VectorGroup;
  /** A model's groups, one a dimension. */
  groupsOf(model: string): readonly VectorGroup[];
  /** A group's blocks, in slot order. */
  blocksOf(group: VectorGroup): VectorBlock[];
  /** How many slots a group uses. */
  sizeOf(group: VectorGroup): number;
  /** The id of the group a turn is filed in; 0: none. */
  filed(turn: number): number;
  /** Files a turn in the group `id` (0: in none). */
  file(turn: number, id: number): void;
  /** Files one chunk of a group's rows; `hex` holds their blobs end to end in hex. */
  ingest(
    group: VectorGroup,
    turns: number[],
    convs: number[],
    hex: string,
  ): void;
  /** Writes a turn's slot in its group again from its blob, if the group holds one. */
  rewrite(
    group: VectorGroup,
    turn: number,
    conv: number,
    data: Uint8Array,
  ): void;
  /** Marks a turn the sweep saw; 1 when it is filed in the group of `model` and `dim`, else 0. */
  see(turn: number, model: string, dim: number): number;
  /** Clears the marks of the sweep before. */
  unsee(): void;
  /** Drops the slots whose turn is no longer filed in their group (or, in a sweep, was not seen), packing the rest to the front. */
  compact(sweeping?: boolean): void;
  /** Bytes of the arrays held. */
  bytes(): number;
}

/** Makes the empty memory of one index. */
export function prepareSlots(): VectorSlots {
  // Blocks of 2^SHIFT slots, each allocated once: an array grown by copying
  // leaves its old copy to collect, up to 1.5 times the index while loading.
  const SHIFT = 12;
  const BLOCK = 1 << SHIFT;
  type Block = VectorBlock;
  type Group = VectorGroup;
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
  let stale = false;
  const find = (model: string, dim: number) =>
    byModel.get(model)?.find((g) => g.dim === dim);

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

  const rewrite = (g: Group, t: number, conv: number, data: Uint8Array) => {
    // Its slot, found by a scan that only compares: taken over.
    const stride = g.words + 2;
    for (const { size, slots } of blocksOf.get(g)!) {
      let o = 0;
      while (o < size * stride && slots[o] !== t) o += stride;
      if (o === size * stride) continue;
      slots[o + 1] = conv;
      for (let w = 0; w < g.words; w++) {
        let bits = 0;
        for (let k = 0; k < 32 && w * 32 + k < g.dim; k++) {
          if (data[4 + w * 32 + k]! < 128) bits |= 1 << k;
        }
        slots[o + 2 + w] = bits;
      }
      break;
    }
  };

  const see = (t: number, model: string, dim: number) => {
    const page = pages[t >>> 16];
    if (page !== undefined) page[t & 0xffff]! |= 0x8000;
    return filed(t) === (find(model, dim)?.id ?? -1) ? 1 : 0;
  };

  const unsee = () => {
    for (const page of pages) page?.set(page.map((v) => v & 0x7fff));
  };

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

  const bytes = () =>
    [...blocksOf.values()].flat().reduce(
      (sum, b) => sum + b.slots.byteLength + b.dist.byteLength,
      pages.filter(Boolean).length * 131072,
    );

  return {
    shift: SHIFT,
    get stale() {
      return stale;
    },
    set stale(value: boolean) {
      stale = value;
    },
    find,
    groupFor,
    groupsOf: (model) => byModel.get(model) ?? [],
    blocksOf: (g) => blocksOf.get(g)!,
    sizeOf,
    filed,
    file,
    ingest,
    rewrite,
    see,
    unsee,
    compact,
    bytes,
  };
}

/**
 * A small GGUF reader: the header, the typed key/values and the tensor
 * table (names, shapes, types, offsets), enough to take a vocabulary out of
 * llama.cpp's `ggml-vocab-*.gguf` files and to read back what
 * `gguf_write.ts` wrote. Tensor data is located, never decoded.
 */

/** The value types of GGUF key/values, by their numbers in the format. */
export const GgufType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** A key/value's value as read: numbers (64-bit ones as bigint), booleans, strings, or arrays of them. */
export type GgufValue =
  | number
  | bigint
  | boolean
  | string
  | GgufValue[];

/** One tensor's entry in the table: `shape` innermost dimension first, as ggml counts. */
export interface GgufTensorInfo {
  name: string;
  shape: number[];
  /** ggml type: 0 is F32. */
  type: number;
  /** Where its data starts, from the start of the file. */
  offset: number;
}

/** A parsed GGUF file. */
export interface GgufFile {
  version: number;
  /** Key/values in file order; each keeps its declared type. */
  kv: Map<string, { type: number; value: GgufValue }>;
  tensors: GgufTensorInfo[];
  /** Start of the tensor data section. */
  dataOffset: number;
  alignment: number;
}

const MAGIC = 0x46554747; // "GGUF" read as a little-endian uint32

class Cursor {
  #at = 0;
  readonly #view: DataView;
  readonly #bytes: Uint8Array;
  readonly #decoder = new TextDecoder("utf-8", { fatal: true });

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get at(): number {
    return this.#at;
  }

  #take(size: number): number {
    const at = this.#at;
    if (at + size > this.#bytes.byteLength) {
      throw new RangeError(`GGUF ends early: ${size} bytes wanted at ${at}`);
    }
    this.#at += size;
    return at;
  }

  u32(): number {
    return this.#view.getUint32(this.#take(4), true);
  }

  u64(): number {
    const value = this.#view.getBigUint64(this.#take(8), true);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new RangeError(`GGUF count too large: ${value}`);
    }
    return Number(value);
  }

  string(): string {
    const length = this.u64();
    const at = this.#take(length);
    return this.#decoder.decode(this.#bytes.subarray(at, at + length));
  }

  scalar(type: number): GgufValue {
    const v = this.#view;
    switch (type) {
      case GgufType.UINT8:
        return v.getUint8(this.#take(1));
      case GgufType.INT8:
        return v.getInt8(this.#take(1));
      case GgufType.UINT16:
        return v.getUint16(this.#take(2), true);
      case GgufType.INT16:
        return v.getInt16(this.#take(2), true);
      case GgufType.UINT32:
        return v.getUint32(this.#take(4), true);
      case GgufType.INT32:
        return v.getInt32(this.#take(4), true);
      case GgufType.FLOAT32:
        return v.getFloat32(this.#take(4), true);
      case GgufType.BOOL:
        return v.getUint8(this.#take(1)) !== 0;
      case GgufType.STRING:
        return this.string();
      case GgufType.UINT64:
        return v.getBigUint64(this.#take(8), true);
      case GgufType.INT64:
        return v.getBigInt64(this.#take(8), true);
      case GgufType.FLOAT64:
        return v.getFloat64(this.#take(8), true);
      case GgufType.ARRAY: {
        const inner = this.u32();
        const count = this.u64();
        const items: GgufValue[] = new Array(count);
        for (let i = 0; i < count; i++) items[i] = this.scalar(inner);
        return items;
      }
      default:
        throw new TypeError(`unknown GGUF value type ${type} at ${this.#at}`);
    }
  }
}

/** Parses a GGUF file's bytes (version 2 or 3). */
export function parseGguf(bytes: Uint8Array): GgufFile {
  const cursor = new Cursor(bytes);
  if (cursor.u32() !== MAGIC) throw new TypeError("not a GGUF file");
  const version = cursor.u32();
  if (version < 2 || version > 3) {
    throw new TypeError(`GGUF version ${version} is not supported`);
  }
  const tensorCount = cursor.u64();
  const kvCount = cursor.u64();
  const kv = new Map<string, { type: number; value: GgufValue }>();
  for (let i = 0; i < kvCount; i++) {
    const key = cursor.string();
    const type = cursor.u32();
    kv.set(key, { type, value: cursor.scalar(type) });
  }
  const declared = kv.get("general.alignment")?.value;
  const alignment = typeof declared === "number" ? declared : 32;
  const infos: Omit<GgufTensorInfo, "offset">[] = [];
  const relative: number[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = cursor.string();
    const dims = cursor.u32();
    const shape: number[] = [];
    for (let d = 0; d < dims; d++) shape.push(cursor.u64());
    const type = cursor.u32();
    relative.push(cursor.u64());
    infos.push({ name, shape, type });
  }
  const dataOffset = Math.ceil(cursor.at / alignment) * alignment;
  const tensors = infos.map((info, i) => ({
    ...info,
    offset: dataOffset + relative[i]!,
  }));
  return { version, kv, tensors, dataOffset, alignment };
}

/** Reads and parses a GGUF file. */
export async function readGguf(path: string): Promise<GgufFile> {
  return parseGguf(await Deno.readFile(path));
}

/** A key's value, which must be an array of strings. */
export function stringArray(file: GgufFile, key: string): string[] {
  const value = file.kv.get(key)?.value;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
    throw new TypeError(`${key} is not an array of strings`);
  }
  return value as string[];
}

/** A key's value, which must be an array of numbers. */
export function numberArray(file: GgufFile, key: string): number[] {
  const value = file.kv.get(key)?.value;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "number")) {
    throw new TypeError(`${key} is not an array of numbers`);
  }
  return value as number[];
}

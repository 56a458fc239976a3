/**
 * A small GGUF writer (version 3): a header, typed key/values, a tensor
 * table, then F32 tensor data, each tensor aligned to `general.alignment`
 * (32 bytes) as llama.cpp's loader expects.
 */
import { GgufType } from "./gguf_read.ts";

/** A typed key/value as written. */
type Entry =
  | { type: typeof GgufType.STRING; value: string }
  | { type: typeof GgufType.UINT32; value: number }
  | { type: typeof GgufType.INT32; value: number }
  | { type: typeof GgufType.FLOAT32; value: number }
  | { type: typeof GgufType.BOOL; value: boolean }
  | { type: typeof GgufType.ARRAY; item: number; value: (string | number)[] };

/** A tensor as written: F32 values, `shape` innermost dimension first (ggml's `ne`). */
interface Tensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

const ALIGNMENT = 32;
const encoder = new TextEncoder();

/** Collects key/values and tensors, then lays them out as one GGUF file. */
export class GgufWriter {
  readonly #kv = new Map<string, Entry>();
  readonly #tensors: Tensor[] = [];

  /** Sets a string value. */
  string(key: string, value: string): this {
    this.#kv.set(key, { type: GgufType.STRING, value });
    return this;
  }

  /** Sets an unsigned 32-bit value. */
  u32(key: string, value: number): this {
    this.#kv.set(key, { type: GgufType.UINT32, value });
    return this;
  }

  /** Sets a signed 32-bit value. */
  i32(key: string, value: number): this {
    this.#kv.set(key, { type: GgufType.INT32, value });
    return this;
  }

  /** Sets a 32-bit float value. */
  f32(key: string, value: number): this {
    this.#kv.set(key, { type: GgufType.FLOAT32, value });
    return this;
  }

  /** Sets a boolean value. */
  bool(key: string, value: boolean): this {
    this.#kv.set(key, { type: GgufType.BOOL, value });
    return this;
  }

  /** Sets an array of strings. */
  strings(key: string, value: string[]): this {
    this.#kv.set(key, { type: GgufType.ARRAY, item: GgufType.STRING, value });
    return this;
  }

  /** Sets an array of signed 32-bit values. */
  i32s(key: string, value: number[]): this {
    this.#kv.set(key, { type: GgufType.ARRAY, item: GgufType.INT32, value });
    return this;
  }

  /** Adds an F32 tensor; `shape` innermost first, so a matrix of `rows` rows of `cols` is `[cols, rows]`. */
  tensor(name: string, shape: number[], data: Float32Array): this {
    const size = shape.reduce((a, b) => a * b, 1);
    if (size !== data.length) {
      throw new RangeError(
        `${name}: shape ${shape} holds ${size}, got ${data.length}`,
      );
    }
    this.#tensors.push({ name, shape, data });
    return this;
  }

  /** The whole file. */
  bytes(): Uint8Array {
    this.u32("general.alignment", ALIGNMENT);
    const head = new Bytes();
    head.u32(0x46554747); // "GGUF"
    head.u32(3);
    head.u64(this.#tensors.length);
    head.u64(this.#kv.size);
    for (const [key, entry] of this.#kv) {
      head.string(key);
      head.u32(entry.type);
      head.value(entry);
    }
    let offset = 0;
    const offsets: number[] = [];
    for (const tensor of this.#tensors) {
      head.string(tensor.name);
      head.u32(tensor.shape.length);
      for (const dim of tensor.shape) head.u64(dim);
      head.u32(0); // F32
      head.u64(offset);
      offsets.push(offset);
      offset = align(offset + tensor.data.byteLength);
    }
    const header = head.finish();
    const dataStart = align(header.byteLength);
    const out = new Uint8Array(dataStart + offset);
    out.set(header, 0);
    for (const [i, tensor] of this.#tensors.entries()) {
      const bytes = new Uint8Array(
        tensor.data.buffer,
        tensor.data.byteOffset,
        tensor.data.byteLength,
      );
      // Float32Array is host-endian; GGUF is little-endian, as every machine this runs on.
      out.set(bytes, dataStart + offsets[i]!);
    }
    return out;
  }

  /** Writes the file. */
  async write(path: string): Promise<void> {
    await Deno.writeFile(path, this.bytes());
  }
}

function align(offset: number): number {
  return Math.ceil(offset / ALIGNMENT) * ALIGNMENT;
}

/** A growing little-endian byte buffer. */
class Bytes {
  #buffer = new Uint8Array(1 << 16);
  #view = new DataView(this.#buffer.buffer);
  #length = 0;

  #room(size: number): number {
    if (this.#length + size > this.#buffer.byteLength) {
      let capacity = this.#buffer.byteLength * 2;
      while (capacity < this.#length + size) capacity *= 2;
      const grown = new Uint8Array(capacity);
      grown.set(this.#buffer.subarray(0, this.#length));
      this.#buffer = grown;
      this.#view = new DataView(grown.buffer);
    }
    const at = this.#length;
    this.#length += size;
    return at;
  }

  u32(value: number): void {
    const at = this.#room(4);
    this.#view.setUint32(at, value, true);
  }

  u64(value: number): void {
    const at = this.#room(8);
    this.#view.setBigUint64(at, BigInt(value), true);
  }

  string(value: string): void {
    const bytes = encoder.encode(value);
    this.u64(bytes.byteLength);
    // Make room first: growing replaces the buffer.
    const at = this.#room(bytes.byteLength);
    this.#buffer.set(bytes, at);
  }

  scalar(type: number, value: string | number | boolean): void {
    switch (type) {
      case GgufType.STRING:
        return this.string(String(value));
      case GgufType.UINT32:
        return this.u32(Number(value));
      case GgufType.INT32: {
        const at = this.#room(4);
        return this.#view.setInt32(at, Number(value), true);
      }
      case GgufType.FLOAT32: {
        const at = this.#room(4);
        return this.#view.setFloat32(at, Number(value), true);
      }
      case GgufType.BOOL: {
        const at = this.#room(1);
        return this.#view.setUint8(at, value ? 1 : 0);
      }
      default:
        throw new TypeError(`the writer has no value type ${type}`);
    }
  }

  value(entry: Entry): void {
    if (entry.type !== GgufType.ARRAY) {
      return this.scalar(entry.type, entry.value);
    }
    this.u32(entry.item);
    this.u64(entry.value.length);
    for (const item of entry.value) this.scalar(entry.item, item);
  }

  finish(): Uint8Array {
    return this.#buffer.slice(0, this.#length);
  }
}

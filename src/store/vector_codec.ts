/**
 * The stored form of a vector (the `data` blob of the `vectors` table): a
 * little-endian float32 scale, then one signed byte per dimension, so a
 * vector of `dim` dimensions takes `dim + 4` bytes. Component i decodes as
 * `byte[i] * scale`, where the scale is the largest magnitude over 127; each
 * component is off by at most half a step, `max|v| / 254`.
 *
 * Why int8 and not float16 or float32: the search ranks by cosine, which the
 * scale does not change, so it scores the bytes as they are; a quarter of
 * float32's size keeps a million turns' vectors under 800 MB in the history
 * file, and the recall it costs was measured as nil (docs/search.md). The
 * sign of each byte is the sign bit the in-memory prefilter keeps.
 */

/** Bytes before the components: the float32 scale. */
export const VECTOR_HEADER_BYTES = 4;

/** Encodes a vector as its blob; a TypeError for an empty vector or one with a non-finite component. */
export function encodeVector(vector: Float32Array): Uint8Array {
  if (vector.length === 0) {
    throw new TypeError("Cannot store a vector of 0 dimensions.");
  }
  let top = 0;
  for (let i = 0; i < vector.length; i++) {
    const value = vector[i]!;
    if (!Number.isFinite(value)) {
      throw new TypeError(
        `Cannot store a vector whose component ${i} is ${value}; the embedding server sent garbage.`,
      );
    }
    top = Math.max(top, Math.abs(value));
  }
  const blob = new Uint8Array(VECTOR_HEADER_BYTES + vector.length);
  const scale = Math.fround(top / 127);
  new DataView(blob.buffer).setFloat32(0, scale, true);
  if (scale === 0) return blob;
  const bytes = new Int8Array(blob.buffer, VECTOR_HEADER_BYTES);
  for (let i = 0; i < vector.length; i++) {
    // Dividing by the rounded scale can land a hair past ±127.
    bytes[i] = Math.max(-127, Math.min(127, Math.round(vector[i]! / scale)));
  }
  return blob;
}

/** Decodes a blob of `dim` dimensions; a TypeError when its length does not fit `dim`. */
export function decodeVector(blob: Uint8Array, dim: number): Float32Array {
  if (!Number.isSafeInteger(dim) || dim < 1) {
    throw new TypeError(`Vector dimension ${dim} is not a positive integer.`);
  }
  if (blob.length !== VECTOR_HEADER_BYTES + dim) {
    throw new TypeError(
      `A stored vector of ${dim} dimensions takes ${
        VECTOR_HEADER_BYTES + dim
      } bytes, not ${blob.length}.`,
    );
  }
  const scale = new DataView(blob.buffer, blob.byteOffset, blob.length)
    .getFloat32(0, true);
  const bytes = new Int8Array(
    blob.buffer,
    blob.byteOffset + VECTOR_HEADER_BYTES,
    dim,
  );
  const vector = new Float32Array(dim);
  for (let i = 0; i < dim; i++) vector[i] = bytes[i]! * scale;
  return vector;
}

/**
 * WAV files as recorders and synthesisers write them to a pipe: they cannot
 * seek back to fill in the sizes, so the header holds placeholders (0 or
 * about 2 GiB). A transcription server reads those sizes; this sets them to
 * what really arrived.
 */

/** The RIFF header's fixed part: "RIFF", size, "WAVE". */
const RIFF_HEADER_BYTES = 12;
/** A chunk's id and size. */
const CHUNK_HEADER_BYTES = 8;

function tag(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(...bytes.subarray(at, at + 4));
}

/** Whether the bytes start like a WAV file. */
export function isWav(bytes: Uint8Array): boolean {
  return bytes.length >= RIFF_HEADER_BYTES && tag(bytes, 0) === "RIFF" &&
    tag(bytes, 8) === "WAVE";
}

/** Where the samples are: the data chunk's offset and its real length; null when the file has no data chunk. */
export function wavData(
  bytes: Uint8Array,
): { offset: number; length: number } | null {
  if (!isWav(bytes)) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = RIFF_HEADER_BYTES;
  let blockAlign = 1;
  while (at + CHUNK_HEADER_BYTES <= bytes.length) {
    const id = tag(bytes, at);
    const size = view.getUint32(at + 4, true);
    const body = at + CHUNK_HEADER_BYTES;
    if (id === "data") {
      const available = bytes.length - body;
      // A recorder ended mid-sample leaves a partial frame: drop it.
      const whole = Math.min(size === 0 ? available : size, available);
      return { offset: body, length: whole - (whole % blockAlign) };
    }
    if (id === "fmt " && size >= 14 && body + 14 <= bytes.length) {
      blockAlign = Math.max(1, view.getUint16(body + 12, true));
    }
    at = body + size + (size % 2);
  }
  return null;
}

/**
 * The WAV with its RIFF and data sizes set to the bytes that arrived (a
 * copy, cut to whole frames); the input unchanged when it is no WAV.
 */
export function completeWav(bytes: Uint8Array): Uint8Array {
  const data = wavData(bytes);
  if (data === null) return bytes;
  const out = bytes.slice(0, data.offset + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(4, out.length - CHUNK_HEADER_BYTES, true);
  view.setUint32(data.offset - 4, data.length, true);
  return out;
}

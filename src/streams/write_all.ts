/** Writing a whole buffer to a Deno writer, whose `write` may take only part of it. */

/** Anything with Deno's `write` shape: a connection, `Deno.stdout`, a file. */
export interface Writer {
  write(bytes: Uint8Array): Promise<number>;
}

const encoder = new TextEncoder();

/** Writes every byte of `data` (a string as UTF-8), looping over partial writes. */
export async function writeAll(
  to: Writer,
  data: string | Uint8Array,
): Promise<void> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  let offset = 0;
  while (offset < bytes.length) {
    offset += await to.write(bytes.subarray(offset));
  }
}

/** Anything with Deno's `writeSync` shape: `Deno.stdout`, `Deno.stderr`. */
export interface SyncWriter {
  writeSync(bytes: Uint8Array): number;
}

/** Writes every byte of `data` (a string as UTF-8) at once, looping over partial writes. */
export function writeAllSync(to: SyncWriter, data: string | Uint8Array): void {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  let offset = 0;
  while (offset < bytes.length) {
    offset += to.writeSync(bytes.subarray(offset));
  }
}

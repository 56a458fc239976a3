/** Generated files kept between runs, made once and never seen half-written. */

/**
 * Makes the file at `path` when absent: `build` writes it at `path.partial`
 * (a stale one left by an interrupted run cleared first, its WAL and shared
 * memory with it), which is then renamed into place. Whether it was there.
 */
export function cachedFile(
  path: string,
  build: (partial: string) => void,
): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const partial = `${path}.partial`;
  for (const end of ["", "-wal", "-shm"]) {
    try {
      Deno.removeSync(partial + end);
    } catch {
      // Absent: nothing to clear.
    }
  }
  build(partial);
  Deno.renameSync(partial, path);
  return false;
}

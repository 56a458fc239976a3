/**
 * Chat's `/export N file`: where the file goes, writing it without ever
 * replacing one, and what to say when it cannot be written.
 */
import { isAbsolute, join } from "node:path";
import type { Renderer } from "./chat_render.ts";

/** Writes an exported conversation to a new file. */
export type WriteFile = (path: string, text: string) => Promise<void>;

/** Writes a new file; an existing one is never overwritten. */
export const writeNewFile: WriteFile = (path, text) =>
  Deno.writeTextFile(path, text, { createNew: true });

/** The file's path: a relative name goes in the export directory, else the working directory. */
export function exportPath(file: string, dir: string | null): string {
  return isAbsolute(file) ? file : join(dir ?? Deno.cwd(), file);
}

/** Why an export file could not be written, and what to do. */
export function writeProblem(path: string, error: unknown): string {
  if (error instanceof Deno.errors.AlreadyExists) {
    return `${path} already exists: give another file name`;
  }
  if (error instanceof Deno.errors.NotCapable) {
    return `chat may not write ${path}: start it with --export-dir DIR and a write grant for DIR (see the README), or run main.ts export N > file`;
  }
  return `cannot write ${path}: ${
    error instanceof Error ? error.message : String(error)
  }`;
}

/** An export of ours: shown as it is, or written to its file and then the line that says how that went. */
export function exported(
  renderer: Renderer,
  event: { id?: number; text: string },
  file: string | null,
  options: { dir: string | null; writeFile: WriteFile },
): string | Promise<string> {
  if (file === null) return renderer.block(event.text);
  const path = exportPath(file, options.dir);
  return options.writeFile(path, event.text).then(
    () => renderer.info(`wrote #${event.id} to ${path}`),
    (error) => renderer.error(writeProblem(path, error)),
  );
}

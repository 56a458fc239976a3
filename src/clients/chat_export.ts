/**
 * Chat's `/export N file` and `/memories export file`: where the file goes
 * (a name without a folder in chat's export folder, made on first use),
 * writing it without ever replacing one, and what to say when it cannot be
 * written.
 */
import { dirname, isAbsolute, join } from "node:path";
import type { Renderer } from "./chat_render.ts";

/** Writes an exported conversation to a new file. */
export type WriteFile = (path: string, text: string) => Promise<void>;

/** Writes a new file, making its folder when missing (the export folder on first use); an existing file is never overwritten. */
export const writeNewFile: WriteFile = async (path, text) => {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, text, { createNew: true });
};

/** The file's path: a relative name goes in the export directory, else it stays relative to the working directory. */
export function exportPath(file: string, dir: string | null): string {
  return isAbsolute(file) || dir === null ? file : join(dir, file);
}

/** Why an export file could not be written, and what to do; `id` names the conversation exported, null for the memories. */
export function writeProblem(
  path: string,
  error: unknown,
  dir: string | null,
  id: number | null,
): string {
  if (error instanceof Deno.errors.AlreadyExists) {
    return `${path} already exists: give another file name`;
  }
  // A conversation can also be printed by the export task, with no grant.
  const instead = id === null
    ? ""
    : `, or run deno task -q export ${id} > file`;
  if (error instanceof Deno.errors.NotCapable) {
    return dir === null
      ? `chat may not write ${path}: start it with deno task chat, which lets it write in its export folder${instead}`
      : `chat may not write ${path}: give a name without a folder to write in ${dir}${instead}`;
  }
  return `cannot write ${path}: ${
    error instanceof Error ? error.message : String(error)
  }`;
}

/** Where `/export N file` writes: the folder for a name without one, and how. */
export interface ExportPlace {
  dir: string | null;
  writeFile: WriteFile;
}

/** An export of ours (a conversation's, or the memories' without an id): shown as it is, or written to its file and then the line that says how that went. */
export function exported(
  renderer: Renderer,
  event: { id?: number; text: string },
  file: string | null,
  options: ExportPlace,
): string | Promise<string> {
  if (file === null) return renderer.block(event.text);
  const id = event.id ?? null;
  const { dir, writeFile } = options;
  const path = exportPath(file, dir);
  return writeFile(path, event.text).then(
    () =>
      renderer.info(
        `wrote ${id === null ? "the memories" : `#${id}`} to ${path}`,
      ),
    (error) => renderer.error(writeProblem(path, error, dir, id)),
  );
}

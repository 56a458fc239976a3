/**
 * The history file on disk: its directory 0700, the file and its -wal and
 * -shm 0600, and a symbolic link in their place refused, never followed.
 */
import { dirname } from "node:path";
import { AssistantError } from "../base/errors.ts";

/** Creates the data directory 0700 and the file 0600 before SQLite touches them. */
export function prepareFiles(path: string): void {
  const dir = dirname(path);
  try {
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
    Deno.chmodSync(dir, 0o700);
  } catch (error) {
    throw new AssistantError(
      `Cannot create the history directory ${dir} with mode 0700; check its owner and permissions.`,
      { cause: error },
    );
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) refuseLink(file);
  try {
    // createNew is O_EXCL: it neither follows a link nor replaces a file.
    Deno.openSync(path, { createNew: true, write: true, mode: 0o600 }).close();
  } catch (error) {
    if (!(error instanceof Deno.errors.AlreadyExists)) {
      throw new AssistantError(
        `Cannot create the history database ${path}; check the permissions of ${dir}.`,
        { cause: error },
      );
    }
  }
  refuseLink(path);
  try {
    Deno.chmodSync(path, 0o600);
  } catch (error) {
    throw new AssistantError(
      `Cannot set mode 0600 on the history database ${path}; check its owner.`,
      { cause: error },
    );
  }
}

/** Tightens -wal and -shm, which SQLite creates at open. */
export function secureSidecars(path: string): void {
  for (const file of [`${path}-wal`, `${path}-shm`]) {
    if (refuseLink(file)) Deno.chmodSync(file, 0o600);
  }
}

/** Throws when `file` is a symbolic link or not a regular file; returns whether it exists. */
export function refuseLink(file: string): boolean {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw new AssistantError(
      `Cannot inspect ${file}; check the permissions of its directory.`,
      { cause: error },
    );
  }
  if (info.isSymlink) {
    throw new AssistantError(
      `History file ${file} is a symbolic link; it is not followed. Move the real file to that path or remove the link.`,
    );
  }
  if (!info.isFile) {
    throw new AssistantError(
      `History file ${file} is not a regular file; move it aside.`,
    );
  }
  return true;
}

/**
 * Chat's input history across runs: the lines typed, one JSON string a line
 * in a file only the user may read (mode 0600), in a folder of chat's own
 * under the state directory. It is read once at start and appended to as
 * lines are typed; what cannot be read or written leaves the history in
 * memory only, and nothing of it is ever logged.
 */
import { join } from "node:path";
import { HISTORY_FILE } from "./chat_places.ts";
import { holds } from "../base/grant_query.ts";

/** Lines kept across runs by default, as the line editor keeps them. */
export const HISTORY_LINES = 500;

/** Where typed lines are kept for the next run. */
export interface InputLog {
  /** Keeps one line typed. */
  add(line: string): void;
}

/** The lines of earlier runs, oldest first, and where new ones go (null: nowhere, the history lasts this run only). */
export interface OpenedHistory {
  lines: string[];
  log: InputLog | null;
}

const FILE_MODE = 0o600;

function parsed(text: string): string[] {
  const lines: string[] = [];
  for (const row of text.split("\n")) {
    if (row === "") continue;
    try {
      const line = JSON.parse(row);
      if (typeof line === "string") lines.push(line);
    } catch {
      // A torn last line (a crash mid-write) is dropped, the rest kept.
    }
  }
  return lines;
}

/** Opens the history in `dir` (created when missing); never throws: a folder chat may not use keeps nothing. */
export async function openHistory(
  dir: string | null,
  limit = HISTORY_LINES,
): Promise<OpenedHistory> {
  // Without the grant nothing is tried: Deno would ask on the terminal.
  if (dir === null || !holds("write", dir)) return { lines: [], log: null };
  const path = join(dir, HISTORY_FILE);
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    let text = "";
    try {
      text = await Deno.readTextFile(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    const all = parsed(text);
    const lines = all.slice(-limit);
    if (all.length > 2 * limit) {
      // Rewritten whole now and then, so the file stays small.
      const temp = `${path}.new`;
      await Deno.writeTextFile(
        temp,
        lines.map((line) => JSON.stringify(line) + "\n").join(""),
        { mode: FILE_MODE },
      );
      await Deno.rename(temp, path);
    }
    await Deno.writeTextFile(path, "", { append: true, mode: FILE_MODE });
    // A file made by something else, or before, is made the user's alone.
    await Deno.chmod(path, FILE_MODE);
    let last = lines.at(-1);
    const log: InputLog = {
      add(line) {
        if (line === last) return;
        last = line;
        try {
          Deno.writeTextFileSync(path, JSON.stringify(line) + "\n", {
            append: true,
            mode: FILE_MODE,
          });
        } catch {
          // A full disk loses this line of history, nothing else.
        }
      },
    };
    return { lines, log };
  } catch {
    return { lines: [], log: null };
  }
}

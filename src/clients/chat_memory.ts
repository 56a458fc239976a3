/**
 * What chat says of memories and of search by meaning, beside the
 * questions it asks (chat_questions.ts): the short line after a change of
 * its own (another client's changes show nothing), clearer words for the
 * errors its memory and search commands can get, a proposal where nobody
 * can answer it (piped input), and the sign the prompt carries while the
 * daemon makes old turns searchable by meaning.
 */
import type { MemoryView, ProposalView } from "../protocol/events.ts";
import type { Waiting } from "./chat_commands.ts";
import { oneLine } from "./chat_lines.ts";

/** The line after this chat kept, rewrote or forgot a memory: `memory #4 kept`. */
export function memoryChanged(
  wait: Extract<Waiting, { kind: "memory" }>,
  items: MemoryView[],
): string {
  // A memory just added has the highest id: ids only grow.
  const id = wait.id ??
    (items.length === 0 ? null : Math.max(...items.map((item) => item.id)));
  return id === null ? `memory ${wait.change}` : `memory #${id} ${wait.change}`;
}

/** Errors of chat's own commands that say more than the daemon's words. */
const CLEARER: Record<string, (message: string) => string> = {
  bad_memory: () => "not kept: a memory is 1 to 500 characters",
  no_such_memory: () => "no such memory: /memories lists them by number",
  meaning_off: (message) =>
    `${message} (/search without --meaning searches by words)`,
  bad_by: () =>
    "this daemon does not search that way: /search without --words or --meaning",
};

/** The message of an error that answers one of this chat's commands. */
export function commandError(code: string, message: string): string {
  return CLEARER[code]?.(message) ?? message;
}

/** A proposal where nobody can answer it (piped input): shown, and left for a chat on a terminal or the page. */
export function proposalNote(item: ProposalView): string {
  return `[proposed to remember: "${
    oneLine(item.text)
  }"; a chat on a terminal or the page can keep it]`;
}

/** How far the daemon is in making turns searchable by meaning. */
export interface Progress {
  done: number;
  total: number;
}

/**
 * The prompt's sign while old turns get their vectors, and a line once
 * they all have, said only when the sign was seen: a chat that never
 * showed the progress does not announce its end.
 */
export class IndexingSign {
  #progress: Progress | null = null;
  #seen = false;
  #note: string | null = null;

  /** The sign as `hello.indexing` sets it (absent: not indexing). */
  constructor(progress?: Progress) {
    if (progress) this.update(progress);
  }

  /** Follows an `indexing` event (`done` equal to `total` ends it); true when the prompt's tag changes. */
  update(progress: Progress): boolean {
    const before = this.#text();
    if (progress.done < progress.total) {
      this.#progress = { done: progress.done, total: progress.total };
      return this.#text() !== before;
    }
    if (this.#progress !== null && this.#seen) {
      const turns = progress.total.toLocaleString("en-US");
      this.#note = `indexed ${turns} turn${
        progress.total === 1 ? "" : "s"
      } for search by meaning`;
    }
    this.#progress = null;
    this.#seen = false;
    return before !== null;
  }

  /** The prompt's tag while indexing runs (`indexing 40%`), or null; drawing it counts as seen. */
  tag(): string | null {
    const text = this.#text();
    if (text !== null) this.#seen = true;
    return text;
  }

  #text(): string | null {
    const progress = this.#progress;
    if (progress === null) return null;
    return `indexing ${Math.floor(progress.done * 100 / progress.total)}%`;
  }

  /** The line that says indexing is through, once; null when there is none to say. */
  takeNote(): string | null {
    const note = this.#note;
    this.#note = null;
    return note;
  }
}

/**
 * Chat's files for the next question (`/attach`, `/detach`): read when
 * attached, held until a question takes them, and shown in the prompt.
 */
import { MAX_FILES } from "../protocol/commands.ts";
import {
  asAttachments,
  type Attached,
  AttachError,
  checkLine,
  type FileSource,
  formatSize,
  readAttachment,
} from "./attachments.ts";
import { oneLine } from "./chat_lines.ts";

/** The words of `/attach`'s arguments: split at spaces, except inside quotes or after a backslash; null for an unclosed quote. */
export function splitPaths(text: string): string[] | null {
  const words: string[] = [];
  let word = "";
  let quote: string | null = null;
  let started = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quote !== null) {
      if (char === quote) quote = null;
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      started = true;
    } else if (char === "\\" && i + 1 < text.length) {
      word += text[++i];
      started = true;
    } else if (/\s/.test(char)) {
      if (started) words.push(word);
      word = "";
      started = false;
    } else {
      word += char;
      started = true;
    }
  }
  if (quote !== null) return null;
  if (started) words.push(word);
  return words;
}

/** One file as a line shows it: `notes.txt (2.1 KB, text/plain)`; a name with control characters or line breaks (any file name may hold them) on one plain line. */
function described(file: Attached): string {
  return `${oneLine(file.name)} (${
    formatSize(file.bytes.length)
  }, ${file.mime})`;
}

/** The files waiting for the next question. */
export class AttachQueue {
  #files: Attached[] = [];
  readonly #source: FileSource;

  /** An empty queue that reads files from `source`. */
  constructor(source: FileSource) {
    this.#source = source;
  }

  /** The files waiting, in the order attached. */
  get files(): readonly Attached[] {
    return this.#files;
  }

  /** What the prompt says of them: `1 file`, `3 files`; null for none. */
  get tag(): string | null {
    const n = this.#files.length;
    return n === 0 ? null : `${n} file${n === 1 ? "" : "s"}`;
  }

  /** Reads each path and queues what can go; resolves to a line for each (`attached …`), and the lines that say why a path was refused. */
  async add(paths: string[]): Promise<{ done: string[]; refused: string[] }> {
    const done: string[] = [];
    const refused: string[] = [];
    for (const path of paths) {
      try {
        if (this.#files.length >= MAX_FILES) {
          throw new AttachError(
            `${path} not attached: one question carries at most ${MAX_FILES} files`,
          );
        }
        const file = await readAttachment(path, this.#source);
        const files = [...this.#files, file];
        // Refused now rather than at the question: it could never go.
        checkLine(
          { type: "ask", text: "", files: asAttachments(files) },
          files,
        );
        this.#files = files;
        done.push(`attached ${described(file)}`);
      } catch (error) {
        if (!(error instanceof AttachError)) throw error;
        // The message names the path as typed.
        refused.push(oneLine(error.message));
      }
    }
    return { done, refused };
  }

  /** `/attach` alone: what waits. */
  list(): string {
    return this.#files.length === 0
      ? "nothing attached: /attach PATH… adds files for the next question"
      : `for the next question: ${this.#files.map(described).join(", ")}`;
  }

  /** `/detach`: empties the queue; what it says. */
  clear(): string {
    const tag = this.tag;
    this.#files = [];
    return tag === null ? "nothing attached" : `detached ${tag}`;
  }

  /** Takes the files for a question, emptying the queue. */
  take(): Attached[] {
    const files = this.#files;
    this.#files = [];
    return files;
  }

  /** Puts files back, when their question could not be sent. */
  restore(files: Attached[]): void {
    this.#files = [...files, ...this.#files];
  }
}

/**
 * Cuts a reply's spoken text into chunks for synthesis as it streams, so
 * speech starts before the answer exists: at a sentence end, else at a
 * clause break once enough text waits, else at a space once more waits,
 * and whatever is left at the reply's end.
 */

/** Characters that wait before a clause break (`,` `;` `:`) ends a chunk. */
export const CLAUSE_AFTER = 120;
/** Characters that wait before any space ends a chunk. */
export const SPACE_AFTER = 220;

/** Sentence punctuation, any closing quotes or brackets, and then whitespace. */
const SENTENCE_END = /[.!?…]+["'”’»)\]]*(?=\s)/gu;
const CLAUSE_END = /[,;:]["'”’»)\]]*(?=\s)/gu;
const OPENERS = /^["'“‘«(\[]+/u;

/** Short abbreviations after which a period ends no sentence ("Dr. Smith"). */
const ABBREVIATIONS = new Set([
  "approx",
  "ca",
  "cf",
  "dept",
  "dr",
  "eq",
  "esp",
  "fig",
  "incl",
  "jr",
  "mr",
  "mrs",
  "ms",
  "mt",
  "prof",
  "sr",
  "st",
  "vs",
]);

/** Whether the single period at `at` ends an abbreviation rather than a sentence. */
function afterAbbreviation(text: string, at: number): boolean {
  const start = Math.max(
    text.lastIndexOf(" ", at - 1),
    text.lastIndexOf("\n", at - 1),
    text.lastIndexOf("\t", at - 1),
  ) + 1;
  const word = text.slice(start, at).replace(OPENERS, "");
  return /^(?:\p{L}\.)+\p{L}$/u.test(word) || // e.g. i.e. U.S.
    /^\p{Lu}$/u.test(word) || // an initial: J. Smith
    ABBREVIATIONS.has(word.toLowerCase());
}

/** Whether a chunk has anything to say (a lone "." has not). */
function speakable(chunk: string): boolean {
  return /[\p{L}\p{N}]/u.test(chunk);
}

/** Options of {@link ChunkCutter} and {@link SpeechChunker}. */
export interface ChunkerOptions {
  /** Characters waiting before a clause break cuts; default {@link CLAUSE_AFTER}. */
  clauseAfter?: number;
  /** Characters waiting before a space cuts; default {@link SPACE_AFTER}. */
  spaceAfter?: number;
}

/** The chunker's state: text in, every chunk it completes out. */
export class ChunkCutter {
  #text = "";
  readonly #clauseAfter: number;
  readonly #spaceAfter: number;

  /** Creates an empty cutter. */
  constructor(options: ChunkerOptions = {}) {
    this.#clauseAfter = options.clauseAfter ?? CLAUSE_AFTER;
    this.#spaceAfter = options.spaceAfter ?? SPACE_AFTER;
  }

  /** Adds text; returns the chunks it completed, in order. */
  push(text: string): string[] {
    this.#text += text;
    const chunks: string[] = [];
    for (let cut = this.#cut(); cut !== null; cut = this.#cut()) {
      const chunk = this.#text.slice(0, cut).trim();
      this.#text = this.#text.slice(cut).trimStart();
      if (speakable(chunk)) chunks.push(chunk);
    }
    return chunks;
  }

  /** The reply has ended: whatever is left, as a last chunk. */
  flush(): string[] {
    const rest = this.#text.trim();
    this.#text = "";
    return speakable(rest) ? [rest] : [];
  }

  /** Where the next chunk ends, or null while it must wait. */
  #cut(): number | null {
    const text = this.#text;
    for (const match of text.matchAll(SENTENCE_END)) {
      const single = match[0].startsWith(".") && !match[0].startsWith("..");
      if (single && afterAbbreviation(text, match.index)) continue;
      return match.index + match[0].length;
    }
    if (text.length >= this.#clauseAfter) {
      let last = -1;
      for (const match of text.matchAll(CLAUSE_END)) {
        last = match.index + match[0].length;
      }
      if (last > 0) return last;
    }
    if (text.length >= this.#spaceAfter) {
      const space = text.search(/\s\S*$/);
      if (space > 0) return space;
    }
    return null;
  }
}

/** The chunker as a stream stage: spoken text in (any pieces), chunks out. */
export class SpeechChunker extends TransformStream<string, string> {
  /** Creates the stage. */
  constructor(options: ChunkerOptions = {}) {
    const cutter = new ChunkCutter(options);
    super({
      transform(text, controller) {
        for (const chunk of cutter.push(text)) controller.enqueue(chunk);
      },
      flush(controller) {
        for (const chunk of cutter.flush()) controller.enqueue(chunk);
      },
    });
  }
}

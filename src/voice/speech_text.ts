/**
 * A reply's Markdown as it should be heard, while it streams: no `*`, `#`,
 * backticks or URLs (a link's text only), list markers dropped, a heading or
 * an item ended as a sentence, and a fenced code block or a table replaced by
 * a short spoken note. Text goes out a word at a time, each as soon as the
 * whitespace after it arrives.
 */

/** Said where a fenced code block stands. */
export const CODE_NOTE = "See the code on screen.";
/** Said where a table stands. */
export const TABLE_NOTE = "See the table on screen.";

/** What the rest of the current line is. */
type LineKind = "text" | "heading" | "item" | "skip";

/** Punctuation that already ends a spoken line (with any closing quote or bracket). */
const ENDED = /[.!?…:;,]["'”’»)\]]*$/u;
/** A word that is Markdown syntax alone: a bullet, a rule, a lone `#`, a dash. */
const SYNTAX_ONLY = /^[-*_=~#|>+•–—]+$/u;
const URL = /(?:https?:\/\/|www\.)[^\s<>()\[\]]*[^\s<>()\[\].,;:!?'"]/g;

/** One complete word as it is spoken; "" when nothing of it is. */
export function spokenWord(word: string): string {
  if (SYNTAX_ONLY.test(word)) return "";
  return word
    .replace(/!?\[([^\]]*)\]\([^)\s]*\)/g, "$1") // [text](url) within one word
    .replace(/\]\([^)\s]*\)/g, "") // the end of a link whose text has spaces
    .replace(URL, "a link")
    .replace(/<\/?[A-Za-z][^>\s]*>/g, "") // an HTML tag such as <br>
    .replace(/\\(?=[!-\/:-@\[-`{-~])/g, "") // a backslash escape
    .replace(/!\[|[*`#\[\]<>]|~~/g, "")
    .replace(/(^|[^\p{L}\p{N}_])_+|_+(?=[^\p{L}\p{N}_]|$)/gu, "$1");
}

/** The conversion's state: Markdown in, in any pieces, spoken text out. */
export class SpokenMarkdown {
  /** The current line's text not yet handled. */
  #line = "";
  /** What the current line is, once its first word says. */
  #kind: LineKind | null = null;
  /** Whether the current line has said anything. */
  #said = false;
  /** The current line's last spoken word, for its punctuation. */
  #lastWord = "";
  /** A space owed before the next word. */
  #space = false;
  /** The open code fence (its marker), while inside one. */
  #fence: string | null = null;
  #inTable = false;
  /** A paragraph line ended without punctuation: a space if the paragraph goes on, else a period. */
  #open = false;

  /** Adds Markdown; returns the spoken text it completed. */
  push(text: string): string {
    let out = "";
    this.#line += text.replaceAll("\r", "");
    for (let end = this.#line.indexOf("\n"); end >= 0;) {
      const rest = this.#line.slice(end + 1);
      this.#line = this.#line.slice(0, end);
      out += this.#consume(true) + this.#endLine();
      this.#line = rest;
      end = this.#line.indexOf("\n");
    }
    return out + this.#consume(false);
  }

  /** The reply has ended: the rest of its last line, ended as a line is. */
  flush(): string {
    const out = this.#consume(true) + this.#endLine() + this.#break();
    this.#line = "";
    return out;
  }

  /** Handles the current line's words; `complete` when its end has arrived. */
  #consume(complete: boolean): string {
    let out = "";
    if (this.#kind === null) {
      const decided = this.#decide(complete);
      if (decided === null) return "";
      out += decided;
    }
    if (this.#kind === "skip") {
      this.#line = "";
      return out;
    }
    const words = this.#line.split(/[ \t]+/);
    // Without the line's end, the last piece may still grow: keep it.
    this.#line = complete ? "" : words.pop() ?? "";
    words.forEach((word, index) => {
      const last = complete && index === words.length - 1;
      out += this.#word(word, !last);
    });
    return out;
  }

  /** One complete word; `spaced` when whitespace followed it. */
  #word(word: string, spaced: boolean): string {
    const spoken = spokenWord(word);
    if (spoken === "") return "";
    let out = (this.#space ? " " : "") + spoken;
    this.#space = false;
    this.#said = true;
    this.#lastWord = spoken;
    // After punctuation the space goes out at once: the chunker cuts on it.
    if (spaced) {
      if (ENDED.test(spoken)) out += " ";
      else this.#space = true;
    }
    return out;
  }

  /** Decides the line's kind from its first word, consuming its markers; null while that word is incomplete. */
  #decide(complete: boolean): string | null {
    const lead = /^[ \t]*(?:>[ \t]?)*[ \t]*/.exec(this.#line)![0];
    const rest = this.#line.slice(lead.length);
    const first = /^\S*/.exec(rest)![0];
    const plain = first !== "" && !/^[`~|#*+\-_=\d]/.test(first);
    if (!complete && !plain && first.length === rest.length) return null;
    if (this.#fence !== null) {
      const marker = this.#fence;
      if (first.startsWith(marker) && /^([`~])\1*$/.test(first)) {
        this.#fence = null;
      }
      this.#kind = "skip";
      return "";
    }
    if (first === "") {
      this.#kind = "skip"; // a blank line
      return "";
    }
    const fence = /^(`{3,}|~{3,})/.exec(first);
    if (fence) {
      this.#fence = fence[1]!;
      this.#kind = "skip";
      return this.#break() + CODE_NOTE + "\n";
    }
    if (first.startsWith("|")) {
      const note = this.#inTable ? "" : this.#break() + TABLE_NOTE + "\n";
      this.#inTable = true;
      this.#kind = "skip";
      return note;
    }
    this.#inTable = false;
    const numbered = /^(\d{1,9})[.)]$/.exec(first);
    if (/^#{1,6}$/.test(first) || /^[-*+]$/.test(first) || numbered) {
      this.#kind = /^#/.test(first) ? "heading" : "item";
      this.#line = rest.slice(first.length);
      const out = this.#break();
      if (!numbered) return out;
      this.#said = true;
      this.#lastWord = `${numbered[1]}:`;
      return `${out}${numbered[1]}: `;
    }
    this.#kind = "text";
    this.#line = rest;
    if (!this.#open) return "";
    this.#open = false;
    return " ";
  }

  /** Ends the paragraph left open, if any. */
  #break(): string {
    if (!this.#open) return "";
    this.#open = false;
    return ".\n";
  }

  /** The current line's end has been handled: close it as its kind wants. */
  #endLine(): string {
    let out = "";
    const ended = ENDED.test(this.#lastWord);
    if (!this.#said || this.#kind === "skip" || this.#kind === null) {
      out = this.#break(); // a blank, skipped or silent line ends a paragraph
    } else if (this.#kind === "text") {
      if (ended) out = "\n";
      else this.#open = true;
    } else {
      out = ended ? "\n" : ".\n";
    }
    this.#kind = null;
    this.#said = false;
    this.#lastWord = "";
    this.#space = false;
    return out;
  }
}

/** The conversion as a stream stage: a reply's Markdown in, spoken text out. */
export class SpeechText extends TransformStream<string, string> {
  /** Creates the stage. */
  constructor() {
    const spoken = new SpokenMarkdown();
    super({
      transform(text, controller) {
        const out = spoken.push(text);
        if (out !== "") controller.enqueue(out);
      },
      flush(controller) {
        const out = spoken.flush();
        if (out !== "") controller.enqueue(out);
      },
    });
  }
}

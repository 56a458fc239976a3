/**
 * Syntax highlighting of a code block for the terminal, by highlight.js, a
 * line at a time: a streamed block's lines are highlighted as each one
 * completes, and a finished line keeps its colours whether the block came
 * whole or line by line.
 */
// @ts-types="./highlight_js.d.ts"
import hljs from "highlight.js/lib/common";

/** SGR parameters of highlight.js scopes (the first class of a span). */
const SCOPE_STYLE: Record<string, string> = {
  keyword: "35",
  "selector-tag": "35",
  built_in: "36",
  type: "36",
  property: "36",
  literal: "34",
  number: "34",
  name: "34",
  section: "1;34",
  string: "32",
  addition: "32",
  regexp: "31",
  deletion: "31",
  variable: "31",
  "template-variable": "31",
  title: "33",
  attr: "33",
  attribute: "33",
  symbol: "33",
  bullet: "33",
  "selector-id": "33",
  "selector-class": "33",
  comment: "2",
  quote: "2",
  meta: "2",
  doctag: "2;1",
  emphasis: "3",
  strong: "1",
  // An interpolation inside a string is code again.
  subst: "39",
};

/**
 * A chunk of lines is highlighted together while highlight.js leaves a mode
 * open at its last line's end (a comment, a string, a parameter list), and
 * is final once one closes; no chunk grows past this many lines.
 */
const MAX_CHUNK = 64;

const HTML =
  /<span class="([^"]*)">|<\/span>|&(amp|lt|gt|quot|#x27);|[^<&]+|[<&]/g;
const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  "#x27": "'",
};

/** The highlight.js name of a fence's language tag, or null when it knows none. */
export function codeLanguage(tag: string | undefined): string | null {
  const word = (tag ?? "").trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if (word === "") return null;
  const language = hljs.getLanguage(word);
  return language ? word : null;
}

/** Highlights the lines of one code block; called again as the block grows, it redoes only the lines after the last final chunk. */
export class CodeHighlighter {
  readonly language: string | null;
  #lines: string[] = [];
  #out: string[] = [];
  /** First line of each chunk; the last one is open. */
  #starts: number[] = [0];

  /** A highlighter for a fence's language tag (plain text when unknown). */
  constructor(tag: string | undefined) {
    this.language = codeLanguage(tag);
  }

  /** Styled lines for the block's lines so far (visible text: controls already shown, tabs expanded). */
  highlight(lines: readonly string[]): string[] {
    if (this.language === null) return lines.map((line) => style(line, ""));
    let same = 0;
    const known = Math.min(this.#lines.length, lines.length);
    while (same < known && this.#lines[same] === lines[same]) same++;
    // A chunk stays final while every line of it is unchanged.
    while (this.#starts.length > 1 && this.#starts.at(-1)! > same) {
      this.#starts.pop();
    }
    let start = this.#starts.at(-1)!;
    // When the block only grew, the open chunk's lines are known not to close it.
    const grew = same === this.#lines.length;
    let open = grew ? this.#out.slice(start) : [];
    const out = this.#out.slice(0, start);
    this.#lines = lines.slice();
    for (let next = grew ? same : start; next < lines.length; next++) {
      const chunk = this.#chunk(start, next);
      open = chunk.lines;
      if (chunk.closed || next + 1 - start >= MAX_CHUNK) {
        out.push(...open);
        open = [];
        start = next + 1;
        this.#starts.push(start);
      }
    }
    out.push(...open);
    this.#out = out;
    return out.slice();
  }

  /** Highlights lines start..end as one piece: their styled lines and whether no mode is left open. */
  #chunk(start: number, end: number): { lines: string[]; closed: boolean } {
    const code = this.#lines.slice(start, end + 1).join("\n");
    const result = hljs.highlight(code, {
      language: this.language!,
      ignoreIllegals: true,
    });
    // `_top` is the mode highlight.js ended in; the language's own mode has no parent.
    return { lines: htmlLines(result.value), closed: !result._top?.parent };
  }
}

/** highlight.js's HTML as styled terminal lines, runs of one style merged. */
function htmlLines(html: string): string[] {
  const lines: string[] = [];
  const stack: string[] = [];
  let line = "";
  let run = "";
  let runStyle = "";
  const add = (text: string) => {
    const sgr = stack.at(-1) ?? "";
    text.split("\n").forEach((part, index) => {
      if (index > 0) {
        lines.push(line + style(run, runStyle));
        line = run = "";
      }
      if (sgr !== runStyle) {
        line += style(run, runStyle);
        run = "";
        runStyle = sgr;
      }
      run += part;
    });
  };
  for (const match of html.matchAll(HTML)) {
    const [token, classes, entity] = match;
    if (classes !== undefined) {
      const scope = classes.split(" ")[0]!.replace(/^hljs-/, "");
      stack.push(SCOPE_STYLE[scope] ?? stack.at(-1) ?? "");
    } else if (token === "</span>") {
      stack.pop();
    } else if (entity !== undefined) {
      add(ENTITIES[entity]!);
    } else {
      add(token);
    }
  }
  lines.push(line + style(run, runStyle));
  return lines;
}

/** Text in one SGR style, reset after it (plain when the style is empty). */
export function style(text: string, sgr: string): string {
  return sgr === "" || text === "" ? text : `\x1b[${sgr}m${text}\x1b[0m`;
}

/**
 * Terminal input in raw mode, decoded into keys: text runs, control keys,
 * CSI/SS3 sequences (held when split across reads) and bracketed paste.
 */

/** One key press (or a pasted run of text) from a terminal in raw mode. */
export type Key =
  | { name: "text"; text: string }
  | {
    name:
      | "enter"
      | "backspace"
      | "delete"
      | "left"
      | "right"
      | "up"
      | "down"
      | "home"
      | "end"
      | "word-left"
      | "word-right"
      | "kill-start"
      | "kill-end"
      | "kill-word"
      | "interrupt"
      | "eof"
      | "redraw"
      | "ignore";
  };

type Named = Exclude<Key, { name: "text" }>["name"];

const CONTROL: Record<string, Named> = {
  "\x01": "home",
  "\x02": "left",
  "\x03": "interrupt",
  "\x04": "eof",
  "\x05": "end",
  "\x06": "right",
  "\x08": "backspace",
  "\x0b": "kill-end",
  "\x0c": "redraw",
  "\x0e": "down",
  "\x10": "up",
  "\x15": "kill-start",
  "\x17": "kill-word",
  "\x7f": "backspace",
};

/** CSI and SS3 sequences by their parameters and final byte. */
const SEQUENCES: Record<string, Named> = {
  "A": "up",
  "B": "down",
  "C": "right",
  "D": "left",
  "H": "home",
  "F": "end",
  "1~": "home",
  "7~": "home",
  "4~": "end",
  "8~": "end",
  "3~": "delete",
  "1;5C": "word-right",
  "1;5D": "word-left",
  "1;3C": "word-right",
  "1;3D": "word-left",
};

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";

/** Decodes terminal input text into keys; a sequence split across chunks is held until complete; bracketed paste arrives as one text key. */
export class KeyStream extends TransformStream<string, Key> {
  /** Creates a decoder. */
  constructor() {
    let held = "";
    let pasting = false;
    let paste = "";
    let lastCR = false;
    super({
      transform(chunk, controller) {
        let input = held + chunk;
        held = "";
        let text = "";
        const flushText = () => {
          if (text !== "") controller.enqueue({ name: "text", text });
          text = "";
        };
        while (input !== "") {
          if (pasting) {
            const end = input.indexOf(PASTE_END);
            if (end === -1) {
              // Keep a possible start of the end marker for the next chunk.
              const keep = partialSuffix(input, PASTE_END);
              paste += input.slice(0, input.length - keep);
              held = input.slice(input.length - keep);
              return;
            }
            paste += input.slice(0, end);
            input = input.slice(end + PASTE_END.length);
            pasting = false;
            const pasted = clean(paste.replace(/\r\n?/g, "\n"));
            paste = "";
            if (pasted !== "") {
              controller.enqueue({ name: "text", text: pasted });
            }
            continue;
          }
          const char = input[0]!;
          if (char === "\x1b") {
            const parsed = parseEscape(input);
            if (parsed === null) {
              flushText();
              held = input;
              return;
            }
            flushText();
            input = input.slice(parsed.length);
            if (parsed.paste) pasting = true;
            else controller.enqueue({ name: parsed.key });
            lastCR = false;
            continue;
          }
          input = input.slice(char.length);
          if (char === "\r" || char === "\n") {
            // One Enter, whether the terminal sends \r, \n or \r\n.
            const duplicate = char === "\n" && lastCR;
            lastCR = char === "\r";
            if (duplicate) continue;
            flushText();
            controller.enqueue({ name: "enter" });
            continue;
          }
          lastCR = false;
          const named = CONTROL[char];
          if (named) {
            flushText();
            controller.enqueue({ name: named });
          } else if (char >= " " && !isC1(char)) {
            text += char;
          }
        }
        flushText();
      },
      flush(controller) {
        // A lone Esc at the very end is no key we act on.
        if (pasting && paste !== "") {
          controller.enqueue({ name: "text", text: clean(paste) });
        }
      },
    });
  }
}

function isC1(char: string): boolean {
  const code = char.codePointAt(0)!;
  return code >= 0x80 && code <= 0x9f;
}

/** Removes control characters other than newline, so text can never drive the terminal. */
function clean(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/g, "");
}

/** How many trailing characters of `text` could begin `marker`. */
function partialSuffix(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) {
    if (marker.startsWith(text.slice(-n))) return n;
  }
  return 0;
}

type Escape = { length: number; key: Named; paste?: false } | {
  length: number;
  paste: true;
};

/** Parses an escape sequence at the start of input; null when incomplete. */
function parseEscape(input: string): Escape | null {
  if (input.length < 2) return null;
  const second = input[1]!;
  if (second === "[") {
    const match = /^\[([0-9;]*)([ -/]*)([@-~])/.exec(input.slice(1));
    if (!match) {
      // Incomplete while only parameter bytes have come.
      return /^\[[0-9; -/]*$/.test(input.slice(1))
        ? null
        : { length: 2, key: "ignore" };
    }
    const body = `${match[1]}${match[3]}`;
    if (`\x1b[${body}` === PASTE_START) {
      return { length: match[0].length + 1, paste: true };
    }
    return { length: match[0].length + 1, key: SEQUENCES[body] ?? "ignore" };
  }
  if (second === "O") {
    if (input.length < 3) return null;
    return { length: 3, key: SEQUENCES[input[2]!] ?? "ignore" };
  }
  // Alt (Meta) with a key: Alt-b and Alt-f move by words as in readline.
  if (second === "b") return { length: 2, key: "word-left" };
  if (second === "f") return { length: 2, key: "word-right" };
  if (second === "\x7f") return { length: 2, key: "kill-word" };
  return { length: 2, key: "ignore" };
}

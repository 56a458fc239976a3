// @ts-check
/**
 * Files waiting in the composer for the next question, and the rules they
 * are sent by (docs/protocol.md, "Files and pictures"): at most 8, all in
 * one line of at most 1 MiB with their bytes in base64, pictures scaled to
 * a longest side of 1,536 px. No DOM here: reading a file and drawing a
 * picture smaller are handed in (pictures.js), so a test can run this
 * without a browser.
 */

/** Most files one question carries. */
export const MAX_FILES = 8;
/** Longest line the daemon reads, in bytes, without its newline. */
export const MAX_LINE_BYTES = 1024 * 1024;
/** Longest side of a picture as sent, in pixels. */
export const MAX_SIDE = 1536;
/**
 * Largest picture sent as it is (within MAX_SIDE too): two such fit one
 * question with room to spare; a larger one is redrawn as JPEG.
 */
export const AS_IS_BYTES = 256 * 1024;
/** Picture types the daemon takes as pictures. */
export const PICTURE_TYPES = Object.freeze([
  "image/png",
  "image/jpeg",
  "image/webp",
  "image/gif",
]);
/** Longest file name the daemon takes, in UTF-16 units. */
export const MAX_NAME = 255;
/** Room in a line for the `ref` the connection adds (`,"ref":"web-…-N"`). */
const REF_ROOM = 64;

const encoder = new TextEncoder();

/**
 * A file made ready to send: `data` its bytes in base64 (null when it was
 * not read: too large for any line), `src` a picture's data URL for its
 * preview, `scaled` the size it had before it was drawn smaller.
 * @typedef {{name: string, mime: string, bytes: number, data: string | null,
 *   src: string | null, width?: number, height?: number,
 *   scaled?: {width: number, height: number, bytes: number, mime: string}}} Prepared
 */
/**
 * A file as the composer holds it, while it is read and once it is.
 * @typedef {{id: number, name: string, bytes: number,
 *   state: "preparing" | "ready" | "failed", prepared: Prepared | null,
 *   error: string | null, done: Promise<void>}} Entry
 */
/** @typedef {{name: string, size: number, type: string}} FileLike */
/** @typedef {{name: string, mime: string, data: string}} Attachment */
/** A refused question given back to the composer: its text, and whether it was an edit. @typedef {{text: string, edit: boolean}} Returned */
/**
 * A question as the limit sees it: its files by size alone.
 * @typedef {{type: string, text: string,
 *   files?: {name: string, mime: string, bytes: number}[]}} Sized
 */

/** A file's size for people: 812 bytes, 9.5 KB, 212 KB, 1.2 MB (1 KB = 1,024 bytes). */
export function sizeText(/** @type {number} */ bytes) {
  if (bytes < 1024) return bytes === 1 ? "1 byte" : `${bytes} bytes`;
  const kb = bytes / 1024;
  if (kb < 1024) return `${kb < 10 ? kb.toFixed(1) : Math.round(kb)} KB`;
  return `${(kb / 1024).toFixed(1)} MB`;
}

/** Characters of `bytes` bytes in base64. */
export function base64Length(/** @type {number} */ bytes) {
  return Math.ceil(bytes / 3) * 4;
}

/** Bytes in base64, as `data` carries them. */
export function toBase64(/** @type {Uint8Array} */ bytes) {
  const native = /** @type {{toBase64?: () => string}} */ (bytes).toBase64;
  if (typeof native === "function") return native.call(bytes);
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(binary);
}

/** The type a file is sent with: the browser's, else a generic one (the daemon needs one, and reads the bytes anyway). */
export function mimeOf(/** @type {string} */ type) {
  const mime = type.trim().toLowerCase();
  return mime === "" ? "application/octet-stream" : mime;
}

/**
 * The size a picture is drawn at: within MAX_SIDE on its longest side,
 * its proportions kept, never larger than it is.
 * @param {number} width
 * @param {number} height
 */
export function fitWithin(width, height, max = MAX_SIDE) {
  const scale = Math.min(1, max / Math.max(width, height));
  return {
    width: Math.max(1, Math.round(width * scale)),
    height: Math.max(1, Math.round(height * scale)),
  };
}

/**
 * Whether a picture goes as it is: a type the daemon takes, within
 * MAX_SIDE and AS_IS_BYTES; any other is redrawn as JPEG.
 * @param {string} mime
 * @param {number} width
 * @param {number} height
 * @param {number} bytes
 */
export function sendAsIs(mime, width, height, bytes) {
  return PICTURE_TYPES.includes(mime) &&
    Math.max(width, height) <= MAX_SIDE && bytes <= AS_IS_BYTES;
}

/**
 * A redrawn picture's name: its extension made `.jpg`, which it now is; its
 * stem cut where the name would pass MAX_NAME (never inside a character
 * made of two UTF-16 units).
 */
export function jpegName(/** @type {string} */ name) {
  const dot = name.lastIndexOf(".");
  let stem = dot > 0 ? name.slice(0, dot) : name;
  const room = MAX_NAME - ".jpg".length;
  if (stem.length > room) {
    stem = stem.slice(0, room);
    if (/[\uD800-\uDBFF]$/.test(stem)) stem = stem.slice(0, -1);
  }
  return `${stem}.jpg`;
}

/**
 * Bytes of a question's line as the connection sends it: the JSON, each
 * file's data at its base64 length, and room for the ref.
 * @param {Sized} command
 */
export function lineBytes(command) {
  const files = command.files ?? [];
  const shell = JSON.stringify({
    ...command,
    ...(command.files
      ? { files: files.map((f) => ({ name: f.name, mime: f.mime, data: "" })) }
      : {}),
  });
  return encoder.encode(shell).length + REF_ROOM +
    files.reduce((sum, f) => sum + base64Length(f.bytes), 0);
}

/**
 * Why this question cannot be sent in one line, naming its files' total
 * and what it may carry; null when it fits.
 * @param {Sized} command
 */
export function overLimit(command) {
  const line = lineBytes(command);
  if (line <= MAX_LINE_BYTES) return null;
  const files = command.files ?? [];
  if (files.length === 0) {
    return `This question is ${
      sizeText(line)
    }: one line to the daemon holds at most 1 MiB. Shorten it to send it.`;
  }
  const data = files.reduce((sum, f) => sum + base64Length(f.bytes), 0);
  const total = files.reduce((sum, f) => sum + f.bytes, 0);
  const room = Math.max(
    0,
    Math.floor((MAX_LINE_BYTES - (line - data)) * 3 / 4),
  );
  return `The files come to ${sizeText(total)}, more than the ${
    sizeText(room)
  } one question can carry (its line holds at most 1 MiB, the files in base64). Remove a file or attach a smaller one.`;
}

/**
 * The composer's files: each is read as soon as it is added, and they go
 * with the next question. They stay until the daemon takes that question
 * (its `user` event carries the question's ref); a refusal leaves them
 * attached, to be fixed and sent again.
 * @template {FileLike} [F=FileLike]
 */
export class Attachments {
  /** @type {Entry[]} */
  entries = [];
  /** @type {string | number | null} The ref of the question that carries them, until the daemon answers it. */
  sentWith = null;
  /** @type {Returned} The question sent with them, given back when it is refused. */
  sentQuestion = { text: "", edit: false };
  #next = 0;
  #prepare;
  #changed;

  /**
   * @param {(file: F) => Promise<Prepared>} prepare reads one file
   * @param {() => void} changed called whenever the list or an entry changes
   */
  constructor(prepare, changed) {
    this.#prepare = prepare;
    this.#changed = changed;
  }

  /** Whether the files are on their way, waiting for the daemon's answer. */
  get sending() {
    return this.sentWith !== null;
  }

  /**
   * Adds files (each read at once); returns why any was left out.
   * @param {Iterable<F>} files
   * @returns {string[]}
   */
  add(files) {
    /** @type {string[]} */
    const left = [];
    for (const file of files) {
      if (file.size === 0) {
        left.push(
          `${file.name || "A file"} is empty: there is nothing to send.`,
        );
        continue;
      }
      if (file.name.length > MAX_NAME) {
        left.push(`A file's name is over ${MAX_NAME} characters: rename it.`);
        continue;
      }
      if (this.entries.length >= MAX_FILES) {
        left.push(
          `${file.name}: a question carries at most ${MAX_FILES} files.`,
        );
        continue;
      }
      this.entries.push(this.#read(file));
    }
    this.#changed();
    return left;
  }

  /** @param {F} file @returns {Entry} */
  #read(file) {
    /** @type {Entry} */
    const entry = {
      id: ++this.#next,
      name: file.name || "unnamed",
      bytes: file.size,
      state: "preparing",
      prepared: null,
      error: null,
      done: Promise.resolve(),
    };
    entry.done = this.#prepare(file).then((prepared) => {
      entry.prepared = prepared;
      entry.name = prepared.name;
      entry.bytes = prepared.bytes;
      entry.state = "ready";
    }, (/** @type {unknown} */ error) => {
      entry.state = "failed";
      entry.error = `${entry.name} could not be read (${
        error instanceof Error ? error.message : String(error)
      }): remove it.`;
    }).finally(() => this.#changed());
    return entry;
  }

  /** Removes one file, unless they are on their way. */
  remove(/** @type {number} */ id) {
    if (this.sending) return;
    this.entries = this.entries.filter((entry) => entry.id !== id);
    this.#changed();
  }

  /** Resolves once every file is read. */
  async settled() {
    await Promise.all(this.entries.map((entry) => entry.done));
  }

  /** Why they cannot go yet (one not read, or failed); null when they can. */
  problem() {
    const failed = this.entries.find((entry) => entry.state === "failed");
    if (failed) return failed.error;
    if (this.entries.some((entry) => entry.state === "preparing")) {
      return "The files are still being read.";
    }
    return null;
  }

  /** The files by size, as the line limit counts them. */
  sized() {
    return this.entries.map((entry) => ({
      name: entry.name,
      mime: entry.prepared?.mime ?? "application/octet-stream",
      bytes: entry.bytes,
    }));
  }

  /** The files as `ask` and `edit` carry them (only those read). */
  attachments() {
    /** @type {Attachment[]} */
    const files = [];
    for (const { prepared } of this.entries) {
      if (prepared?.data != null) {
        files.push({
          name: prepared.name,
          mime: prepared.mime,
          data: prepared.data,
        });
      }
    }
    return files;
  }

  /** The pictures' previews, one per file `attachments` gives (null for a file that is none). */
  sources() {
    return this.entries.filter((entry) => entry.prepared?.data != null)
      .map((entry) => entry.prepared?.src ?? null);
  }

  /** They went with the question sent with `ref`. */
  sent(/** @type {string | number} */ ref, /** @type {Returned} */ question) {
    this.sentWith = ref;
    this.sentQuestion = question;
    this.#changed();
  }

  /**
   * An event from the daemon: the `user` of their question clears them, a
   * command error answering it keeps them. Returns the question to give
   * back to the composer on a refusal, else null.
   * @param {{type: string, ref?: string | number}} event
   * @returns {Returned | null}
   */
  answered(event) {
    if (this.sentWith === null || event.ref !== this.sentWith) return null;
    const question = this.sentQuestion;
    this.sentWith = null;
    this.sentQuestion = { text: "", edit: false };
    if (event.type === "user") this.entries = [];
    this.#changed();
    return event.type === "error" ? question : null;
  }

  /** The link dropped before an answer: the question may be lost, so the files stay. */
  lost() {
    if (this.sentWith === null) return null;
    return this.answered({ type: "error", ref: this.sentWith });
  }
}

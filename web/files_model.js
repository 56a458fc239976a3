// @ts-check
/**
 * The files of the turns shown: what each question carried (`user.files`,
 * `conversation.turns[].files`, `hello.pending.files`), the pictures this
 * page sent with its own questions, and the pictures it fetched with the
 * `file` command, kept while the page is open. No DOM here.
 */

import { PICTURE_TYPES } from "./attachments.js";

/** @typedef {import("../src/protocol/events.ts").FileView} FileView */
/** @typedef {import("./attachments.js").Attachment} Attachment */
/** @typedef {import("./model_parts.js").Pending} Pending */
/** @typedef {import("./model_parts.js").EventOf<"file">} FileEvent */
/**
 * What this page sent with a question: its files, and each picture's data
 * URL (null for a file that is no picture), in the question's order.
 * @typedef {{files: Attachment[], sources: (string | null)[]}} Sent
 */
/** @typedef {{type: "file", conversation: number, turn: number, index: number}} FileCommand */
/** @typedef {{state: "asking" | "ready" | "missing", src: string | null}} Picture */

/**
 * The files a question carried, as the daemon lists them; none when the
 * field is absent or malformed.
 * @param {unknown} value
 * @returns {FileView[]}
 */
export function filesOf(value) {
  if (!Array.isArray(value)) return [];
  /** @type {FileView[]} */
  const files = [];
  for (const item of value) {
    if (item === null || typeof item !== "object") continue;
    const { name, mime, bytes, kind } = /** @type {Record<string, unknown>} */ (
      item
    );
    if (typeof name !== "string") continue;
    files.push({
      name,
      mime: typeof mime === "string" ? mime : "",
      bytes: typeof bytes === "number" && bytes >= 0 ? bytes : 0,
      kind: /** @type {FileView["kind"]} */ (String(kind ?? "")),
    });
  }
  return files;
}

/** Whether a file is a picture the page can draw. */
export function isPicture(/** @type {FileView} */ file) {
  return file.kind === "image" && PICTURE_TYPES.includes(file.mime);
}

/**
 * Where each turn shown is kept, for the `file` command: its conversation
 * and its place in `conversation.turns`, which counts kept turns only;
 * null for a turn the daemon did not keep and in a conversation without an
 * id (unsaved or private), whose files cannot be fetched.
 * @param {{status: string | null}[]} turns
 * @param {number | null} conversation
 * @returns {({conversation: number, turn: number} | null)[]}
 */
export function places(turns, conversation) {
  let kept = 0;
  return turns.map((turn) => {
    if (turn.status === "stopped" || turn.status === "error") return null;
    const turnAt = kept++;
    return conversation === null ? null : { conversation, turn: turnAt };
  });
}

/** Where a file is in the history: the `file` command's three numbers. */
function placeOf(
  /** @type {number} */ conversation,
  /** @type {number} */ turn,
  /** @type {number} */ index,
) {
  return `${conversation}:${turn}:${index}`;
}

/**
 * A picture's key: its place and what the daemon says it is, so a turn
 * replaced by one with other files never shows the old picture.
 * @param {number} conversation
 * @param {number} turn 0-based place in `conversation.turns`
 * @param {number} index 0-based place in its `files`
 * @param {FileView} file
 */
export function pictureKey(conversation, turn, index, file) {
  return `${placeOf(conversation, turn, index)}:${file.bytes}:${file.name}`;
}

/** Characters of data URLs kept at most: past them the oldest pictures go, to be fetched again if shown again. */
export const CACHE_CHARS = 64 * 1024 * 1024;

/**
 * The pictures of saved turns, each fetched once with `file` (lazily: the
 * view asks when one comes into sight) and kept while the page is open,
 * up to `limit` characters of data URLs.
 */
export class PictureCache {
  /** @type {Map<string, Picture>} Oldest first. */
  #pictures = new Map();
  #chars = 0;
  #limit;

  constructor(limit = CACHE_CHARS) {
    this.#limit = limit;
  }

  /** Keeps a picture's data URL, letting the oldest go past the limit. */
  #keep(/** @type {string} */ key, /** @type {string} */ src) {
    this.#drop(key);
    this.#pictures.set(key, { state: "ready", src });
    this.#chars += src.length;
    for (const [old, picture] of this.#pictures) {
      if (this.#chars <= this.#limit || old === key) break;
      if (picture.state === "ready") this.#drop(old);
    }
  }

  /** Forgets one picture. */
  #drop(/** @type {string} */ key) {
    this.#chars -= this.#pictures.get(key)?.src?.length ?? 0;
    this.#pictures.delete(key);
  }
  /** @type {Map<string, string>} Place asked for, to the key of the picture asked. */
  #asking = new Map();
  /** @type {Map<string | number, string>} Ref of a `file` command, to its place. */
  #refs = new Map();

  /** A picture's data URL once known, else null. */
  src(/** @type {string} */ key) {
    return this.#pictures.get(key)?.src ?? null;
  }

  /** Whether a picture was asked for and cannot be had. */
  missing(/** @type {string} */ key) {
    return this.#pictures.get(key)?.state === "missing";
  }

  /**
   * The command that fetches a picture; null when it is known, asked for,
   * missing, or no picture.
   * @param {number} conversation
   * @param {number} turn
   * @param {number} index
   * @param {FileView} file
   * @returns {FileCommand | null}
   */
  want(conversation, turn, index, file) {
    if (!isPicture(file)) return null;
    const key = pictureKey(conversation, turn, index, file);
    if (this.#pictures.has(key)) return null;
    this.#pictures.set(key, { state: "asking", src: null });
    this.#asking.set(placeOf(conversation, turn, index), key);
    return { type: "file", conversation, turn, index };
  }

  /** The command `want` gave went out with `ref`. */
  asked(
    /** @type {string | number} */ ref,
    /** @type {FileCommand} */ command,
  ) {
    this.#refs.set(
      ref,
      placeOf(command.conversation, command.turn, command.index),
    );
  }

  /**
   * A `file` answer; returns the key of the picture it brings, or null
   * when the page asked for none there.
   * @param {FileEvent} event
   */
  received(event) {
    const place = placeOf(event.conversation, event.turn, event.index);
    const key = this.#asking.get(place);
    if (event.ref !== undefined) this.#refs.delete(event.ref);
    if (key === undefined) return null;
    this.#asking.delete(place);
    const mime = String(event.mime ?? "");
    if (typeof event.data === "string" && PICTURE_TYPES.includes(mime)) {
      this.#keep(key, `data:${mime};base64,${event.data}`);
    } else this.#pictures.set(key, { state: "missing", src: null });
    return key;
  }

  /** An error answering a `file` of this page's: that picture cannot be had. Whether `ref` was one. */
  refused(/** @type {string | number} */ ref) {
    const place = this.#refs.get(ref);
    if (place === undefined) return false;
    this.#refs.delete(ref);
    const key = this.#asking.get(place);
    this.#asking.delete(place);
    if (key !== undefined) {
      this.#pictures.set(key, { state: "missing", src: null });
    }
    return true;
  }

  /**
   * Pictures this page sent, now saved at `turn`: known without asking.
   * @param {number} conversation
   * @param {number} turn
   * @param {FileView[]} files
   * @param {(string | null)[]} sources
   */
  seed(conversation, turn, files, sources) {
    files.forEach((file, index) => {
      const src = sources[index];
      if (src && isPicture(file)) {
        this.#keep(pictureKey(conversation, turn, index, file), src);
      }
    });
  }

  /** A saved turn was replaced (a retry or an edit): its pictures are fetched afresh. */
  forget(/** @type {number} */ conversation, /** @type {number} */ turn) {
    const prefix = `${conversation}:${turn}:`;
    for (const key of [...this.#pictures.keys()]) {
      if (key.startsWith(prefix)) this.#drop(key);
    }
    for (const place of this.#asking.keys()) {
      if (place.startsWith(prefix)) this.#asking.delete(place);
    }
  }

  /** A new connection: what was asked on the old one is never answered, so it is asked again. */
  reconnected() {
    for (const key of this.#asking.values()) this.#drop(key);
    this.#asking.clear();
    this.#refs.clear();
  }
}

/**
 * The files side of the model: what this page sent with its questions
 * (paired with the `user` event by ref) and the pictures it fetched.
 */
export class TurnFiles {
  pictures = new PictureCache();
  /** @type {Map<string | number, Sent>} */
  #sent = new Map();

  /** This page sent a question with files, with `ref`. */
  sent(/** @type {string | number} */ ref, /** @type {Sent} */ sent) {
    this.#sent.set(ref, sent);
  }

  /**
   * A `user` event's files on the reply in flight; the sender's own
   * pictures and files too, so it shows them and can ask again.
   * @param {Pending} pending
   * @param {import("./model_parts.js").EventOf<"user">} event
   */
  started(pending, event) {
    const files = filesOf(event.files);
    if (files.length > 0) pending.files = files;
    if (event.ref === undefined) return;
    const sent = this.#sent.get(event.ref);
    this.#sent.delete(event.ref);
    if (!sent || sent.files.length === 0) return;
    pending.sources = sent.sources;
    pending.resend = sent.files;
  }

  /**
   * A finished turn saved at `turn` of conversation `conversation`: a
   * picture it replaced is forgotten, one this page sent is known.
   * @param {number} conversation
   * @param {number} turn
   * @param {import("./model_parts.js").Turn} placed
   * @param {boolean} replaces
   */
  saved(conversation, turn, placed, replaces) {
    if (replaces) this.pictures.forget(conversation, turn);
    if (placed.files && placed.sources) {
      this.pictures.seed(conversation, turn, placed.files, placed.sources);
    }
  }

  /** An error answering a command: true when it was a `file` of this page's (no notice for that). */
  refused(/** @type {string | number | undefined} */ ref) {
    if (ref === undefined) return false;
    this.#sent.delete(ref);
    return this.pictures.refused(ref);
  }

  /** A new connection. */
  reconnected() {
    this.#sent.clear();
    this.pictures.reconnected();
  }
}

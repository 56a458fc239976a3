// @ts-check
/// <reference lib="dom" />
/**
 * Files drawn: a question's files as chips (name, size, what the daemon
 * made of each) with its pictures as thumbnails, and the composer's files
 * waiting to be sent. A saved turn's picture is fetched with `file` once it
 * comes near the conversation's view, so a long conversation asks only for
 * what is read.
 */
import { sizeText } from "./attachments.js";
import { button, el } from "./dom.js";
import { isPicture, pictureKey } from "./files_model.js";

/** @typedef {import("../src/protocol/events.ts").FileView} FileView */
/** @typedef {import("./files_model.js").PictureCache} PictureCache */
/** @typedef {import("./attachments.js").Entry} Entry */
/**
 * Where a saved turn is, for its pictures: its conversation and its place
 * in `conversation.turns`; null where none can be fetched (a private or
 * unsaved conversation, a turn in flight or not kept).
 * @typedef {{conversation: number, turn: number} | null} Place
 */
/** @typedef {{files?: FileView[], sources?: (string | null)[]}} WithFiles */
/**
 * A picture waiting to be drawn.
 * @typedef {{key: string, conversation: number, turn: number, index: number,
 *   file: FileView, item: HTMLElement, img: HTMLImageElement}} Waiting
 */

/** @type {Record<string, string>} What the daemon made of a file, in words. */
const KINDS = {
  text: "text",
  image: "picture",
  converted: "converted to text",
};

/** A file's kind in words; a kind from a newer daemon as it names it. */
export function kindText(/** @type {string} */ kind) {
  return KINDS[kind] ?? kind;
}

/** A picture as a button that shows it larger or smaller. */
function thumbButton(/** @type {string} */ name) {
  const img = el("img");
  img.alt = name;
  img.decoding = "async";
  const thumb = button("thumb", "", `Show ${name} larger`);
  thumb.setAttribute("aria-expanded", "false");
  thumb.append(img);
  thumb.addEventListener("click", () => {
    const wide = thumb.getAttribute("aria-expanded") !== "true";
    thumb.setAttribute("aria-expanded", String(wide));
    thumb.title = `Show ${name} ${wide ? "smaller" : "larger"}`;
    thumb.closest(".file")?.classList.toggle("wide", wide);
  });
  return { thumb, img };
}

/** The pictures of the turns drawn, each fetched once it comes into sight. */
export class Thumbs {
  /** @type {Map<Element, Waiting>} By its thumbnail button. */
  #waiting = new Map();
  #observer;
  /**
   * Asks for a saved turn's picture (the page sends `file`).
   * @type {(conversation: number, turn: number, index: number, file: FileView) => void}
   */
  want = () => {};

  /** @param {HTMLElement} root the conversation's scrolling box */
  constructor(root) {
    this.#observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const waiting = this.#waiting.get(entry.target);
        if (!entry.isIntersecting || !waiting) continue;
        this.#observer.unobserve(entry.target);
        this.want(
          waiting.conversation,
          waiting.turn,
          waiting.index,
          waiting.file,
        );
      }
      // A little ahead of the reader, so a picture is there when scrolled to.
    }, { root, rootMargin: "400px 0px" });
  }

  /**
   * Draws a turn's files into its list: chips, and a thumbnail for each
   * picture this page sent or can fetch.
   * @param {HTMLElement} list
   * @param {WithFiles} turn
   * @param {Place} place
   * @param {PictureCache} cache
   */
  draw(list, turn, place, cache) {
    const files = turn.files ?? [];
    list.hidden = files.length === 0;
    list.replaceChildren(...files.map((file, index) => {
      const item = el("li", "file");
      const key = place
        ? pictureKey(place.conversation, place.turn, index, file)
        : null;
      const src = turn.sources?.[index] ?? (key ? cache.src(key) : null);
      const fetchable = place && key && isPicture(file) && !cache.missing(key);
      if (isPicture(file) && (src || fetchable)) {
        item.classList.add("picture");
        const { thumb, img } = thumbButton(file.name);
        item.append(thumb);
        if (src) img.src = src;
        else if (place && key) {
          item.classList.add("loading");
          this.#waiting.set(thumb, { key, ...place, index, file, item, img });
          this.#observer.observe(thumb);
        }
      }
      item.append(
        el("span", "file-name", file.name),
        el(
          "span",
          "file-meta",
          `${sizeText(file.bytes)} · ${kindText(file.kind)}`,
        ),
      );
      return item;
    }));
  }

  /** Draws the pictures fetched since, where they wait; a picture that cannot be had leaves its chip. */
  fill(/** @type {PictureCache} */ cache) {
    for (const [thumb, waiting] of this.#waiting) {
      const src = cache.src(waiting.key);
      if (src) waiting.img.src = src;
      else if (cache.missing(waiting.key)) {
        thumb.remove();
        waiting.item.classList.remove("picture");
      } else continue;
      waiting.item.classList.remove("loading");
      this.#waiting.delete(thumb);
      this.#observer.unobserve(thumb);
    }
  }

  /** Forgets the pictures of turns no longer on the page (another conversation is shown). */
  sweep() {
    for (const [thumb] of this.#waiting) {
      if (thumb.isConnected) continue;
      this.#observer.unobserve(thumb);
      this.#waiting.delete(thumb);
    }
  }
}

/**
 * What a composer's file says under its name: its size as it will be
 * sent, and for a picture its size in pixels (and what it was before it
 * was drawn smaller).
 * @param {Entry} entry
 * @param {boolean} sending
 */
function attachedMeta(entry, sending) {
  if (entry.state === "preparing") return "reading…";
  if (entry.state === "failed") return "could not be read";
  const prepared = entry.prepared;
  let meta = sizeText(entry.bytes);
  if (prepared?.width && prepared.height) {
    meta += ` · ${prepared.width}×${prepared.height}`;
  }
  if (prepared?.scaled) {
    const { width, height } = prepared.scaled;
    meta += ` JPEG, from ${width}×${height}`;
  }
  return sending ? `${meta} · sending…` : meta;
}

/**
 * One file waiting in the composer, with its Remove button.
 * @param {Entry} entry
 * @param {boolean} sending
 */
export function attachedChip(entry, sending) {
  const item = el("li", `file attached ${entry.state}`);
  if (sending) item.classList.add("sending");
  item.dataset.id = String(entry.id);
  const src = entry.prepared?.src;
  if (src) {
    const img = el("img", "mini");
    img.src = src;
    img.alt = "";
    item.append(img);
  }
  const words = el("span", "file-words");
  words.append(
    el("span", "file-name", entry.name),
    el("span", "file-meta", attachedMeta(entry, sending)),
  );
  const scaled = entry.prepared?.scaled;
  if (scaled) {
    item.title = `Drawn smaller to send: ${scaled.width}×${scaled.height} ${
      sizeText(scaled.bytes)
    } ${scaled.mime} became ${entry.prepared?.width}×${entry.prepared?.height} ${
      sizeText(entry.bytes)
    } JPEG`;
  }
  const remove = button("remove", "×", `Remove ${entry.name}`);
  remove.setAttribute("aria-label", `Remove ${entry.name}`);
  remove.disabled = sending;
  item.append(words, remove);
  return item;
}

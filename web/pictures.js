// @ts-check
/// <reference lib="dom" />
/**
 * Reads an attached file as it will be sent. A picture the browser can
 * draw goes as it is when attachments.js says it may, else it is drawn on
 * a canvas at a longest side of at most 1,536 px and sent as JPEG; any
 * other file (a picture the browser cannot draw included) goes as its
 * bytes, and the daemon says what it makes of them. A picture file past
 * DECODE_AT_MOST is never decoded: it is too large, as any file past what
 * a line can carry.
 */
import {
  fitWithin,
  jpegName,
  MAX_LINE_BYTES,
  mimeOf,
  sendAsIs,
  toBase64,
} from "./attachments.js";

/** @typedef {import("./attachments.js").Prepared} Prepared */

const JPEG_QUALITY = 0.85;
/** Past this a file is not read: no line could carry it, and its size alone says so. */
const READ_AT_MOST = 4 * MAX_LINE_BYTES;
/**
 * Past this a picture file is not decoded: decoded, it takes four bytes a
 * pixel, many times its file (a 32 MiB photo is about 50 megapixels, 200 MB
 * drawn), so the tab could run out of memory before any size check. A
 * camera's photo is well within it.
 */
export const DECODE_AT_MOST = 32 * 1024 * 1024;

/**
 * A file made ready to send.
 * @param {File} file
 * @returns {Promise<Prepared>}
 */
export async function prepare(file) {
  const mime = mimeOf(file.type);
  if (mime.startsWith("image/") && file.size <= DECODE_AT_MOST) {
    const picture = await pictureOf(file, mime);
    if (picture) return picture;
  }
  if (file.size > READ_AT_MOST) {
    return { name: file.name, mime, bytes: file.size, data: null, src: null };
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  return {
    name: file.name,
    mime,
    bytes: bytes.length,
    data: toBase64(bytes),
    src: null,
  };
}

/**
 * A picture as it is, or drawn smaller as JPEG; null when the browser
 * cannot draw it.
 * @param {File} file
 * @param {string} mime
 * @returns {Promise<Prepared | null>}
 */
async function pictureOf(file, mime) {
  /** @type {ImageBitmap} */
  let bitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    return null;
  }
  try {
    const { width, height } = bitmap;
    if (sendAsIs(mime, width, height, file.size)) {
      const data = toBase64(new Uint8Array(await file.arrayBuffer()));
      return {
        name: file.name,
        mime,
        bytes: file.size,
        data,
        src: `data:${mime};base64,${data}`,
        width,
        height,
      };
    }
    const size = fitWithin(width, height);
    const canvas = new OffscreenCanvas(size.width, size.height);
    const context = canvas.getContext("2d");
    if (!context) return null;
    // JPEG keeps no transparency: what was clear becomes white, not black.
    context.fillStyle = "#ffffff";
    context.fillRect(0, 0, size.width, size.height);
    context.imageSmoothingQuality = "high";
    context.drawImage(bitmap, 0, 0, size.width, size.height);
    const blob = await canvas.convertToBlob({
      type: "image/jpeg",
      quality: JPEG_QUALITY,
    });
    const bytes = new Uint8Array(await blob.arrayBuffer());
    const data = toBase64(bytes);
    return {
      name: jpegName(file.name),
      mime: "image/jpeg",
      bytes: bytes.length,
      data,
      src: `data:image/jpeg;base64,${data}`,
      ...size,
      scaled: { width, height, bytes: file.size, mime },
    };
  } finally {
    bitmap.close();
  }
}

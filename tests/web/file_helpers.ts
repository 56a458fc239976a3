/**
 * What the page's file tests do as a user would, inside the browser: draw
 * a picture on a canvas (a chart, at any size), drop files on an element
 * and paste them, each with a real DataTransfer; and read back, outside
 * it, the size of a picture the page sent (PNG and JPEG headers).
 */
import type { Page } from "../support/puppeteer.ts";

/** A file made in the page: its name, type and bytes in base64, or a picture to draw. */
export type PageFile =
  | { name: string; type: string; base64: string }
  | { name: string; type: string; picture: { width: number; height: number } };

/** The script that turns PageFiles into File objects, shared by drop and paste. */
const MAKE_FILES = `
async function makeFiles(specs) {
  const files = [];
  for (const spec of specs) {
    if (spec.base64 !== undefined) {
      const bytes = Uint8Array.from(atob(spec.base64), (c) => c.charCodeAt(0));
      files.push(new File([bytes], spec.name, { type: spec.type }));
      continue;
    }
    const { width, height } = spec.picture;
    const canvas = new OffscreenCanvas(width, height);
    const g = canvas.getContext("2d");
    const sky = g.createLinearGradient(0, 0, 0, height);
    sky.addColorStop(0, "#dbe7fb");
    sky.addColorStop(1, "#ffffff");
    g.fillStyle = sky;
    g.fillRect(0, 0, width, height);
    const bars = [0.35, 0.42, 0.38, 0.55, 0.93, 0.61, 0.4, 0.36];
    const step = width / (bars.length + 1);
    bars.forEach((value, i) => {
      g.fillStyle = value > 0.9 ? "#c53030" : "#2d5bbf";
      const h = value * height * 0.8;
      g.fillRect(step * (i + 0.6), height * 0.9 - h, step * 0.7, h);
    });
    g.strokeStyle = "#1d2128";
    g.lineWidth = Math.max(1, width / 400);
    g.beginPath();
    g.moveTo(step * 0.4, height * 0.9);
    g.lineTo(width - step * 0.3, height * 0.9);
    g.stroke();
    g.fillStyle = "#1d2128";
    g.font = Math.max(10, Math.round(height / 14)) + "px sans-serif";
    g.fillText("CPU load, Monday", step * 0.6, height * 0.12);
    const blob = await canvas.convertToBlob({ type: spec.type });
    files.push(new File([blob], spec.name, { type: spec.type }));
  }
  return files;
}
`;

/** Drops files on the element as a drag from the desktop would: dragenter, dragover, drop. Resolves with the drop-zone mark seen during the drag. */
export async function dropFiles(
  page: Page,
  selector: string,
  files: PageFile[],
): Promise<{ marked: boolean }> {
  return await page.evaluate(
    `(async () => {
      ${MAKE_FILES}
      const target = document.querySelector(${JSON.stringify(selector)});
      const data = new DataTransfer();
      for (const file of await makeFiles(${JSON.stringify(files)})) {
        data.items.add(file);
      }
      const fire = (type) => target.dispatchEvent(new DragEvent(type, {
        bubbles: true, cancelable: true, dataTransfer: data,
      }));
      fire("dragenter");
      fire("dragover");
      const marked = document.querySelector("main").classList.contains("dropping");
      fire("drop");
      return { marked };
    })()`,
  ) as { marked: boolean };
}

/** Pastes files into the element as the clipboard would bring them. Resolves with whether the page took the paste (the browser's own was prevented). */
export async function pasteFiles(
  page: Page,
  selector: string,
  files: PageFile[],
): Promise<boolean> {
  return await page.evaluate(
    `(async () => {
      ${MAKE_FILES}
      const target = document.querySelector(${JSON.stringify(selector)});
      target.focus();
      const data = new DataTransfer();
      for (const file of await makeFiles(${JSON.stringify(files)})) {
        data.items.add(file);
      }
      const event = new ClipboardEvent("paste", {
        bubbles: true, cancelable: true, clipboardData: data,
      });
      target.dispatchEvent(event);
      return event.defaultPrevented;
    })()`,
  ) as boolean;
}

/** A picture drawn in the page, as PNG bytes in base64. */
export async function pictureBase64(
  page: Page,
  width: number,
  height: number,
): Promise<string> {
  return await page.evaluate(
    `(async () => {
      ${MAKE_FILES}
      const [file] = await makeFiles([{ name: "p.png", type: "image/png",
        picture: { width: ${width}, height: ${height} } }]);
      const bytes = new Uint8Array(await file.arrayBuffer());
      let binary = "";
      for (const byte of bytes) binary += String.fromCharCode(byte);
      return btoa(binary);
    })()`,
  ) as string;
}

/** A picture's type and size in pixels from its header: PNG's IHDR or JPEG's start of frame. */
export function pictureSize(
  bytes: Uint8Array,
): { type: "png" | "jpeg"; width: number; height: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0) === 0x89504e47) {
    return {
      type: "png",
      width: view.getUint32(16),
      height: view.getUint32(20),
    };
  }
  if (view.getUint16(0) !== 0xffd8) throw new Error("neither PNG nor JPEG");
  for (let at = 2; at + 9 < bytes.length;) {
    const marker = view.getUint16(at);
    const length = view.getUint16(at + 2);
    // SOF0 to SOF15, except DHT (C4), JPG (C8) and DAC (CC).
    if (
      marker >= 0xffc0 && marker <= 0xffcf &&
      ![0xffc4, 0xffc8, 0xffcc].includes(marker)
    ) {
      return {
        type: "jpeg",
        height: view.getUint16(at + 5),
        width: view.getUint16(at + 7),
      };
    }
    at += 2 + length;
  }
  throw new Error("a JPEG without a frame");
}

/** The natural size of each thumbnail drawn in the element, 0×0 while one is not loaded. */
export async function thumbnails(
  page: Page,
  selector: string,
): Promise<{ alt: string; width: number; height: number }[]> {
  return await page.evaluate(
    `[...document.querySelectorAll(${
      JSON.stringify(`${selector} .thumb img`)
    })].map((img) => ({ alt: img.alt, width: img.naturalWidth, height: img.naturalHeight }))`,
  ) as { alt: string; width: number; height: number }[];
}

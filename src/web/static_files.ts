/**
 * The page's static files: read once from `web/` at start and served from
 * memory, so a request can only ever name a file that was there, and the
 * headers that keep the page to itself (no script, style or image from
 * anywhere else, no framing, no referrer).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AssistantError } from "../base/errors.ts";

/** The folder of the page's files: `web/` at the top of the repository. */
export const WEB_DIR: string = fileURLToPath(
  new URL("../../web", import.meta.url),
);

/** One file ready to serve. */
export interface StaticFile {
  body: Uint8Array<ArrayBuffer>;
  type: string;
}

/** Content types of the files the page is made of; other files are not served. */
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".txt": "text/plain; charset=utf-8",
};

/** Largest total size of the page's files: they are held in memory. */
const MAX_TOTAL_BYTES = 8 * 1024 * 1024;

/**
 * The policy every answer carries: scripts, styles and images from the
 * canvas itself only (images also as `data:`), connections only back to it,
 * nothing inline, no plugins, no framing, no form posts.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers on every answer of the canvas, files and refusals alike. */
export function securityHeaders(): Record<string, string> {
  return {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    // The token is in every address: nothing may keep a copy.
    "Cache-Control": "no-store",
  };
}

function extension(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot <= 0 ? "" : name.slice(dot).toLowerCase();
}

/** Reads every servable file under `dir` into a map keyed by its path (`/index.html`, `/vendor/x.mjs`); dot files are skipped. */
export async function loadStaticFiles(
  dir: string = WEB_DIR,
): Promise<Map<string, StaticFile>> {
  const files = new Map<string, StaticFile>();
  let total = 0;
  const walk = async (folder: string, prefix: string): Promise<void> => {
    const entries: Deno.DirEntry[] = [];
    for await (const entry of Deno.readDir(folder)) entries.push(entry);
    entries.sort((a, b) => a.name < b.name ? -1 : 1);
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory) {
        await walk(path, `${prefix}/${entry.name}`);
        continue;
      }
      const type = TYPES[extension(entry.name)];
      if (!entry.isFile || type === undefined) continue;
      const body = await Deno.readFile(path);
      total += body.length;
      if (total > MAX_TOTAL_BYTES) {
        throw new AssistantError(
          `The page's files in ${dir} pass ${MAX_TOTAL_BYTES} bytes: keep only the page in that folder`,
        );
      }
      files.set(`${prefix}/${entry.name}`, { body, type });
    }
  };
  try {
    await walk(dir, "");
  } catch (error) {
    if (error instanceof AssistantError) throw error;
    throw new AssistantError(
      `Cannot read the page's files in ${dir}: check that the folder exists and that --allow-read covers it`,
      { cause: error },
    );
  }
  if (!files.has("/index.html")) {
    throw new AssistantError(
      `${dir} has no index.html: point the canvas at the repository's web/ folder`,
    );
  }
  return files;
}

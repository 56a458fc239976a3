/**
 * Files a terminal client sends with a question (`chat`'s `/attach`, `ask
 * --file`): read with the user's own rights, typed by their name (a
 * picture by its bytes), and measured against the one line a question
 * travels in, so a question that cannot fit is refused before it is sent.
 */
import { basename, isAbsolute, join } from "node:path";
import {
  type Attachment,
  type Command,
  MAX_FILE_NAME,
  MAX_FILES,
  MAX_LINE_BYTES,
} from "../protocol/commands.ts";
import { commandLine } from "./client.ts";

/** A file read for a question. */
export interface Attached {
  /** Its name as shown: the path's last part. */
  name: string;
  /** The path as given, for messages. */
  path: string;
  mime: string;
  bytes: Uint8Array;
}

/** A file that cannot go with a question, or a question that cannot be sent: the message says which and why. */
export class AttachError extends Error {
  /** Creates the error; the message is shown as it is. */
  constructor(message: string) {
    super(message);
    this.name = "AttachError";
  }
}

const TEXT = "text/plain";

/** Types by a name's extension; anything else is application/octet-stream, and the daemon decides by the bytes. */
export const MIME_BY_EXTENSION: Readonly<Record<string, string>> = Object
  .freeze({
    txt: TEXT,
    text: TEXT,
    log: TEXT,
    md: "text/markdown",
    markdown: "text/markdown",
    csv: "text/csv",
    tsv: "text/tab-separated-values",
    json: "application/json",
    html: "text/html",
    htm: "text/html",
    css: "text/css",
    xml: "application/xml",
    svg: "image/svg+xml",
    yaml: "application/yaml",
    yml: "application/yaml",
    toml: "application/toml",
    js: "text/javascript",
    mjs: "text/javascript",
    cjs: "text/javascript",
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    webp: "image/webp",
    gif: "image/gif",
    pdf: "application/pdf",
    ...Object.fromEntries(
      [
        "ts",
        "tsx",
        "jsx",
        "py",
        "rs",
        "go",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "java",
        "kt",
        "swift",
        "rb",
        "php",
        "pl",
        "lua",
        "r",
        "scala",
        "cs",
        "sh",
        "bash",
        "zsh",
        "fish",
        "sql",
        "ini",
        "cfg",
        "conf",
        "diff",
        "patch",
        "tex",
        "rst",
        "org",
        "srt",
        "vtt",
      ].map((ext) => [ext, TEXT]),
    ),
  });

/** The four picture types the daemon reads, by the bytes they start with. */
function pictureType(bytes: Uint8Array): string | null {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) {
    return "image/png";
  }
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  const riff = starts(0x52, 0x49, 0x46, 0x46);
  const webp = [0x57, 0x45, 0x42, 0x50].every((b, i) => bytes[8 + i] === b);
  return riff && webp ? "image/webp" : null;
}

/** A file's type: a picture's by its bytes (a renamed PNG is still a PNG), else by its extension. */
export function mimeOf(name: string, bytes: Uint8Array = new Uint8Array()) {
  const picture = pictureType(bytes);
  if (picture !== null) return picture;
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
  return MIME_BY_EXTENSION[ext] ?? "application/octet-stream";
}

/** A size as people read it: `512 bytes`, `2.1 KB`, `740 KB`, `3.2 MB` (KB of 1,024 bytes). */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? "" : "s"}`;
  const kb = bytes / 1024;
  if (kb < 10) return `${kb.toFixed(1)} KB`;
  if (kb < 1024) return `${Math.round(kb).toLocaleString("en-US")} KB`;
  return `${(kb / 1024).toFixed(1)} MB`;
}

/** The files of one question together at most, as people are told it: about 750 KB once in base64 on a 1 MiB line. */
const FILES_LIMIT_TEXT = "one question carries at most about 750 KB";

/** Bytes whose base64 alone fills the line: no file this big can go. */
const LARGEST_FILE = Math.floor(MAX_LINE_BYTES / 4) * 3;

/** The name shown for a path: its last part, cut to the protocol's length keeping its extension. */
export function shownName(path: string): string {
  const name = basename(path) || path;
  if (name.length <= MAX_FILE_NAME) return name;
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : "";
  return name.slice(0, MAX_FILE_NAME - ext.length - 1) + "…" + ext;
}

/** Where a client finds the files it is named. */
export interface FileSource {
  /** Relative paths start here: where the user started the client; null for this process's own working directory. */
  cwd: string | null;
  /** `~` at a path's start means this; null leaves it as typed. */
  home: string | null;
  stat?: (path: string) => Promise<Deno.FileInfo>;
  readFile?: (path: string) => Promise<Uint8Array>;
}

/** The path a user typed, made absolute (`~/x` in the home directory, `x` where the client was started). */
export function resolvePath(path: string, source: FileSource): string {
  if (source.home !== null && (path === "~" || path.startsWith("~/"))) {
    return join(source.home, path.slice(1));
  }
  return isAbsolute(path) || source.cwd === null
    ? path
    : join(source.cwd, path);
}

/** Why a path cannot be read, in words. */
function readProblem(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) {
    return "permission denied";
  }
  if (error instanceof Deno.errors.NotCapable) {
    return "this client was started without a read grant for it (deno task chat and deno task ask give one)";
  }
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  return error instanceof Error ? error.message : String(error);
}

/** Reads one file for a question; AttachError naming the path and why it cannot go. */
export async function readAttachment(
  path: string,
  source: FileSource,
): Promise<Attached> {
  const full = resolvePath(path, source);
  const stat = source.stat ?? Deno.stat;
  const readFile = source.readFile ?? Deno.readFile;
  let bytes: Uint8Array;
  try {
    const info = await stat(full);
    if (info.isDirectory) {
      throw new AttachError(`cannot read ${path}: it is a directory`);
    }
    if (!info.isFile) {
      throw new AttachError(`cannot read ${path}: it is not a regular file`);
    }
    // Measured before it is read: a huge file is never loaded.
    if (info.size > LARGEST_FILE) {
      throw new AttachError(
        `${path} is ${formatSize(info.size)}; ${FILES_LIMIT_TEXT}`,
      );
    }
    bytes = await readFile(full);
  } catch (error) {
    if (error instanceof AttachError) throw error;
    throw new AttachError(`cannot read ${path}: ${readProblem(error)}`);
  }
  if (bytes.length === 0) throw new AttachError(`${path} is empty`);
  const name = shownName(path);
  return { name, path, mime: mimeOf(name, bytes), bytes };
}

/** The files as a command carries them (the path stays with the client). */
export function asAttachments(files: readonly Attached[]): Attachment[] {
  return files.map(({ name, mime, bytes }) => ({ name, mime, data: bytes }));
}

/** Refuses a file beyond the number one question carries. */
export function checkCount(count: number): void {
  if (count > MAX_FILES) {
    throw new AttachError(
      `one question carries at most ${MAX_FILES} files, not ${count}`,
    );
  }
}

const encoder = new TextEncoder();

/** Bytes of a command's line, without its newline, as the daemon counts them. */
export function lineBytes(command: Command): number {
  return encoder.encode(commandLine(command)).length;
}

/** Refuses a command too long for the line it travels in, saying by how much in words a person can act on; the files are those it carries. */
export function checkLine(
  command: Command,
  files: readonly Attached[],
): void {
  const bytes = lineBytes(command);
  if (bytes <= MAX_LINE_BYTES) return;
  if (files.length > 0) {
    const total = files.reduce((sum, file) => sum + file.bytes.length, 0);
    const text = (command as { text?: unknown }).text;
    const typed = typeof text === "string" ? encoder.encode(text).length : 0;
    throw new AttachError(
      `the files are ${formatSize(total)} together; ${FILES_LIMIT_TEXT}` +
        (typed >= 1024 ? `, less the question's own ${formatSize(typed)}` : ""),
    );
  }
  throw new AttachError(
    `the question is ${
      formatSize(bytes)
    }; one question carries at most 1 MB (the daemon's line limit): shorten it`,
  );
}

/** A question (`ask` or `edit`) with the files attached, refused with an AttachError when its line would pass the daemon's limit. */
export function questionCommand(
  type: "ask" | "edit",
  text: string,
  ref: string,
  files: readonly Attached[],
): Command {
  const command: Command = {
    type,
    text,
    ref,
    ...(files.length > 0 ? { files: asAttachments(files) } : {}),
  };
  checkLine(command, files);
  return command;
}

/**
 * Files sent with a question: what each becomes, decided by its type and
 * its bytes, in this order: a type with a converter is converted (even when
 * its bytes are text); a picture type is a picture, and bytes that are not
 * that picture are refused even when they are text; then text (valid UTF-8
 * without NUL, whatever its type); anything else is refused. Then how they
 * ride in the question: each text whole, after the typed text, in a fenced
 * block; each picture as an `image_url` part. The history keeps a picture
 * as a reference (`attachment:N`) to its bytes, kept once beside the turn.
 */
import { AssistantError, loggedName } from "../base/errors.ts";
import type { ChatMessage, ContentPart } from "../llm/chat_types.ts";
import type { Attachment, FileKind } from "../protocol/protocol.ts";
import type { StoredFile } from "../store/store.ts";

/** A file of a question, read: what it became, its text, a picture's bytes. */
export type QuestionFile = StoredFile;

/** The first bytes of each picture type the model may be sent. */
const SIGNATURES: Readonly<Record<string, (bytes: Uint8Array) => boolean>> = {
  "image/png": (b) =>
    starts(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  "image/jpeg": (b) => starts(b, [0xff, 0xd8, 0xff]),
  "image/gif": (b) =>
    starts(b, [0x47, 0x49, 0x46, 0x38]) && (b[4] === 0x37 || b[4] === 0x39) &&
    b[5] === 0x61,
  "image/webp": (b) =>
    starts(b, [0x52, 0x49, 0x46, 0x46]) &&
    starts(b.subarray(8), [0x57, 0x45, 0x42, 0x50]),
};

function starts(bytes: Uint8Array, prefix: number[]): boolean {
  return prefix.every((byte, i) => bytes[i] === byte);
}

/** Whether a type is one of the pictures the model may be sent. */
function isPictureType(mime: string): boolean {
  return Object.hasOwn(SIGNATURES, mime);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The text of bytes that are valid UTF-8 without NUL; null for anything else. */
function textOf(bytes: Uint8Array): string | null {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return null;
  }
  return text.includes("\0") ? null : text;
}

/** How a file's type is converted: the converters by type, and a run of one. */
export interface Reading {
  /** Whether a converter serves this type. */
  converts(mime: string): boolean;
  /** The text of a file of that type; AssistantError `convert_failed` when it cannot be had (`signal` ends the converter). */
  convert(
    mime: string,
    name: string,
    bytes: Uint8Array,
    signal: AbortSignal,
  ): Promise<string>;
}

/** What the files of a question become; AssistantError `bad_file` (or `convert_failed`) naming the first that cannot be sent. `signal` ends a conversion. */
export async function readFiles(
  files: readonly Attachment[],
  reading: Reading,
  signal: AbortSignal,
): Promise<QuestionFile[]> {
  const read: QuestionFile[] = [];
  for (const { name, mime, data } of files) {
    const base = { name, mime, bytes: data.length };
    const file = (kind: FileKind, text: string | null): QuestionFile => ({
      ...base,
      kind,
      text,
      data: kind === "image" ? data : null,
    });
    if (reading.converts(mime)) {
      const text = await reading.convert(mime, name, data, signal);
      read.push(file("converted", text));
    } else if (isPictureType(mime)) {
      if (!SIGNATURES[mime]!(data)) {
        throw badFile(name, `its bytes are not a picture of type ${mime}`);
      }
      read.push(file("image", null));
    } else {
      const text = textOf(data);
      if (text === null) {
        throw badFile(
          name,
          `${mime} is neither text nor a picture, and no converter is configured for it`,
        );
      }
      read.push(file("text", text));
    }
  }
  return read;
}

/** `bad_file` for the file named: the client is told its name, a log only its length. */
function badFile(name: string, why: string): AssistantError {
  return new AssistantError(`${name}: ${why}`, {
    code: "bad_file",
    forLog: `${loggedName(name)}: ${why}`,
  });
}

/** A fence longer than any run of backticks inside the text, and at least three. */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const run of text.matchAll(/`+/g)) {
    longest = Math.max(longest, run[0].length);
  }
  return "`".repeat(Math.max(3, longest + 1));
}

/** The question's text with each file's text after it, named and fenced. */
function questionText(stamped: string, files: readonly QuestionFile[]): string {
  let text = stamped;
  for (const file of files) {
    if (file.text === null) continue;
    const fence = fenceFor(file.text);
    text += `\n\nFile ${file.name}:\n${fence}\n${file.text}\n${fence}`;
  }
  return text;
}

/** Data URLs made, by the bytes they were made of: the question's request and its turn in the history share one string. */
const urls = new WeakMap<Uint8Array, string>();

/** A picture's data URL, as llama-server's OpenAI API takes it; made once for the same bytes. */
export function dataUrl(file: Pick<QuestionFile, "mime" | "data">): string {
  if (file.data === null) return `data:${file.mime};base64,`;
  let url = urls.get(file.data);
  if (url === undefined) {
    url = `data:${file.mime};base64,${file.data.toBase64()}`;
    urls.set(file.data, url);
  }
  return url;
}

/**
 * The question as the history keeps it: its text with the files' text, and
 * a reference `attachment:N` for each picture (N its place among the files).
 */
export function questionContent(
  stamped: string,
  files: readonly QuestionFile[],
): string | ContentPart[] {
  const text = questionText(stamped, files);
  const pictures = files.flatMap((file, index) =>
    file.kind === "image" ? [index] : []
  );
  if (pictures.length === 0) return text;
  return [
    { type: "text", text },
    ...pictures.map((index): ContentPart => ({
      type: "image_url",
      image_url: { url: `attachment:${index}` },
    })),
  ];
}

const REFERENCE = /^attachment:(\d+)$/;

/** Whether a turn's messages refer to pictures kept beside it. */
export function refersToPictures(messages: readonly ChatMessage[]): boolean {
  return messages.some((message) =>
    message.role === "user" && Array.isArray(message.content) &&
    message.content.some((part) =>
      part.type === "image_url" && REFERENCE.test(part.image_url.url)
    )
  );
}

/** What a model that reads no pictures is sent for an earlier turn's picture. */
export function pictureText(name: string): string {
  return `[picture ${name}: the model in use does not read pictures]`;
}

/**
 * A turn's messages for a model that reads no pictures: each picture
 * reference made a line of text naming it (`name(N)`), so a conversation
 * goes on after a switch to such a model, and the model knows a picture
 * was there. A question left with text alone is one string again.
 */
export function withoutPictures(
  messages: readonly ChatMessage[],
  name: (index: number) => string,
): ChatMessage[] {
  return messages.map((message) => {
    if (message.role !== "user" || !Array.isArray(message.content)) {
      return message;
    }
    const lines = message.content.map((part) => {
      if (part.type === "text") return part.text;
      const reference = REFERENCE.exec(part.image_url.url);
      return pictureText(reference ? name(Number(reference[1])) : "");
    });
    return { ...message, content: lines.join("\n\n") };
  });
}

/** A turn's messages as sent: each picture reference made its data URL, from `picture(N)`. */
export function withPictures(
  messages: readonly ChatMessage[],
  picture: (index: number) => string,
): ChatMessage[] {
  return messages.map((message) => {
    if (message.role !== "user" || !Array.isArray(message.content)) {
      return message;
    }
    const content = message.content.map((part): ContentPart => {
      const reference = part.type === "image_url"
        ? REFERENCE.exec(part.image_url.url)
        : null;
      return reference
        ? {
          type: "image_url",
          image_url: { url: picture(Number(reference[1])) },
        }
        : part;
    });
    return { ...message, content };
  });
}

/** Files for the clients' tests of questions with files, and what the model was sent of them. */
import type { FakeModel } from "../support/fake_llm.ts";
import { SINGLE_ID } from "../support/fake_llm_models.ts";

/** The fake's model served with a projector: it reads pictures, so the daemon sends them. */
export const VISION: FakeModel = { id: SINGLE_ID, vision: true };

/** A one-pixel PNG: the smallest picture the daemon takes for one. */
export const PNG_1PX: Uint8Array = Uint8Array.fromBase64(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
);

/** The last message of a chat request: its text and the data URLs of its pictures. */
export function sentContent(body: unknown): { text: string; images: string[] } {
  const messages = (body as { messages?: { content?: unknown }[] } | null)
    ?.messages;
  const content = messages?.at(-1)?.content;
  if (typeof content === "string") return { text: content, images: [] };
  const parts = Array.isArray(content) ? content : [];
  let text = "";
  const images: string[] = [];
  for (const part of parts) {
    if (part?.type === "text") text += part.text;
    if (part?.type === "image_url") images.push(part.image_url?.url);
  }
  return { text, images };
}

/**
 * A finished turn as its conversation holds it, and its messages as a
 * request sends them: a picture kept as a reference to its bytes (beside
 * the turn in the history file) is made its data URL when first needed.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import type { TurnView } from "../protocol/protocol.ts";
import type { Store } from "../store/store.ts";
import {
  dataUrl,
  type QuestionFile,
  refersToPictures,
  withPictures,
} from "./attachments.ts";

/** One finished turn as its conversation holds it. */
export interface HeldTurn {
  readonly view: TurnView;
  /** Its messages as kept: pictures as references to `files`. */
  readonly messages: ChatMessage[];
  /** The files sent with its question; a picture read back has its bytes only once asked for. */
  readonly files: readonly QuestionFile[];
  tokens: number | null;
  /** Its row in the history file; null when not saved (a private conversation's). */
  readonly row: number | null;
  /** Its messages as sent, pictures made data URLs; made when first needed. */
  sent?: ChatMessage[];
}

/** A held turn's picture's bytes: in memory, else read from the history. */
export function pictureOf(
  turn: HeldTurn,
  index: number,
  store: Pick<Store, "fileData">,
): Uint8Array | null {
  const file = turn.files[index];
  if (file?.data) return file.data;
  return turn.row === null ? null : store.fileData(turn.row, index);
}

/** A held turn's messages as a request sends them. */
export function sendable(
  turn: HeldTurn,
  store: Pick<Store, "fileData">,
): ChatMessage[] {
  if (!refersToPictures(turn.messages)) return turn.messages;
  turn.sent ??= withPictures(turn.messages, (index) =>
    dataUrl({
      mime: turn.files[index]?.mime ?? "",
      data: pictureOf(turn, index, store),
    }));
  return turn.sent;
}

/**
 * A finished turn as its conversation holds it (read back from the history,
 * or kept when it ends), and its messages as a request sends them: a
 * picture kept as a reference to its bytes (beside the turn in the history
 * file) is made its data URL when first needed, and its bytes are let go
 * then; a model that reads no pictures gets a line of text for each instead.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import type { ModelChoice } from "../llm/client.ts";
import type { TurnView } from "../protocol/protocol.ts";
import {
  fileView,
  type OpenedConversation,
  type Store,
} from "../store/store.ts";
import {
  dataUrl,
  type QuestionFile,
  refersToPictures,
  withoutPictures,
  withPictures,
} from "./attachments.ts";

/** One finished turn as its conversation holds it. */
export interface HeldTurn {
  readonly view: TurnView;
  /** Its messages as kept: pictures as references to `files`. */
  readonly messages: ChatMessage[];
  /**
   * The files sent with its question. A picture is held in one form: its
   * bytes until its data URL is made (`sent`), then that URL alone; a picture
   * read back from the history has its bytes only once asked for.
   */
  files: readonly QuestionFile[];
  tokens: number | null;
  /** Its row in the history file; null when not saved (a private conversation's). */
  readonly row: number | null;
  /** Its messages as sent, pictures made data URLs; made when first needed. */
  sent?: ChatMessage[];
}

/** What a finished turn leaves to keep. */
export interface FinishedTurn {
  user: string;
  reply: string;
  tools: string[];
  /** Its messages under the history rule. */
  messages: ChatMessage[];
  files: readonly QuestionFile[];
  replaces: boolean;
  model: ModelChoice;
}

/** The turns of a conversation read back from the history. */
export function openedTurns(opened: OpenedConversation): HeldTurn[] {
  return opened.turns.map((view, i) => ({
    view,
    messages: opened.messages[i] ?? [],
    files: opened.files[i] ?? [],
    tokens: opened.tokens[i] ?? null,
    row: opened.rows[i] ?? null,
  }));
}

/** A finished turn as held once kept; `row` null when it was not saved. */
export function heldTurn(
  turn: FinishedTurn,
  row: number | null,
  store: Pick<Store, "fileData">,
): HeldTurn {
  const held: HeldTurn = {
    view: {
      user: turn.user,
      reply: turn.reply,
      tools: turn.tools,
      ...(turn.files.length > 0 ? { files: turn.files.map(fileView) } : {}),
    },
    messages: turn.messages,
    files: turn.files,
    tokens: null,
    row,
  };
  // Its pictures' URLs are the ones just sent: held as those from now.
  sendable(held, store);
  return held;
}

/** A held turn's picture's bytes: in memory, else from its data URL or the history. */
export function pictureOf(
  turn: HeldTurn,
  index: number,
  store: Pick<Store, "fileData">,
): Uint8Array | null {
  const file = turn.files[index];
  if (file?.data) return file.data;
  if (turn.row !== null) return store.fileData(turn.row, index);
  // A private conversation's picture lives on only in the URL it was sent as.
  const url = turn.sent && sentUrl(turn.messages, turn.sent, index);
  const base64 = url?.slice(url.indexOf(",") + 1);
  return base64 ? Uint8Array.fromBase64(base64) : null;
}

/** The data URL `sent` carries where `messages` refer to picture `index`. */
function sentUrl(
  messages: readonly ChatMessage[],
  sent: readonly ChatMessage[],
  index: number,
): string | null {
  const reference = `attachment:${index}`;
  for (const [i, message] of messages.entries()) {
    if (message.role !== "user" || !Array.isArray(message.content)) continue;
    const at = message.content.findIndex((part) =>
      part.type === "image_url" && part.image_url.url === reference
    );
    const content = sent[i]?.content;
    const part = at === -1 || !Array.isArray(content) ? null : content[at];
    if (part?.type === "image_url") return part.image_url.url;
  }
  return null;
}

/**
 * A held turn's messages as a request sends them: pictures as data URLs, or,
 * for a model that reads none (`blind`), as a line of text naming each.
 */
export function sendable(
  turn: HeldTurn,
  store: Pick<Store, "fileData">,
  blind = false,
): ChatMessage[] {
  if (!refersToPictures(turn.messages)) return turn.messages;
  if (blind) {
    return withoutPictures(
      turn.messages,
      (index) => turn.files[index]?.name ?? "",
    );
  }
  if (turn.sent === undefined) {
    turn.sent = withPictures(turn.messages, (index) =>
      dataUrl({
        mime: turn.files[index]?.mime ?? "",
        data: pictureOf(turn, index, store),
      }));
    // The URL is now the picture's one form in memory.
    turn.files = turn.files.map((file) =>
      file.data === null ? file : { ...file, data: null }
    );
  }
  return turn.sent;
}

/**
 * The conversation in memory: what clients are shown of it, what the model is
 * sent of it, and each turn's size. A finished turn is saved (a private
 * conversation's is not), then lands in every copy in memory that shows the
 * conversation, and its size, known later, wherever its messages still are.
 */
import { AssistantError } from "../base/errors.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import type { SummaryView, TurnView } from "../protocol/protocol.ts";
import type { Store, StoredTurn } from "../store/store.ts";

/** A conversation's running summary as the assistant holds it. */
export interface Summary {
  text: string;
  /** How many of the conversation's first turns it covers. */
  turns: number;
  /** Its size in the model's tokens; null when unknown. */
  tokens: number | null;
  /**
   * The turn whose question carries it to the model, so that every request
   * after it begins the same way; null until a question carries it.
   */
  carrier: number | null;
}

/** One conversation as the assistant holds it; id null until its first save. */
export interface Conversation {
  id: number | null;
  turns: TurnView[];
  messages: ChatMessage[][];
  /** Each turn's measured size in tokens; null where unknown. */
  tokens: (number | null)[];
  /** In memory only: never saved, listed or searched; gone once not current. */
  private: boolean;
  /** Where the last request of this conversation started its window, in this run; null before one. */
  windowStart: number | null;
  /** What the turns that left the window said; null while none has. */
  summary: Summary | null;
  /** The window start a summary was last asked for in this run and could not be made; null when none failed. */
  summaryFailedAt: number | null;
  /** The messages of the last request a turn of this conversation sent, and the reply that ended it: a summary request begins with them, so the server reuses its cache. */
  lastRequest: ChatMessage[] | null;
}

/** A new conversation with no turns, not yet saved. */
export function emptyConversation(isPrivate = false): Conversation {
  return {
    id: null,
    turns: [],
    messages: [],
    tokens: [],
    private: isPrivate,
    windowStart: null,
    summary: null,
    summaryFailedAt: null,
    lastRequest: null,
  };
}

/** The summary as clients are shown it; null while there is none. */
export function summaryView(conversation: Conversation): SummaryView | null {
  const { summary } = conversation;
  return summary && { text: summary.text, turns: summary.turns };
}

/** The earlier turns a reply is asked with: a retry is asked as if the turn it replaces had not been. */
export function historyOf(
  conversation: Conversation,
  replaces: boolean,
): { history: ChatMessage[][]; counts: (number | null)[] } {
  return replaces
    ? {
      history: conversation.messages.slice(0, -1),
      counts: conversation.tokens.slice(0, -1),
    }
    : { history: conversation.messages, counts: conversation.tokens };
}

/**
 * Saves a finished turn (a private conversation's stays in memory: id
 * null); `title` is the conversation's new title when replacing its first
 * turn changed it.
 */
export function saveTurn(
  store: Store,
  conversation: Conversation,
  turn: StoredTurn,
  replaces: boolean,
): { id: number | null; title: string | null } {
  if (conversation.private) return { id: null, title: null };
  try {
    if (replaces && conversation.id !== null) {
      const title = store.replaceLastTurn(conversation.id, turn);
      return { id: conversation.id, title };
    }
    return { id: store.saveTurn(conversation.id, turn), title: null };
  } catch (error) {
    if (error instanceof AssistantError) throw error;
    throw new AssistantError("could not save the reply", {
      cause: error,
      code: "save_failed",
    });
  }
}

/**
 * Records a finished turn, saved under `id`, in the conversation it was asked
 * in and in the current one when that is the same conversation reopened.
 */
export function rememberTurn(
  conversation: Conversation,
  current: Conversation,
  id: number | null,
  turn: StoredTurn,
  replaces: boolean,
): void {
  const view: TurnView = {
    user: turn.user,
    reply: turn.reply,
    tools: turn.tools,
  };
  const targets = new Set([conversation]);
  // The same conversation may have been reopened meanwhile as a new object.
  if (id !== null && current.id === id && !current.private) {
    targets.add(current);
  }
  for (const target of targets) {
    target.id = id;
    if (replaces && target.turns.length > 0) {
      target.turns[target.turns.length - 1] = view;
      target.messages[target.messages.length - 1] = turn.messages;
      target.tokens[target.tokens.length - 1] = turn.tokens ?? null;
    } else {
      target.turns.push(view);
      target.messages.push(turn.messages);
      target.tokens.push(turn.tokens ?? null);
    }
  }
}

/**
 * Records a turn's size, measured after its `done`, in each conversation that
 * still holds its messages: a retry may have replaced the turn meanwhile.
 */
export function recordTokens(
  targets: readonly Conversation[],
  messages: ChatMessage[],
  tokens: number,
): void {
  for (const target of new Set(targets)) {
    const index = target.messages.lastIndexOf(messages);
    if (index !== -1) target.tokens[index] = tokens;
  }
}

/** Whether two conversations in memory are the same one (a saved one may be opened again as another object). */
export function sameConversation(a: Conversation, b: Conversation): boolean {
  return a === b || (a.id !== null && a.id === b.id);
}

/** Records in a conversation what its finished turn's last request was: where the next one picks up. */
export function rememberRequest(
  target: Conversation,
  request: {
    start: number;
    request: ChatMessage[];
    carrier: number | null;
  },
): void {
  target.windowStart = request.start;
  target.lastRequest = request.request;
  if (target.summary && request.carrier !== null) {
    target.summary.carrier = request.carrier;
  }
}

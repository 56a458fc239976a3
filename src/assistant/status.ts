/**
 * What the daemon tells of itself in `hello`: its state, the model in use and
 * how full its context is. The status is a fold of the events that went out
 * (and of the few a turn yields for it alone), so it can never disagree with
 * what the clients were told; `helloEvent` sums it up with the conversation
 * and the reply in flight for a client that connects later.
 */
import type {
  BackendView,
  ConfirmView,
  Event,
  HelloPending,
  PendingView,
  ProposalView,
} from "../protocol/protocol.ts";
import type { Conversation } from "./conversation.ts";

type Hello = Extract<Event, { type: "hello" }>;

/** The fields of `hello` that the status fills. */
export type StatusView = Pick<
  Hello,
  | "state"
  | "tool"
  | "model"
  | "ctx_used"
  | "ctx_max"
  | "ctx_sent"
  | "ctx_total"
  | "ctx_summarized"
>;

/** Events the status learns from that no client is sent. */
export type StatusNote =
  /** A turn chose its model, whose context size is known or not. */
  | { type: "model"; id: string; ctx_max: number | null }
  /** A request used this many tokens of the context. */
  | { type: "usage"; used: number }
  /** Earlier turns the last request in the current conversation carried, of how many, and how many its summary covers. */
  | {
    type: "window";
    sent: number;
    total: number;
    summarized: number;
    /** What the server reported for the turn; null when it reported nothing. */
    used: number | null;
  };

/** What the status folds. */
export type StatusEvent = Event | StatusNote;

/** Whether an event is for the status alone. */
export function isNote(event: StatusEvent): event is StatusNote {
  return event.type === "model" || event.type === "usage" ||
    event.type === "window";
}

/** Idle, with nothing known. */
export const INITIAL_STATUS: StatusView = Object.freeze({
  state: "idle",
  model: null,
  ctx_used: null,
  ctx_max: null,
  ctx_sent: null,
  ctx_total: null,
  ctx_summarized: null,
});

/** The status after one more event. */
export function foldStatus(status: StatusView, event: StatusEvent): StatusView {
  switch (event.type) {
    case "state": {
      const { tool: _tool, ...rest } = status;
      return {
        ...rest,
        state: event.state,
        ...(event.tool !== undefined ? { tool: event.tool } : {}),
      };
    }
    case "model":
      return { ...status, model: event.id, ctx_max: event.ctx_max };
    case "usage":
      return { ...status, ctx_used: event.used };
    case "ctx":
      return { ...status, ctx_used: event.used, ctx_max: event.max };
    case "window":
      return {
        ...status,
        ctx_used: event.used,
        ctx_sent: event.sent,
        ctx_total: event.total,
        ctx_summarized: event.summarized,
      };
    case "conversation":
      // What the last request carried was about the conversation before.
      return {
        ...status,
        ctx_used: null,
        ctx_sent: null,
        ctx_total: null,
        ctx_summarized: null,
      };
    default:
      return status;
  }
}

/** What a `hello` is made of. */
export interface HelloParts {
  status: StatusView;
  backend: BackendView | undefined;
  current: Conversation;
  /** The reply in flight and the conversation it belongs to. */
  reply: { conversation: Conversation; pending: PendingView } | null;
  /** The call waiting for the user's approval, if any. */
  waiting: ConfirmView | null;
  /** The facts proposed and not yet answered. */
  proposed: ProposalView[];
}

/** The `hello` for a client that just connected. */
export function helloEvent(parts: HelloParts): Event {
  const { backend, current, waiting, proposed } = parts;
  return {
    type: "hello",
    ...parts.status,
    ...(backend ? { backend } : {}),
    id: current.id,
    turns: current.turns,
    pending: helloPending(parts),
    ...(waiting ? { confirm: waiting } : {}),
    ...(current.private ? { private: true as const } : {}),
    ...(current.summary ? { summary: current.summary } : {}),
    memories: current.memories,
    ...(proposed.length > 0 ? { proposed } : {}),
  };
}

/**
 * The reply in flight with the conversation it belongs to. One that will
 * create its conversation while another (a `new` one) is current is left
 * out: both ids are null, and a client would show it in the wrong one.
 */
function helloPending(
  { reply, current, waiting }: HelloParts,
): HelloPending | null {
  if (!reply) return null;
  const { conversation, pending } = reply;
  if (conversation.id === null && conversation !== current) return null;
  return {
    id: conversation.id,
    ...pending,
    tools: [...pending.tools],
    ...(waiting ? { confirm: waiting } : {}),
  };
}

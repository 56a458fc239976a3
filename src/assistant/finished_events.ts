/**
 * What clients are told when a turn is kept: its `done`, the title a
 * replaced first turn gave, and the context figures of its last request.
 * A plain function of the turn's end, so the one place a turn ends
 * (`Replies`) only sends what it returns.
 */
import { refField } from "../protocol/protocol.ts";
import type { Conversation } from "./conversation.ts";
import type { StatusEvent } from "./status.ts";
import type { Turn, TurnResult } from "./turn.ts";

/** A kept turn as its events are made from it. */
export interface KeptTurn {
  turn: Turn;
  result: TurnResult;
  /** The conversation's new title when replacing its first turn changed it. */
  title: string | null;
  /** Whether the turn's conversation is the one shown now. */
  current: boolean;
  /** The context size known from `/props`, for a request that did not learn one. */
  ctxMax: number | null;
}

/** The events of a kept turn, in the order clients get them. */
export function finishedEvents(finished: KeptTurn): StatusEvent[] {
  const { turn, result, title } = finished;
  const conversation: Conversation = turn.conversation;
  const { id } = conversation;
  const events: StatusEvent[] = [{
    type: "done",
    id,
    stopped: false,
    ...(result.truncated
      ? { truncated: true as const, truncated_by: result.truncated }
      : {}),
    ...(turn.replaces ? { replaces: true as const } : {}),
    ...(result.timings ? { timings: result.timings } : {}),
    ...refField(turn.ref),
  }];
  if (id !== null && title !== null) {
    events.push({ type: "renamed", id, title });
  }
  const { plan } = result;
  const window = {
    sent: plan.sent,
    total: plan.total,
    summarized: conversation.summarized,
  };
  if (finished.current) {
    events.push({ type: "window", ...window, used: plan.used });
  }
  // What the server reported for this turn, or nothing: never a figure of
  // another conversation's.
  if (plan.used !== null) {
    events.push({
      type: "ctx",
      id,
      used: plan.used,
      // A refusal may have told the size /props did not.
      max: plan.nCtx ?? finished.ctxMax,
      ...window,
      memories: conversation.memories,
    });
  }
  return events;
}

/**
 * A conversation's last request, and what its next summary is worked out
 * from it: where the window will move, and the request that folds the turns
 * leaving it. That request begins as the last one did, so the server reuses
 * its cache; this is why the last request is kept at all. Plain functions:
 * the conversation alone holds its turns, its summary and that request
 * (one object per conversation), and hands them in.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import type { ModelChoice } from "../llm/client.ts";
import type { Store } from "../store/store.ts";
import type { ContextPlan } from "./budget.ts";
import { type HeldTurn, sendable } from "./held_turn.ts";
import { coveredStart } from "./history_window.ts";
import {
  planSummary,
  type RunningSummary,
  type SummaryPlan,
} from "./summary_request.ts";
import { type TokenLedger, utf8Bytes } from "./token_ledger.ts";
import type { TurnConfig } from "./turn_config.ts";

/** What the last finished turn's last request leaves the next one and the summary. */
export interface LastRequest {
  /** Where its window started. */
  start: number;
  /** Its messages and the reply that ended it: what the server's cache holds. */
  messages: ChatMessage[];
  model: ModelChoice;
  schemas: unknown[];
  /** Tokens the earlier turns could take in it. */
  room: number;
  nCtx: number | null;
  /** Tokens it and its reply took in the context; null when not reported. */
  used: number | null;
  /** Tokens of its fixed start (system prompt and tool schemas), as estimated. */
  fixed: number;
}

/** A summary request to make: its messages, the turns it covers once made, and the model and schemas its request names. */
export interface SummaryJob extends SummaryPlan {
  model: ModelChoice;
  schemas: unknown[];
}

/** A conversation as its next summary is worked out from it. */
export interface SummarySource {
  turns: readonly HeldTurn[];
  summary: RunningSummary | null;
  last: LastRequest;
}

/** The last request a finished turn leaves: its plan's last request and the reply that ended it (`final`), made with `model`. */
export function lastRequestOf(
  plan: ContextPlan,
  final: ChatMessage | undefined,
  model: ModelChoice,
): LastRequest {
  return {
    start: plan.start,
    messages: final ? [...plan.lastRequest, final] : [...plan.lastRequest],
    model,
    schemas: plan.schemas,
    room: plan.room,
    nCtx: plan.nCtx,
    used: plan.used,
    fixed: plan.carried().fixed,
  };
}

/** Where the summary must reach before the next request (at most `coverable`), or null when no move is due or the last try at it failed. */
export function dueSummary(
  deps: { ledger: TokenLedger; config: TurnConfig },
  source: SummarySource,
  coverable: number,
  failedAt: number | null,
): number | null {
  // The next window is worked out for a question of the last one's size; a
  // summary that failed for this very move (`failedAt`) is not asked again.
  const { turns, last } = source;
  const summarized = source.summary?.turns ?? 0;
  const due = Math.min(
    coverable,
    coveredStart(
      turns.length,
      (i) =>
        deps.ledger.turnCost(
          last.model.id,
          turns[i]!.messages,
          turns[i]!.tokens,
        ),
      last.room,
      deps.config.history_turns,
      last.start,
      { summarized, hold: false, failedAt: null },
    ),
  );
  if (due <= summarized || (failedAt !== null && due <= failedAt)) {
    return null;
  }
  return due;
}

/** The request for the summary of the first `upTo` turns (at most `atMost` more of them, after a refusal); null when not one turn fits. */
export function summaryJob(
  deps: {
    store: Pick<Store, "fileData">;
    ledger: TokenLedger;
    config: TurnConfig;
  },
  source: SummarySource,
  upTo: number,
  atMost?: number,
): SummaryJob | null {
  const { config, ledger } = deps;
  const { turns, last } = source;
  const model = last.model.id;
  const plan = planSummary({
    turns: turns.map((turn) =>
      sendable(turn, deps.store, last.model.vision === false)
    ),
    summary: source.summary,
    lastRequest: last.messages,
    windowStart: last.start,
    upTo,
    maxTokens: config.summary_tokens,
    nCtx: last.nCtx,
    used: last.used,
    fixed: last.fixed,
    cost: (i) =>
      ledger.turnCost(
        model,
        turns[i]?.messages ?? [],
        turns[i]?.tokens ?? null,
      ),
    estimate: (text) => ledger.estimate(model, utf8Bytes(text)),
    ...(atMost === undefined ? {} : { atMost }),
  });
  return plan && { ...plan, model: last.model, schemas: last.schemas };
}

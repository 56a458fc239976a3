/**
 * The side request that folds the turns leaving the window into the running
 * summary: its messages begin exactly as the conversation's last request did
 * (so llama-server reuses that request's cache and reads little beyond the
 * instruction), it always fits the context beside the summary to come, and
 * the model's answer becomes the summary only when it is whole: no reasoning
 * in it, nothing cut by the token limit.
 */
import { chatBody } from "../llm/client.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import { replayTurns } from "./history_window.ts";
import { SUMMARY_INTRO } from "./prompt.ts";
import { withoutThinking } from "../llm/think_tags.ts";

/** Roughly how many words a token limit leaves room for. */
const WORDS_PER_TOKEN = 0.6;

/**
 * The instruction that ends a summary request: of the conversation up to
 * its last `kept` exchanges, or (0) of all of it that is shown; folding in
 * the summary the conversation began with, or the one given here (`summary`,
 * when the request does not show it where it rode). Short: the server reads
 * it anew for every summary.
 */
export function summaryInstruction(
  kept: number,
  folding: boolean,
  maxTokens: number,
  summary: string | null = null,
): string {
  const words = Math.max(20, Math.floor(maxTokens * WORDS_PER_TOKEN));
  const what = kept === 0
    ? "this conversation"
    : `this conversation up to, but not including, ${
      kept === 1 ? "its last exchange" : `its last ${kept} exchanges`
    }`;
  const fold = summary !== null
    ? ", with the summary of what came before it, below"
    : folding
    ? ", with the summary it began with"
    : "";
  const text =
    `Summarise ${what}${fold}: the facts, names, numbers, decisions and open questions a later answer may need, in its language, in at most ${words} words. Reply with the summary only.`;
  return summary === null ? text : `${text}\n\n${SUMMARY_INTRO}\n${summary}`;
}

/** Tokens kept free beside an estimate of a summary request's size: estimates err high, but not always by enough. */
const SUMMARY_MARGIN = 64;

/** A conversation's running summary, as a request may carry it. */
export interface RunningSummary {
  text: string;
  /** How many of the conversation's first turns it covers. */
  turns: number;
  /** Its size in the model's tokens; null when unknown. */
  tokens: number | null;
  /** The turn whose question carries it to the model; null until a question carries it. */
  carrier: number | null;
}

/** What a summary request is planned from. */
export interface SummaryPlanInput {
  /** The conversation's turns, each as its messages. */
  turns: readonly (readonly ChatMessage[])[];
  summary: RunningSummary | null;
  /** The messages of the conversation's last request and the reply that ended it; null before one. */
  lastRequest: readonly ChatMessage[] | null;
  /** Where that request started its window; null before one. */
  windowStart: number | null;
  /** The first turns the summary should cover once made. */
  upTo: number;
  /** `summary_tokens`: what the model may write. */
  maxTokens: number;
  /** The context size; null while unknown. */
  nCtx: number | null;
  /** Tokens the last request and its reply took in the context; null when not reported. */
  used: number | null;
  /** Tokens of a request's fixed start: the system prompt and the tool schemas. */
  fixed: number;
  /** A turn's size in tokens. */
  cost(index: number): number;
  /** A text's size in tokens. */
  estimate(text: string): number;
  /** At most this many turns, after a request the server refused for its length. */
  atMost?: number;
}

/** A summary request: its messages, and the first turns the summary will cover. */
export interface SummaryPlan {
  messages: ChatMessage[];
  upTo: number;
}

/**
 * The request for the summary of the first `upTo` turns. Where the
 * conversation's last request carried every turn the summary does not cover
 * yet, and it, its reply, the instruction and the summary fit the context,
 * it is that request and its reply, then the instruction: the server has
 * read all of it but the instruction. Otherwise (a move went ahead without a
 * summary, a window held open for one grew, a conversation opened again)
 * it is the system prompt and the uncovered turns alone, as many of them
 * from the first as fit the context beside the summary to come, so that
 * every request moves the summary on, however far behind it is. Null when
 * not one turn fits.
 */
export function planSummary(input: SummaryPlanInput): SummaryPlan | null {
  const { upTo, maxTokens, nCtx, used, summary } = input;
  const total = input.turns.length;
  const covered = summary?.turns ?? 0;
  const last = input.lastRequest;
  const system = last?.[0];
  if (last === null || system?.role !== "system") return null;
  if (upTo <= covered || upTo > total) return null;
  const folding = summary !== null;
  const start = input.windowStart;
  if (input.atMost === undefined && start !== null && start <= covered) {
    const content = summaryInstruction(total - upTo, folding, maxTokens);
    const fits = nCtx === null || used === null ||
      used + input.estimate(content) + maxTokens + SUMMARY_MARGIN <= nCtx;
    if (fits) return { messages: [...last, { role: "user", content }], upTo };
  }
  // The turns to fold in, replayed as the last request sent them (where its
  // window began there, that request's start: the server has read it), the
  // summary where it rode; one that rode later goes in the instruction.
  let room = (nCtx ?? Infinity) - maxTokens - SUMMARY_MARGIN - input.fixed -
    input.estimate(summaryInstruction(0, false, maxTokens)) -
    (summary ? summary.tokens ?? input.estimate(summary.text) : 0);
  let end = covered;
  while (end < upTo && end - covered < (input.atMost ?? Infinity)) {
    room -= input.cost(end);
    if (room < 0) break;
    end++;
  }
  if (end === covered) return null;
  const carrier = summary?.carrier ?? null;
  const rides = summary !== null && carrier !== null && carrier >= covered &&
    carrier < end;
  const turns = replayTurns(
    input.turns,
    covered,
    end,
    rides ? { turn: carrier, text: summary.text } : null,
  );
  const content = summaryInstruction(
    0,
    rides,
    maxTokens,
    summary !== null && !rides ? summary.text : null,
  );
  return {
    messages: [system, ...turns, { role: "user", content }],
    upTo: end,
  };
}

/** What the summary request sends besides its messages. */
export interface SummaryBodyInput {
  model: string;
  messages: ChatMessage[];
  /** The conversation's tool schemas: listed as its requests list them (they are part of the cached prompt), never called. */
  schemas: unknown[];
  request: Record<string, unknown>;
  cacheReuse: number;
  maxTokens: number;
}

/** The summary request's body: thinking off, no tool call allowed, at most `maxTokens`. */
export function summaryBody(input: SummaryBodyInput): Record<string, unknown> {
  const body = chatBody({
    model: input.model,
    messages: input.messages,
    tools: input.schemas,
    thinking: false,
    extra: input.request,
    cacheReuse: input.cacheReuse,
    ...(input.schemas.length > 0 ? { toolChoiceNone: true } : {}),
  });
  // Whatever [request] says, a summary has its own limit.
  delete body.n_predict;
  delete body.max_completion_tokens;
  body.max_tokens = input.maxTokens;
  return body;
}

/** The summary in what the model wrote: no reasoning, no label before it; null when nothing is left. */
export function summaryFrom(text: string): string | null {
  // A block that never closed is reasoning to the end.
  const bare = withoutThinking(text).trim()
    .replace(
      new RegExp(
        `^(?:#+\\s*)?(?:\\*\\*)?(?:${
          escape(SUMMARY_INTRO)
        }|summary\\s*:)(?:\\*\\*)?\\s*`,
        "i",
      ),
      "",
    ).trim();
  return bare === "" ? null : bare;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The side request that folds the turns leaving the window into the running
 * summary: its messages begin exactly as the conversation's last request did
 * (so llama-server reuses that request's cache and reads only the reply and
 * the instruction), and the model's answer becomes the summary only when it
 * is whole: no reasoning in it, nothing cut by the token limit.
 */
import { chatBody } from "../llm/client.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import type { Conversation } from "./conversation.ts";
import { SUMMARY_INTRO, withSummary } from "./prompt.ts";

/** Roughly how many words a token limit leaves room for. */
const WORDS_PER_TOKEN = 0.6;

/**
 * The instruction that ends a summary request. Short: the server reads it
 * anew for every summary.
 */
export function summaryInstruction(
  kept: number,
  folding: boolean,
  maxTokens: number,
): string {
  const later = kept === 1 ? "its last exchange" : `its last ${kept} exchanges`;
  const words = Math.max(20, Math.floor(maxTokens * WORDS_PER_TOKEN));
  return `Summarise this conversation up to, but not including, ${later}${
    folding ? ", with the summary it began with" : ""
  }: the facts, names, numbers, decisions and open questions a later answer may need, in its language, in at most ${words} words. Reply with the summary only.`;
}

/**
 * The messages of a request for the summary of the first `upTo` turns. Where
 * the conversation's last request carried every turn the summary does not
 * cover yet, they are that request and its reply, then the instruction; else
 * (a move went ahead without a summary) the system prompt and every turn from
 * the first the summary leaves out.
 */
export function summaryMessages(
  conversation: Conversation,
  upTo: number,
  maxTokens: number,
): ChatMessage[] | null {
  const total = conversation.turns.length;
  const covered = conversation.summary?.turns ?? 0;
  const last = conversation.lastRequest;
  if (last === null || upTo <= covered || upTo > total) return null;
  const folding = conversation.summary !== null;
  const instruction: ChatMessage = {
    role: "user",
    content: summaryInstruction(total - upTo, folding, maxTokens),
  };
  const start = conversation.windowStart;
  if (start !== null && start <= covered) return [...last, instruction];
  const system = last[0];
  if (system?.role !== "system") return null;
  const turns = conversation.messages.slice(covered);
  const summary = conversation.summary;
  if (summary) {
    const [first, ...rest] = turns[0] ?? [];
    if (first?.role === "user") {
      turns[0] = [
        { ...first, content: withSummary(first.content, summary.text) },
        ...rest,
      ];
    }
  }
  return [system, ...turns.flat(), instruction];
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

/** The summary in what the model wrote: no reasoning, no heading; null when nothing is left. */
export function summaryFrom(text: string): string | null {
  // A block that never closed is reasoning to the end.
  const bare = text.replace(/<think>[\s\S]*?(?:<\/think>|$)/g, "").trim()
    .replace(
      new RegExp(
        `^(?:#+\\s*)?(?:\\*\\*)?(?:${
          escape(SUMMARY_INTRO)
        }|summary:?)(?:\\*\\*)?\\s*`,
        "i",
      ),
      "",
    ).trim();
  return bare === "" ? null : bare;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * One turn, from the model lookup to the reply's last token: the requests,
 * the stream turned into events, and the tool rounds. The turn yields every
 * event in the order it happens; it emits and saves nothing itself. Whoever
 * runs it decides what reaches the clients, so a turn that was stopped
 * reaches nobody, wherever it was when it was stopped. What a client that
 * connects mid-reply is shown of it (`pending`) is a fold of the events that
 * went out (`seen`), so it never runs ahead of what every client was sent.
 */
import type { Config } from "../base/config.ts";
import type { Timings } from "../llm/chat_deltas.ts";
import type { ChatMessage, ToolCall } from "../llm/chat_types.ts";
import { chatBody, type ModelChoice } from "../llm/client.ts";
import type { Delta } from "../llm/sse_stream.ts";
import type {
  ConfirmView,
  Event,
  PendingView,
  Ref,
  Truncation,
} from "../protocol/protocol.ts";
import { placeholder, type ToolOutcome } from "../tools/runner.ts";
import { ContextPlan, sendWithin } from "./budget.ts";
import type { CacheBook } from "./cache_book.ts";
import { type Conversation, historyOf } from "./conversation.ts";
import { replayable, stampQuestion, systemPrompt } from "./prompt.ts";
import type { Tokenize, TokenLedger } from "./token_ledger.ts";
import { readReply, type ReplyEnd, type ReplyEvent } from "./turn_stream.ts";

/** The model side of a turn; `LlmClient` in production, anything alike in tests. */
export interface ModelSource {
  chooseModel(signal: AbortSignal): Promise<ModelChoice>;
  chat(
    model: ModelChoice,
    body: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ReadableStream<Delta>>;
  /** Tokens of a text as the model counts them; absent where the server cannot say. */
  tokenize?(
    model: ModelChoice,
    text: string,
    signal: AbortSignal,
  ): Promise<number>;
}

/** The config keys a turn reads (and its summary, made after it). */
export type TurnConfig = Pick<
  Config,
  | "thinking"
  | "system_prompt"
  | "history_turns"
  | "reply_reserve"
  | "max_tool_rounds"
  | "tool_timeout"
  | "tool_output_limit"
  | "request"
  | "cache_reuse"
  | "compact"
  | "summary_tokens"
>;

/** A tool call waiting for the user: what clients are shown, and its outcome once decided (null: allowed, run it). */
export interface Approval {
  view: ConfirmView;
  outcome: Promise<ToolOutcome | null>;
}

/** How a turn runs the model's tool calls. */
export interface TurnTools {
  /** The tools' function schemas for the request. */
  schemas(): unknown[];
  /** The wait for the user's approval where the call needs one; null to run it at once. */
  approval(call: ToolCall, signal: AbortSignal): Approval | null;
  /** Runs one call. */
  run(call: ToolCall): Promise<ToolOutcome>;
}

/** What a turn yields: a reply's events as clients get them, and what the status learns on the way. */
export type TurnEvent =
  | ReplyEvent
  | Extract<Event, { type: "state" | "tool" | "confirm" }>
  | { type: "model"; id: string; ctx_max: number | null };

/** What starts a turn: `ask`, or `retry` and `edit`, which replace the last turn. */
export interface TurnStart {
  text: string;
  replaces: boolean;
  ref: Ref | undefined;
}

/** What a turn is made of. */
export interface TurnOptions extends TurnStart {
  llm: ModelSource;
  config: TurnConfig;
  tools: TurnTools;
  /** What is known of each model's token counts. */
  ledger: TokenLedger;
  /** What is known of each model's prompt cache. */
  book: CacheBook;
  /** The daemon's last request was this conversation's: the server's cache still holds it. */
  warm: boolean;
  /** The conversation it is asked in; it may stop being the current one. */
  conversation: Conversation;
  now: Date;
}

/** What a finished turn leaves to store. */
export interface TurnResult {
  /** The turn's messages under the history rule (tool results as placeholders). */
  messages: ChatMessage[];
  /** Names of the tools that ran, in order. */
  tools: string[];
  /**
   * Measures the turn's size in tokens with llama-server; null when it could
   * not. Called once the turn is saved and its `done` sent, so a count never
   * holds up the end of a reply (nor leaves a window for a stop to drop it).
   */
  count(): Promise<number | null>;
  /** Why the reply ended before the model finished it, if it did. */
  truncated: Truncation | null;
  /** Earlier turns the last request carried, of how many. */
  sent: number;
  total: number;
  /** The context size as the turn found it; null while unknown. */
  nCtx: number | null;
  /** The index of the first earlier turn its last request carried. */
  start: number;
  /** Tokens the earlier turns could take in its requests. */
  room: number;
  /** Tokens its last request and reply took in the context; null when not reported. */
  used: number | null;
  /** Tokens of a request's fixed start (system prompt and tool schemas), as estimated. */
  fixed: number;
  /** The turn whose question carried the summary; null without one. */
  carrier: number | null;
  /** Its last request's messages and the reply that ended it: what the server's cache holds now. */
  request: ChatMessage[];
  /** The tool schemas its requests carried. */
  schemas: unknown[];
  /** What the turn's requests cost the server, summed; null when it reported none. */
  timings: Timings | null;
}

/** Two requests' costs as one: each figure summed. */
export function addTimings(
  sum: Timings | null,
  next: Timings | null,
): Timings | null {
  if (next === null) return sum;
  if (sum === null) return { ...next };
  return {
    prompt_n: sum.prompt_n + next.prompt_n,
    cache_n: sum.cache_n + next.cache_n,
    predicted_n: sum.predicted_n + next.predicted_n,
    prompt_ms: sum.prompt_ms + next.prompt_ms,
    predicted_ms: sum.predicted_ms + next.predicted_ms,
  };
}

/** One question and its reply in flight. */
export class Turn {
  readonly #o: TurnOptions;
  /** The reply as clients were sent it so far. */
  readonly pending: PendingView;
  /** The model it uses, once known: a title asks the same one. */
  model: ModelChoice | null = null;

  /** A turn with nothing received yet. */
  constructor(options: TurnOptions) {
    this.#o = options;
    this.pending = {
      user: options.text,
      reply: "",
      think: "",
      tools: [],
      ...(options.replaces ? { replaces: true as const } : {}),
    };
  }

  /** An event of this turn went out to the clients: the pending reply follows it. */
  seen(event: TurnEvent): void {
    switch (event.type) {
      case "think":
        this.pending.think += event.delta;
        break;
      case "token":
        this.pending.reply += event.delta;
        break;
      case "tool":
        if (!event.done) this.pending.tools.push(event.name);
        break;
    }
  }

  /** The conversation the turn belongs to. */
  get conversation(): Conversation {
    return this.#o.conversation;
  }

  /** Whether the turn replaces the conversation's last one once it finishes. */
  get replaces(): boolean {
    return this.#o.replaces;
  }

  /** The ref of the command that started it. */
  get ref(): Ref | undefined {
    return this.#o.ref;
  }

  /** Runs the turn, yielding its events; returns what to store. */
  async *run(signal: AbortSignal): AsyncGenerator<TurnEvent, TurnResult> {
    const { llm, config, tools, ledger, now } = this.#o;
    const model = await llm.chooseModel(signal);
    this.model = model;
    yield {
      type: "model",
      id: model.id,
      // Another model's size would be wrong: unknown is null.
      ctx_max: model.nCtx ?? ledger.contextSize(model.id),
    };
    const question = {
      role: "user" as const,
      content: stampQuestion(this.#o.text, now),
    };
    const tokenize: Tokenize | undefined = llm.tokenize
      ? (text, signal) => llm.tokenize!(model, text, signal)
      : undefined;
    const schemas = tools.schemas();
    const conversation = this.#o.conversation;
    const previous = conversation.windowStart;
    // `[request]` may set n_cache_reuse itself, and wins.
    const asked = config.request.n_cache_reuse;
    const reuse = typeof asked === "number" ? asked : config.cache_reuse;
    // A window that slides a turn at a time costs nothing more only where
    // the server shifts the cache of the turns it keeps; a summary is made
    // for a block of turns at once.
    const blocks = config.compact || reuse <= 0 ||
      this.#o.book.shifts(model.id) === false;
    const plan = await ContextPlan.create({
      ledger,
      model: model.id,
      nCtx: model.nCtx,
      config,
      system: {
        role: "system",
        content: systemPrompt(config.system_prompt, model.id, now),
      },
      schemas,
      question,
      ...historyOf(conversation, this.#o.replaces),
      tokenize,
      signal,
      blockFrom: blocks ? previous : null,
      summary: conversation.summary,
      cover: config.compact || conversation.summary
        ? {
          summarized: conversation.summary?.turns ?? 0,
          hold: config.compact,
          failedAt: conversation.summaryFailedAt,
        }
        : null,
    });
    const stored: ChatMessage[] = [question];
    const ran: string[] = [];
    let used: number | null = null;
    let truncated: Truncation | null = null;
    let timings: Timings | null = null;
    let sent: ChatMessage[] = [];

    for (let round = 0;; round++) {
      const last = round >= config.max_tool_rounds;
      const stream = await sendWithin(plan, (messages) => {
        sent = messages;
        return llm.chat(
          model,
          chatBody({
            model: model.id,
            messages,
            tools: schemas,
            thinking: config.thinking,
            extra: config.request,
            cacheReuse: config.cache_reuse,
            ...(last && schemas.length > 0 ? { toolChoiceNone: true } : {}),
          }),
          signal,
        );
      });
      const end: ReplyEnd = yield* readReply(stream);
      used = end.usage?.used ?? used;
      timings = addTimings(timings, end.timings);
      // The first request after the window moved says whether the server
      // kept the cache of the turns still carried.
      if (
        round === 0 && this.#o.warm && reuse > 0 && end.timings &&
        previous !== null && plan.start > previous
      ) {
        this.#o.book.observe(model.id, {
          ...plan.carried(),
          cacheN: end.timings.cache_n,
          reuse,
        });
      }
      truncated = plan.reported(end.finish, end.usage);
      // A call cut off by the length limit is incomplete: it is not run.
      if (end.calls.length === 0 || last || truncated !== null) {
        stored.push({ role: "assistant", content: end.content });
        break;
      }
      const assistant: ChatMessage = {
        role: "assistant",
        content: end.content === "" ? null : end.content,
        tool_calls: end.calls.map(replayable),
      };
      plan.add(assistant);
      stored.push(assistant);
      for (const call of end.calls) {
        const name = call.function.name;
        let outcome: ToolOutcome | null = null;
        const approval = tools.approval(call, signal);
        if (approval) {
          yield { type: "state", state: "confirm", tool: name };
          yield { type: "confirm", ...structuredClone(approval.view) };
          outcome = await approval.outcome;
        }
        if (outcome === null) {
          yield { type: "state", state: "tool", tool: name };
          yield { type: "tool", name, done: false };
          ran.push(name);
          outcome = await tools.run(call);
          yield { type: "tool", name, done: true };
        }
        plan.add({
          role: "tool",
          tool_call_id: call.id,
          content: outcome.content,
        });
        stored.push({
          role: "tool",
          tool_call_id: call.id,
          content: placeholder(name, outcome),
        });
      }
      await plan.measure();
      plan.fit();
      yield { type: "state", state: "thinking" };
    }
    return {
      messages: stored,
      tools: ran,
      count: () => plan.conclude(stored),
      truncated,
      sent: plan.sent,
      total: plan.total,
      nCtx: plan.nCtx,
      start: plan.start,
      room: plan.room,
      used,
      fixed: plan.carried().fixed,
      carrier: plan.carrier,
      request: [...sent, stored.at(-1)!],
      schemas,
      timings,
    };
  }
}

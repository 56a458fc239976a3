/**
 * One turn, from the model lookup to the reply's last token: the requests,
 * the stream turned into events, and the tool rounds. The turn yields every
 * event in the order it happens; it emits and saves nothing itself. Whoever
 * runs it decides what reaches the clients, so a turn that was stopped
 * reaches nobody, wherever it was when it was stopped. What a client that
 * connects mid-reply is shown of it (`pending`) is a fold of the events that
 * went out (`seen`), so it never runs ahead of what every client was sent.
 */
import type { ChatMessage, ToolCall } from "../llm/chat_types.ts";
import {
  chatBody,
  type LookupOptions,
  type ModelChoice,
} from "../llm/client.ts";
import type { Delta } from "../llm/sse_stream.ts";
import type {
  ConfirmView,
  Event,
  PendingView,
  Ref,
  Timings,
  Truncation,
} from "../protocol/protocol.ts";
import { placeholder, type ToolOutcome } from "../tools/runner.ts";
import type { ContextPlan } from "./budget.ts";
import type { QuestionFile } from "./attachments.ts";
import type { Conversation } from "./conversation.ts";
import { fileView } from "../store/store.ts";
import { replayable } from "./prompt.ts";
import { sendWithin } from "./resend.ts";
import type { TurnConfig } from "./turn_config.ts";
import { readReply, type ReplyEnd, type ReplyEvent } from "./turn_stream.ts";

/** The config keys a turn reads. */
export type { TurnConfig } from "./turn_config.ts";

/** The model side of a turn; `LlmClient` in production, anything alike in tests. */
export interface ModelSource {
  chooseModel(
    signal: AbortSignal,
    options?: LookupOptions,
  ): Promise<ModelChoice>;
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

/** A tool call waiting for the user: what clients are shown, and its outcome once decided (null: allowed, run it). */
export interface Approval {
  view: ConfirmView;
  outcome: Promise<ToolOutcome | null>;
}

/** How a turn runs the model's tool calls. */
export interface TurnTools {
  /** The tools' function schemas for a request in the conversation. */
  schemas(conversation: Conversation): unknown[];
  /** The wait for the user's approval where the call needs one; null to run it at once. */
  approval(
    call: ToolCall,
    signal: AbortSignal,
    conversation: Conversation,
  ): Approval | null;
  /** Runs one call made in the conversation. */
  run(call: ToolCall, conversation: Conversation): Promise<ToolOutcome>;
}

/** What a turn yields: a reply's events as clients get them, and what the status learns on the way. */
export type TurnEvent =
  | ReplyEvent
  | Extract<Event, { type: "state" | "tool" | "confirm" }>
  | { type: "model"; id: string; ctx_max: number | null };

/** What starts a turn: `ask`, or `retry` and `edit`, which replace the last turn. */
export interface TurnStart {
  text: string;
  /** The files sent with the question, read; pictures with their bytes. */
  files: readonly QuestionFile[];
  replaces: boolean;
  ref: Ref | undefined;
}

/** What a turn is made of. */
export interface TurnOptions extends TurnStart {
  llm: ModelSource;
  config: TurnConfig;
  tools: TurnTools;
  /** The conversation it is asked in; it may stop being the current one. */
  conversation: Conversation;
  /** The daemon's last request was this conversation's: the server's cache still holds it. */
  warm: boolean;
  now: Date;
}

/** What a finished turn produced. */
export interface TurnResult {
  /** The turn's messages under the history rule (tool results as placeholders). */
  messages: ChatMessage[];
  /** Names of the tools that ran, in order. */
  tools: string[];
  /** Why the reply ended before the model finished it, if it did. */
  truncated: Truncation | null;
  /** What the turn's requests cost the server, summed; null when it reported none. */
  timings: Timings | null;
  /** Its last request as planned: what the conversation keeps of it, and the turn's count. */
  plan: ContextPlan;
}

/** What stands in for the answer of a reply cut short inside its reasoning, by what cut it. */
const CUT_IN_REASONING: Readonly<Record<Truncation, string>> = {
  max_tokens:
    "[the reply ended inside its reasoning: raise max_tokens or set thinking = false]",
  context:
    "[the reply ended inside its reasoning: the context is full; start a new conversation or set thinking = false]",
};

/** Two requests' costs as one: each figure summed. */
function addTimings(
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
      ...(options.files.length > 0
        ? { files: options.files.map(fileView) }
        : {}),
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

  /** The files sent with its question. */
  get files(): readonly QuestionFile[] {
    return this.#o.files;
  }

  /** The ref of the command that started it. */
  get ref(): Ref | undefined {
    return this.#o.ref;
  }

  /** Runs the turn, yielding its events; returns what it produced. */
  async *run(signal: AbortSignal): AsyncGenerator<TurnEvent, TurnResult> {
    const { llm, config, tools, conversation } = this.#o;
    const model = await llm.chooseModel(signal);
    this.model = model;
    const schemas = tools.schemas(conversation);
    const plan = await conversation.plan({
      text: this.#o.text,
      files: this.#o.files,
      replaces: this.#o.replaces,
      model,
      schemas,
      now: this.#o.now,
      warm: this.#o.warm,
      tokenize: llm.tokenize
        ? (text, signal) => llm.tokenize!(model, text, signal)
        : undefined,
      signal,
    });
    // Another model's size would be wrong: unknown is null.
    yield { type: "model", id: model.id, ctx_max: plan.nCtx };
    const stored: ChatMessage[] = [plan.question];
    const ran: string[] = [];
    let truncated: Truncation | null = null;
    let timings: Timings | null = null;

    for (let round = 0;; round++) {
      const last = round >= config.max_tool_rounds;
      const stream = await sendWithin(plan, (messages) =>
        llm.chat(
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
        ));
      const end: ReplyEnd = yield* readReply(stream);
      timings = addTimings(timings, end.timings);
      truncated = plan.reported(end.finish, end.usage, end.timings);
      // A call cut off by the length limit is incomplete: it is not run.
      if (end.calls.length === 0 || last || truncated !== null) {
        stored.push({ role: "assistant", content: end.content });
        // Cut short while still reasoning, no answer came: the note stands
        // where it would be, for every client and in the stored reply (the
        // model's own message stays as it was).
        if (truncated !== null && end.thought && end.content.trim() === "") {
          yield { type: "token", delta: CUT_IN_REASONING[truncated] };
        }
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
        const approval = tools.approval(call, signal, conversation);
        if (approval) {
          yield { type: "state", state: "confirm", tool: name };
          yield { type: "confirm", ...structuredClone(approval.view) };
          outcome = await approval.outcome;
        }
        if (outcome === null) {
          yield { type: "state", state: "tool", tool: name };
          yield { type: "tool", name, done: false };
          ran.push(name);
          outcome = await tools.run(call, conversation);
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
    return { messages: stored, tools: ran, truncated, timings, plan };
  }
}

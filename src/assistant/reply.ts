/**
 * One reply's loop: the model lookup, the request, the stream to events,
 * and the tool rounds. The assistant owns the state around it (the turn
 * counter, the conversation, saving); this module only runs the reply and
 * reports through the context it is given.
 */
import type { ChatMessage, ToolCall } from "../llm/chat_types.ts";
import type { Config } from "../base/config.ts";
import { chatBody, type ModelChoice } from "../llm/client.ts";
import type { Delta } from "../llm/sse_stream.ts";
import type {
  Event,
  PendingView,
  State,
  Truncation,
} from "../protocol/protocol.ts";
import { placeholder, type ToolOutcome } from "../tools/runner.ts";
import { ContextPlan, sendWithin } from "./budget.ts";
import { replayable, stampQuestion, systemPrompt } from "./prompt.ts";
import type { Tokenize, TokenLedger } from "./token_ledger.ts";

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

/** The config keys a turn reads. */
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
>;

/** What a reply reads, and where it reports; every report is skipped once `stale()`. */
export interface ReplyContext {
  llm: ModelSource;
  config: TurnConfig;
  /** The tools' function schemas for the request. */
  schemas: unknown[];
  /** Runs one call of the model's. */
  runTool(call: ToolCall): Promise<ToolOutcome>;
  /** Asks the user first where the call needs it: an outcome for a call not allowed, null to run it. */
  confirm?(call: ToolCall): Promise<ToolOutcome | null>;
  signal: AbortSignal;
  now: Date;
  /** The stored messages of the conversation's earlier turns, one list per turn. */
  history: readonly ChatMessage[][];
  /** Each earlier turn's measured size in tokens; null where unknown. */
  counts: readonly (number | null)[];
  /** What is known of each model's token counts. */
  ledger: TokenLedger;
  /** The reply as clients see it so far; the loop adds to it. */
  pending: PendingView;
  /** True once the reply was stopped or replaced: nothing more may be emitted. */
  stale(): boolean;
  emit(event: Event): void;
  setState(state: State, tool?: string): void;
  /** The model this reply uses, once known. */
  onModel(model: ModelChoice): void;
  /** Tokens the last request used, from the final chunk. */
  onUsage(used: number): void;
}

/** What a finished reply leaves to store. */
export interface ReplyResult {
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
  /** The context size as the reply found it; null while unknown. */
  nCtx: number | null;
}

/** Runs the reply to its end; null when it went stale on the way. */
export async function runReply(
  context: ReplyContext,
): Promise<ReplyResult | null> {
  const { config, llm, signal, now, pending } = context;
  const model = await llm.chooseModel(signal);
  if (context.stale()) return null;
  context.onModel(model);

  const question = {
    role: "user" as const,
    content: stampQuestion(pending.user, now),
  };
  const tokenize: Tokenize | undefined = llm.tokenize
    ? (text, signal) => llm.tokenize!(model, text, signal)
    : undefined;
  const plan = await ContextPlan.create({
    ledger: context.ledger,
    model: model.id,
    nCtx: model.nCtx,
    config,
    system: {
      role: "system",
      content: systemPrompt(config.system_prompt, model.id, now),
    },
    schemas: context.schemas,
    question,
    history: context.history,
    counts: context.counts,
    tokenize,
    signal,
  });
  if (context.stale()) return null;
  const stored: ChatMessage[] = [question];
  const tools: string[] = [];
  let truncated: Truncation | null = null;

  for (let round = 0;; round++) {
    const last = round >= config.max_tool_rounds;
    const stream = await sendWithin(plan, (messages) =>
      llm.chat(
        model,
        chatBody({
          model: model.id,
          messages,
          tools: context.schemas,
          thinking: config.thinking,
          extra: config.request,
          ...(last && context.schemas.length > 0
            ? { toolChoiceNone: true }
            : {}),
        }),
        signal,
      ));
    const { content, calls, finish, usage } = await readStream(
      stream,
      context,
    );
    if (context.stale()) return null;
    truncated = plan.reported(finish, usage);
    // A call cut off by the length limit is incomplete: it is not run.
    if (calls.length === 0 || last || truncated !== null) {
      stored.push({ role: "assistant", content });
      break;
    }
    const assistant: ChatMessage = {
      role: "assistant",
      content: content === "" ? null : content,
      tool_calls: calls.map(replayable),
    };
    plan.add(assistant);
    stored.push(assistant);
    for (const call of calls) {
      const name = call.function.name;
      let outcome = await context.confirm?.(call) ?? null;
      if (context.stale()) return null;
      if (outcome === null) {
        context.setState("tool", name);
        context.emit({ type: "tool", name, done: false });
        pending.tools.push(name);
        tools.push(name);
        outcome = await context.runTool(call);
        if (context.stale()) return null;
        context.emit({ type: "tool", name, done: true });
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
    if (context.stale()) return null;
    plan.fit();
    context.setState("thinking");
  }
  return {
    messages: stored,
    tools,
    count: () => plan.conclude(stored),
    truncated,
    sent: plan.sent,
    total: plan.total,
    nCtx: plan.nCtx,
  };
}

/** What one response left: its content, tool calls, finish reason and sizes. */
interface StreamEnd {
  content: string;
  calls: ToolCall[];
  finish: string | null;
  usage: (Delta & { kind: "usage" }) | null;
}

/** Streams one response to events; returns its content and tool calls. */
async function readStream(
  stream: ReadableStream<Delta>,
  context: ReplyContext,
): Promise<StreamEnd> {
  const { pending } = context;
  let content = "";
  let finish: string | null = null;
  let usage: (Delta & { kind: "usage" }) | null = null;
  const pieces = new Map<number, ToolCall>();
  for await (const delta of stream) {
    if (context.stale()) break;
    switch (delta.kind) {
      case "think":
        pending.think += delta.text;
        context.emit({ type: "think", delta: delta.text });
        break;
      case "content":
        content += delta.text;
        pending.reply += delta.text;
        context.emit({ type: "token", delta: delta.text });
        break;
      case "tool_call": {
        const call = pieces.get(delta.index) ??
          {
            id: "",
            type: "function" as const,
            function: { name: "", arguments: "" },
          };
        // The first piece names the call; later pieces only add arguments,
        // whatever else a server repeats in them.
        if (call.id === "" && delta.id) call.id = delta.id;
        if (call.function.name === "" && delta.name) {
          call.function.name = delta.name;
        }
        call.function.arguments += delta.arguments;
        pieces.set(delta.index, call);
        break;
      }
      case "usage":
        usage = delta;
        context.onUsage(delta.used);
        break;
      case "finish":
        finish = delta.reason;
        break;
    }
  }
  const calls = [...pieces.entries()].sort(([a], [b]) => a - b).map((
    [index, call],
  ) => ({
    ...call,
    id: call.id === "" ? `call_${index}` : call.id,
  }));
  return { content, calls, finish, usage };
}

/**
 * The brain: the current conversation, the turn counter, the reply in flight
 * and the reply loop. It emits events; the server decides who receives them.
 */
import type { ChatMessage, ToolCall } from "../llm/chat_types.ts";
import type { Config } from "../launch/config.ts";
import { AssistantError } from "../errors.ts";
import { chatBody, type ModelChoice } from "../llm/client.ts";
import { describeSafely, log } from "../log.ts";
import { replayable, stampQuestion, systemPrompt } from "./prompt.ts";
import {
  type Command,
  DEFAULT_LIST_LIMIT,
  type Event,
  type PendingView,
  type State,
  type TurnView,
} from "../protocol.ts";
import type { Delta } from "../llm/sse_stream.ts";
import type { SearchHit, Store, StoredTurn } from "../store/store.ts";
import { placeholder, runTool, type ToolOutcome } from "../tools/runner.ts";
import { type ToolDef, toolSchemas } from "../tools/load.ts";

/** The model side of a turn; `LlmClient` in production, anything alike in tests. */
export interface ModelSource {
  chooseModel(signal: AbortSignal): Promise<ModelChoice>;
  chat(
    model: ModelChoice,
    body: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ReadableStream<Delta>>;
}

/** Where `search` runs: the store itself, or a worker with its own connection. */
export interface Searcher {
  search(q: string, limit: number): Promise<SearchHit[]> | SearchHit[];
}

/** The config keys a turn reads. */
export type TurnConfig = Pick<
  Config,
  | "thinking"
  | "system_prompt"
  | "history_turns"
  | "max_tool_rounds"
  | "tool_timeout"
  | "tool_output_limit"
  | "request"
>;

/** Everything the assistant needs, injected. */
export interface AssistantOptions {
  store: Store;
  llm: ModelSource;
  config: TurnConfig;
  tools: readonly ToolDef[];
  emit: (event: Event) => void;
  searcher?: Searcher;
  version?: string;
  now?: () => Date;
  runTool?: typeof runTool;
  /** Coreutils `timeout`, to kill a timed-out tool's whole process group; null kills the tool alone. */
  toolKillHelper?: string | null;
}

interface Conversation {
  id: number | null;
  turns: TurnView[];
  messages: ChatMessage[][];
}

interface Reply {
  gen: number;
  conversation: Conversation;
  controller: AbortController;
  pending: PendingView;
  finished: Promise<void>;
}

const startedAt = performance.now();

function emptyConversation(): Conversation {
  return { id: null, turns: [], messages: [] };
}

/** The daemon's state and its reply loop; implements the server's `Brain`. */
export class Assistant implements Disposable {
  #options: AssistantOptions;
  #tools: ReadonlyMap<string, ToolDef>;
  #schemas: unknown[];
  #current: Conversation = emptyConversation();
  #gen = 0;
  #reply: Reply | null = null;
  #state: State = "idle";
  #tool: string | null = null;
  #model: string | null = null;
  #ctxUsed: number | null = null;
  #ctxMax: number | null = null;
  #shutdown = new AbortController();

  /** Creates the brain with an empty, unsaved current conversation. */
  constructor(options: AssistantOptions) {
    this.#options = options;
    this.#tools = new Map(options.tools.map((tool) => [tool.name, tool]));
    this.#schemas = toolSchemas([...options.tools]);
  }

  /** The `hello` for a client that just connected. */
  hello(): Event {
    const pending = this.#reply
      ? { ...this.#reply.pending, tools: [...this.#reply.pending.tools] }
      : null;
    return {
      type: "hello",
      state: this.#state,
      ...(this.#tool !== null ? { tool: this.#tool } : {}),
      model: this.#model,
      ctx_used: this.#ctxUsed,
      ctx_max: this.#ctxMax,
      id: this.#current.id,
      turns: this.#current.turns,
      pending,
    };
  }

  /** Runs one command and resolves to the answer for the asker, if any. */
  async handle(command: Command): Promise<Event | null> {
    switch (command.type) {
      case "ask":
        this.#ask(command.text);
        return null;
      case "stop":
        this.#stop();
        return null;
      case "new":
        this.#setCurrent(emptyConversation());
        return null;
      case "list":
        return {
          type: "conversations",
          items: this.#options.store.list(command.limit ?? DEFAULT_LIST_LIMIT),
        };
      case "open": {
        const opened = this.#options.store.open(command.id);
        if (!opened) throw new AssistantError("no such conversation");
        this.#setCurrent(opened);
        return null;
      }
      case "search": {
        const searcher = this.#options.searcher ?? this.#options.store;
        const items = await searcher.search(command.q, command.limit);
        return { type: "results", items };
      }
      case "delete":
        return this.#delete(command.id);
      case "ping":
        return {
          type: "pong",
          pid: Deno.pid,
          uptime: Math.round((performance.now() - startedAt) / 1000),
          version: this.#options.version ?? "0.0.0",
        };
    }
  }

  /** Resolves when the reply in flight ends; null when none is. */
  replyEnd(): Promise<void> | null {
    return this.#reply?.finished ?? null;
  }

  /** Whether a reply is in flight. */
  get replying(): boolean {
    return this.#reply !== null;
  }

  /** Resolves once no reply is in flight (shutdown and tests). */
  async settled(): Promise<void> {
    while (this.#reply) await this.#reply.finished;
  }

  /** Ends the reply in flight as stopped and kills running tools: for shutdown. */
  shutdown(): void {
    this.#stop();
    this.#shutdown.abort();
  }

  /** Same as `shutdown`. */
  [Symbol.dispose](): void {
    this.shutdown();
  }

  #emit(event: Event): void {
    this.#options.emit(event);
  }

  #setState(state: State, tool: string | null = null): void {
    this.#state = state;
    this.#tool = tool;
    this.#emit(
      tool === null ? { type: "state", state } : { type: "state", state, tool },
    );
  }

  #setCurrent(conversation: Conversation): void {
    this.#current = conversation;
    this.#emit({
      type: "conversation",
      id: conversation.id,
      turns: conversation.turns,
    });
  }

  #delete(id: number): Event {
    const store = this.#options.store;
    if (this.#reply?.conversation.id === id) this.#stop();
    if (!store.delete(id)) throw new AssistantError("no such conversation");
    if (this.#current.id === id) this.#setCurrent(emptyConversation());
    return { type: "conversations", items: store.list(DEFAULT_LIST_LIMIT) };
  }

  #stop(): void {
    this.#gen++;
    const reply = this.#reply;
    if (!reply) return;
    this.#reply = null;
    reply.controller.abort();
    log.info("reply stopped", { conv: reply.conversation.id, gen: reply.gen });
    this.#emit({ type: "done", id: reply.conversation.id, stopped: true });
    this.#setState("idle");
  }

  #ask(text: string): void {
    if (this.#reply) this.#stop();
    const gen = ++this.#gen;
    const { promise: finished, resolve } = Promise.withResolvers<void>();
    const reply: Reply = {
      gen,
      conversation: this.#current,
      controller: new AbortController(),
      pending: { user: text, reply: "", think: "", tools: [] },
      finished,
    };
    this.#reply = reply;
    this.#emit({ type: "user", text });
    this.#setState("thinking");
    this.#run(reply).finally(resolve);
  }

  #stale(reply: Reply): boolean {
    return reply.gen !== this.#gen;
  }

  async #run(reply: Reply): Promise<void> {
    const started = performance.now();
    const { config, llm } = this.#options;
    const signal = AbortSignal.any([
      reply.controller.signal,
      this.#shutdown.signal,
    ]);
    const now = this.#options.now?.() ?? new Date();
    try {
      const model = await llm.chooseModel(signal);
      if (this.#stale(reply)) return;
      this.#model = model.id;
      // Another model's size would be wrong: unknown is null.
      this.#ctxMax = model.nCtx;

      const question: ChatMessage = {
        role: "user",
        content: stampQuestion(reply.pending.user, now),
      };
      // Turns saved before tool calls were made replayable may hold
      // arguments llama-server cannot parse.
      const history = reply.conversation.messages.slice(
        Math.max(0, reply.conversation.messages.length - config.history_turns),
      ).flat().map((message) =>
        message.role === "assistant" && message.tool_calls
          ? { ...message, tool_calls: message.tool_calls.map(replayable) }
          : message
      );
      const request: ChatMessage[] = [
        {
          role: "system",
          content: systemPrompt(config.system_prompt, model.id, now),
        },
        ...history,
        question,
      ];
      const stored: ChatMessage[] = [question];
      const tools: string[] = [];

      for (let round = 0;; round++) {
        const last = round >= config.max_tool_rounds;
        const body = chatBody({
          model: model.id,
          messages: request,
          tools: this.#schemas,
          thinking: config.thinking,
          extra: config.request,
          ...(last && this.#schemas.length > 0 ? { toolChoiceNone: true } : {}),
        });
        const { content, calls } = await this.#stream(
          reply,
          model,
          body,
          signal,
        );
        if (this.#stale(reply)) return;
        if (calls.length === 0 || last) {
          stored.push({ role: "assistant", content });
          break;
        }
        const assistant: ChatMessage = {
          role: "assistant",
          content: content === "" ? null : content,
          tool_calls: calls.map(replayable),
        };
        request.push(assistant);
        stored.push(assistant);
        for (const call of calls) {
          const name = call.function.name;
          this.#setState("tool", name);
          this.#emit({ type: "tool", name, done: false });
          reply.pending.tools.push(name);
          tools.push(name);
          const outcome = await this.#runTool(call);
          if (this.#stale(reply)) return;
          this.#emit({ type: "tool", name, done: true });
          request.push({
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
        this.#setState("thinking");
      }

      const conversation = reply.conversation;
      const id = this.#save(conversation, {
        user: reply.pending.user,
        reply: reply.pending.reply,
        tools,
        messages: stored,
      });
      this.#remember(conversation, id, reply.pending, tools, stored);
      this.#reply = null;
      log.info("reply done", {
        conv: id,
        gen: reply.gen,
        reply_bytes: reply.pending.reply.length,
        tools: tools.length,
        ms: Math.round(performance.now() - started),
      });
      this.#emit({ type: "done", id, stopped: false });
      if (this.#ctxUsed !== null) {
        this.#emit({ type: "ctx", used: this.#ctxUsed, max: this.#ctxMax });
      }
      this.#setState("idle");
    } catch (error) {
      if (this.#stale(reply)) return;
      this.#reply = null;
      const message = error instanceof AssistantError
        ? error.message
        : this.#shutdown.signal.aborted
        ? "the daemon is shutting down"
        : "reply failed";
      // AssistantError messages are written for clients; what they quote
      // from llama-server may repeat the turn, so the log leaves it out.
      // Anything else is named by class only.
      const reason = error instanceof AssistantError
        ? describeSafely(error)
        : errorName(error);
      log.warn("reply failed", { gen: reply.gen, error: reason });
      this.#emit({ type: "error", message, turn: true });
      this.#setState("idle");
    }
  }

  async #stream(
    reply: Reply,
    model: ModelChoice,
    body: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<{ content: string; calls: ToolCall[] }> {
    const stream = await this.#options.llm.chat(model, body, signal);
    let content = "";
    const pieces = new Map<number, ToolCall>();
    for await (const delta of stream) {
      if (this.#stale(reply)) break;
      switch (delta.kind) {
        case "think":
          reply.pending.think += delta.text;
          this.#emit({ type: "think", delta: delta.text });
          break;
        case "content":
          content += delta.text;
          reply.pending.reply += delta.text;
          this.#emit({ type: "token", delta: delta.text });
          break;
        case "tool_call": {
          const call = pieces.get(delta.index) ??
            {
              id: "",
              type: "function" as const,
              function: { name: "", arguments: "" },
            };
          if (delta.id) call.id = delta.id;
          if (delta.name) call.function.name += delta.name;
          call.function.arguments += delta.arguments;
          pieces.set(delta.index, call);
          break;
        }
        case "usage":
          this.#ctxUsed = delta.used;
          break;
        case "finish":
          break;
      }
    }
    const calls = [...pieces.entries()].sort(([a], [b]) => a - b).map((
      [index, call],
    ) => ({
      ...call,
      id: call.id === "" ? `call_${index}` : call.id,
    }));
    return { content, calls };
  }

  #save(conversation: Conversation, turn: StoredTurn): number {
    try {
      return this.#options.store.saveTurn(conversation.id, turn);
    } catch (error) {
      if (error instanceof AssistantError) throw error;
      throw new AssistantError("could not save the reply", { cause: error });
    }
  }

  #runTool(call: ToolCall): Promise<ToolOutcome> {
    const run = this.#options.runTool ?? runTool;
    const { config } = this.#options;
    return run(this.#tools, call.function.name, call.function.arguments, {
      outputLimit: config.tool_output_limit,
      defaultTimeout: config.tool_timeout,
      signal: this.#shutdown.signal,
      timeoutHelper: this.#options.toolKillHelper ?? null,
    });
  }

  #remember(
    conversation: Conversation,
    id: number,
    pending: PendingView,
    tools: string[],
    messages: ChatMessage[],
  ): void {
    const turn: TurnView = { user: pending.user, reply: pending.reply, tools };
    const targets = new Set([conversation]);
    // The same conversation may have been reopened meanwhile as a new object.
    if (
      this.#current.id !== null && this.#current.id === (conversation.id ?? id)
    ) {
      targets.add(this.#current);
    }
    for (const target of targets) {
      target.id = id;
      target.turns.push(turn);
      target.messages.push(messages);
    }
  }
}

function errorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  // Where it was thrown helps; the message might quote the turn.
  const frame = error.stack?.split("\n")[1]?.trim();
  return frame ? `${error.name} ${frame}` : error.name;
}

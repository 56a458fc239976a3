/**
 * The brain: the current conversation, the turn counter, the reply in flight
 * and the reply loop. It emits events; the server decides who receives them.
 */
import type { ChatMessage, ToolCall } from "../llm/chat_types.ts";
import { AssistantError } from "../errors.ts";
import { describeSafely, log } from "../log.ts";
import { type ModelSource, runReply, type TurnConfig } from "./reply.ts";
import {
  type Command,
  DEFAULT_LIST_LIMIT,
  type Event,
  type PendingView,
  type State,
  type TurnView,
} from "../protocol.ts";
import type { SearchHit, Store, StoredTurn } from "../store/store.ts";
import type { runTool, ToolOutcome } from "../tools/runner.ts";
import type { ToolDef } from "../tools/load.ts";
import type { McpHub } from "../tools/mcp.ts";
import { Toolbox } from "../tools/toolbox.ts";
import { Approvals, declinedOutcome } from "./approval.ts";

export type { ModelSource, TurnConfig } from "./reply.ts";

/** Where `search` runs: the store itself, or a worker with its own connection. */
export interface Searcher {
  search(q: string, limit: number): Promise<SearchHit[]> | SearchHit[];
}

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
  /** The MCP servers' tools. */
  mcp?: McpHub | null;
  /** Tools that wait for approval (besides tool files that say so), and how long a call waits; default none and 120 s. */
  confirm?: { tools: readonly string[]; timeoutSeconds: number };
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
  #toolbox: Toolbox;
  #approvals: Approvals;
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
    this.#toolbox = new Toolbox({
      tools: options.tools,
      mcp: options.mcp ?? null,
      confirmTools: options.confirm?.tools ?? [],
      ...(options.runTool ? { runTool: options.runTool } : {}),
    });
    this.#approvals = new Approvals({
      emit: (event) => this.#emit(event),
      timeoutMs: this.#confirmTimeout * 1000,
    });
  }

  get #confirmTimeout(): number {
    return this.#options.confirm?.timeoutSeconds ?? 120;
  }

  /** The `hello` for a client that just connected. */
  hello(): Event {
    const waiting = this.#approvals.waiting;
    const pending = this.#reply
      ? {
        ...this.#reply.pending,
        tools: [...this.#reply.pending.tools],
        ...(waiting ? { confirm: waiting } : {}),
      }
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
      case "approve":
        if (!this.#approvals.answer(command.call, command.allow)) {
          throw new AssistantError("no such call");
        }
        return null;
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
    const signal = AbortSignal.any([
      reply.controller.signal,
      this.#shutdown.signal,
    ]);
    try {
      const result = await runReply({
        llm: this.#options.llm,
        config: this.#options.config,
        schemas: this.#toolbox.schemas(),
        runTool: (call) => this.#runTool(call),
        confirm: (call) => this.#confirm(call, signal),
        signal,
        now: this.#options.now?.() ?? new Date(),
        history: reply.conversation.messages,
        pending: reply.pending,
        stale: () => this.#stale(reply),
        emit: (event) => this.#emit(event),
        setState: (state, tool) => this.#setState(state, tool ?? null),
        onModel: (model) => {
          this.#model = model.id;
          // Another model's size would be wrong: unknown is null.
          this.#ctxMax = model.nCtx;
        },
        onUsage: (used) => {
          this.#ctxUsed = used;
        },
      });
      if (result === null || this.#stale(reply)) return;
      const { messages, tools } = result;
      const conversation = reply.conversation;
      const id = this.#save(conversation, {
        user: reply.pending.user,
        reply: reply.pending.reply,
        tools,
        messages,
      });
      this.#remember(conversation, id, reply.pending, tools, messages);
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

  #save(conversation: Conversation, turn: StoredTurn): number {
    try {
      return this.#options.store.saveTurn(conversation.id, turn);
    } catch (error) {
      if (error instanceof AssistantError) throw error;
      throw new AssistantError("could not save the reply", { cause: error });
    }
  }

  /** Waits for the user where the call needs it; an outcome for the model when it may not run. */
  async #confirm(
    call: ToolCall,
    signal: AbortSignal,
  ): Promise<ToolOutcome | null> {
    const name = call.function.name;
    if (!this.#toolbox.confirms(name)) return null;
    // A call refused before it runs (bad arguments) needs no approval.
    const args = this.#toolbox.runnableArgs(name, call.function.arguments);
    if (args === null) return null;
    const started = performance.now();
    this.#setState("confirm", name);
    const decision = await this.#approvals.ask(name, args, signal);
    if (decision === "allow") return null;
    return declinedOutcome(
      name,
      decision,
      this.#confirmTimeout,
      Math.round(performance.now() - started),
    );
  }

  #runTool(call: ToolCall): Promise<ToolOutcome> {
    const { config } = this.#options;
    return this.#toolbox.run(call.function.name, call.function.arguments, {
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

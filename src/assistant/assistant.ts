/**
 * The brain: the current conversation, the turn counter, the reply in flight
 * and the reply loop. It emits events; the server decides who receives them.
 */
import type { ChatMessage, ToolCall } from "../llm/chat_types.ts";
import { AssistantError } from "../errors.ts";
import { describeSafely, log } from "../log.ts";
import type { ModelChoice } from "../llm/client.ts";
import {
  type ModelSource,
  type ReplyResult,
  runReply,
  type TurnConfig,
} from "./reply.ts";
import {
  type BackendView,
  type Command,
  DEFAULT_LIST_LIMIT,
  type Event,
  type HelloPending,
  type PendingView,
  type Ref,
  refField,
  type State,
  type TurnView,
} from "../protocol.ts";
import type { SearchHit, Store, StoredTurn } from "../store/store.ts";
import type { runTool, ToolOutcome } from "../tools/runner.ts";
import type { ToolDef } from "../tools/load.ts";
import type { McpHub } from "../tools/mcp.ts";
import { Toolbox } from "../tools/toolbox.ts";
import { Approvals, declinedOutcome } from "./approval.ts";
import { exportText } from "./export.ts";
import { TokenLedger } from "./token_ledger.ts";
import { Titler } from "./title.ts";

export type { ModelSource, TurnConfig } from "./reply.ts";

/** Where `search` runs: the store itself, or a worker with its own connection. */
export interface Searcher {
  search(q: string, limit: number): Promise<SearchHit[]> | SearchHit[];
}

/** Everything the assistant needs, injected. */
export interface AssistantOptions {
  store: Store;
  llm: ModelSource;
  /** `auto_title` absent is off. */
  config: TurnConfig & { auto_title?: boolean };
  tools: readonly ToolDef[];
  emit: (event: Event) => void;
  searcher?: Searcher;
  version?: string;
  now?: () => Date;
  runTool?: typeof runTool;
  /** Coreutils `timeout`, to kill a timed-out tool's whole process group; null kills the tool alone. */
  toolKillHelper?: string | null;
  /** The llama-server state for `hello.backend`. */
  backend?: () => BackendView;
  /** The MCP servers' tools. */
  mcp?: McpHub | null;
  /** Tools that wait for approval (besides tool files that say so), and how long a call waits; default none and 120 s. */
  confirm?: { tools: readonly string[]; timeoutSeconds: number };
}

interface Conversation {
  id: number | null;
  turns: TurnView[];
  messages: ChatMessage[][];
  /** Each turn's measured size in tokens; null where unknown. */
  tokens: (number | null)[];
  /** In memory only: never saved, listed or searched; gone once not current. */
  private: boolean;
}

/** What starts a turn: `ask`, or `retry` and `edit`, which replace the last turn. */
interface TurnStart {
  text: string;
  replaces: boolean;
  ref: Ref | undefined;
}

interface Reply {
  gen: number;
  conversation: Conversation;
  controller: AbortController;
  pending: PendingView;
  finished: Promise<void>;
  replaces: boolean;
  /** The ref of the command that started it, echoed on `user`, `done` and `error`. */
  ref: Ref | undefined;
  /** The model it used, once known: a title asks the same one. */
  model: ModelChoice | null;
}

const startedAt = performance.now();

function emptyConversation(isPrivate = false): Conversation {
  return { id: null, turns: [], messages: [], tokens: [], private: isPrivate };
}

/** The daemon's state and its reply loop; implements the server's `Brain`. */
export class Assistant implements Disposable {
  #options: AssistantOptions;
  #toolbox: Toolbox;
  #approvals: Approvals;
  #current: Conversation = emptyConversation();
  #gen = 0;
  #reply: Reply | null = null;
  /** Every reply's run until it returns, a stopped one included. */
  #runs = new Set<Promise<void>>();
  #state: State = "idle";
  #tool: string | null = null;
  #model: string | null = null;
  #ctxUsed: number | null = null;
  #ctxMax: number | null = null;
  /** Earlier turns the last request carried, of how many; about the current conversation only. */
  #ctxSent: number | null = null;
  #ctxTotal: number | null = null;
  #ledger = new TokenLedger();
  #shutdown = new AbortController();
  #titles: Titler;

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
    this.#titles = new Titler({
      llm: options.llm,
      request: options.config.request,
      save: (id, title) => options.store.rename(id, title),
      emit: (event) => this.#emit(event),
      busy: () => this.#reply !== null,
    });
  }

  get #confirmTimeout(): number {
    return this.#options.confirm?.timeoutSeconds ?? 120;
  }

  /** The `hello` for a client that just connected. */
  hello(): Event {
    const pending = this.#helloPending();
    const waiting = this.#approvals.waiting;
    return {
      type: "hello",
      state: this.#state,
      ...(this.#tool !== null ? { tool: this.#tool } : {}),
      model: this.#model,
      ctx_used: this.#ctxUsed,
      ctx_max: this.#ctxMax,
      ctx_sent: this.#ctxSent,
      ctx_total: this.#ctxTotal,
      ...(this.#options.backend ? { backend: this.#options.backend() } : {}),
      id: this.#current.id,
      turns: this.#current.turns,
      pending,
      ...(waiting ? { confirm: waiting } : {}),
      ...(this.#current.private ? { private: true as const } : {}),
    };
  }

  /**
   * The reply in flight with the conversation it belongs to. One that will
   * create its conversation while another (a `new` one) is current is left
   * out: both ids are null, and a client would show it in the wrong one.
   */
  #helloPending(): HelloPending | null {
    const reply = this.#reply;
    if (!reply) return null;
    const { conversation, pending } = reply;
    if (conversation.id === null && conversation !== this.#current) return null;
    const waiting = this.#approvals.waiting;
    return {
      id: conversation.id,
      ...pending,
      tools: [...pending.tools],
      ...(waiting ? { confirm: waiting } : {}),
    };
  }

  /**
   * Runs one command and resolves to the answer for the asker, if any; the
   * answer carries the command's `ref`. Events about the shared state go to
   * every client through `emit`, those a command caused with its `ref` too.
   */
  async handle(command: Command): Promise<Event | null> {
    const answer = await this.#dispatch(command);
    return answer && { ...answer, ...refField(command.ref) };
  }

  async #dispatch(command: Command): Promise<Event | null> {
    const { ref } = command;
    const store = this.#options.store;
    switch (command.type) {
      case "ask":
        this.#startTurn({ text: command.text, replaces: false, ref });
        return null;
      case "retry":
      case "edit":
        this.#retry(command.type === "edit" ? command.text : null, ref);
        return null;
      case "stop":
        this.#stop();
        return null;
      case "new":
        this.#setCurrent(emptyConversation(command.private === true), ref);
        return null;
      case "list":
        return {
          type: "conversations",
          items: store.list(command.limit ?? DEFAULT_LIST_LIMIT),
        };
      case "open": {
        const opened = store.open(command.id);
        if (!opened) throw new AssistantError("no such conversation");
        this.#setCurrent({ ...opened, private: false }, ref);
        return null;
      }
      case "search": {
        const searcher = this.#options.searcher ?? store;
        const items = await searcher.search(command.q, command.limit);
        return { type: "results", items };
      }
      case "delete":
        return this.#delete(command.id);
      case "rename":
        this.#rename(command.id, command.title, ref);
        return null;
      case "export": {
        const record = store.record(command.id);
        if (!record) throw new AssistantError("no such conversation");
        const { id, format } = command;
        return { type: "export", id, format, text: exportText(record, format) };
      }
      case "approve":
        if (!this.#approvals.answer(command.call, command.allow, ref)) {
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

  /**
   * Resolves once every reply's run and title request has returned (shutdown
   * and tests). This
   * is a real wait: a stopped reply is no longer the one in flight at once,
   * but its run still winds down (its request closing, a killed tool's
   * process ending) until it returns, and shutdown closes the database only
   * after that (or after its time limit).
   */
  async settled(): Promise<void> {
    while (this.#runs.size > 0) await Promise.allSettled(this.#runs);
    await this.#titles.settled();
  }

  /** Ends the reply in flight as stopped, kills running tools and drops title requests: for shutdown. */
  shutdown(): void {
    this.#stop();
    this.#shutdown.abort();
    this.#titles[Symbol.dispose]();
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

  #setCurrent(conversation: Conversation, ref?: Ref): void {
    const previous = this.#current;
    // A private conversation is gone once another one is current, and so is
    // its reply, as a deleted conversation's is.
    if (previous.private && this.#reply?.conversation === previous) {
      this.#stop();
    }
    this.#current = conversation;
    this.#ctxSent = null;
    this.#ctxTotal = null;
    this.#emit({
      type: "conversation",
      id: conversation.id,
      turns: conversation.turns,
      ...(conversation.private ? { private: true as const } : {}),
      ...refField(ref),
    });
  }

  #delete(id: number): Event {
    const store = this.#options.store;
    if (this.#reply?.conversation.id === id) this.#stop();
    if (!store.delete(id)) throw new AssistantError("no such conversation");
    this.#titles.cancel(id);
    if (this.#current.id === id) this.#setCurrent(emptyConversation());
    return { type: "conversations", items: store.list(DEFAULT_LIST_LIMIT) };
  }

  #rename(id: number, title: string, ref: Ref | undefined): void {
    if (!this.#options.store.rename(id, title)) {
      throw new AssistantError("no such conversation");
    }
    // The user's title wins over one the model is still writing.
    this.#titles.cancel(id);
    log.info("conversation renamed", { conv: id, chars: title.length });
    this.#emit({ type: "renamed", id, title, ...refField(ref) });
  }

  /** `retry` (text null: the last question again) and `edit`. */
  #retry(text: string | null, ref: Ref | undefined): void {
    const last = this.#current.turns.at(-1);
    if (!last) throw new AssistantError("nothing to retry");
    this.#startTurn({ text: text ?? last.user, replaces: true, ref });
  }

  #stop(): void {
    this.#gen++;
    const reply = this.#reply;
    if (!reply) return;
    this.#reply = null;
    reply.controller.abort();
    log.info("reply stopped", { conv: reply.conversation.id, gen: reply.gen });
    this.#emit({
      type: "done",
      id: reply.conversation.id,
      stopped: true,
      ...refField(reply.ref),
    });
    this.#setState("idle");
    this.#titles.resume();
  }

  #startTurn(start: TurnStart): void {
    if (this.#reply) this.#stop();
    // A title request never holds up a question: it waits for the next pause.
    this.#titles.pause();
    const gen = ++this.#gen;
    const { promise: finished, resolve } = Promise.withResolvers<void>();
    const replaces = start.replaces ? { replaces: true as const } : {};
    const reply: Reply = {
      gen,
      conversation: this.#current,
      controller: new AbortController(),
      pending: {
        user: start.text,
        reply: "",
        think: "",
        tools: [],
        ...replaces,
      },
      finished,
      replaces: start.replaces,
      ref: start.ref,
      model: null,
    };
    this.#reply = reply;
    this.#emit({
      type: "user",
      text: start.text,
      ...replaces,
      ...refField(start.ref),
    });
    this.#setState("thinking");
    const run = this.#run(reply).finally(() => {
      this.#runs.delete(run);
      resolve();
    });
    this.#runs.add(run);
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
        // A retry is asked as if the turn it replaces had not been.
        history: reply.replaces
          ? reply.conversation.messages.slice(0, -1)
          : reply.conversation.messages,
        counts: reply.replaces
          ? reply.conversation.tokens.slice(0, -1)
          : reply.conversation.tokens,
        ledger: this.#ledger,
        pending: reply.pending,
        stale: () => this.#stale(reply),
        emit: (event) => this.#emit(event),
        setState: (state, tool) => this.#setState(state, tool ?? null),
        onModel: (model) => {
          reply.model = model;
          this.#model = model.id;
          // Another model's size would be wrong: unknown is null.
          this.#ctxMax = model.nCtx ?? this.#ledger.contextSize(model.id);
        },
        onUsage: (used) => {
          this.#ctxUsed = used;
        },
      });
      if (result === null || this.#stale(reply)) return;
      const { messages, tools, truncated } = result;
      const conversation = reply.conversation;
      const first = conversation.id === null && conversation.turns.length === 0;
      const turn = {
        user: reply.pending.user,
        reply: reply.pending.reply,
        tools,
        messages,
        tokens: null,
      };
      const { id, title } = this.#save(conversation, turn, reply.replaces);
      this.#remember(conversation, id, turn, reply.replaces);
      const row = id === null ? null : this.#options.store.lastTurnId(id);
      this.#reply = null;
      log.info("reply done", {
        conv: id,
        gen: reply.gen,
        reply_bytes: reply.pending.reply.length,
        tools: tools.length,
        replaced: reply.replaces,
        sent: result.sent,
        total: result.total,
        ...(truncated ? { truncated } : {}),
        ms: Math.round(performance.now() - started),
      });
      this.#emit({
        type: "done",
        id,
        stopped: false,
        ...(truncated
          ? { truncated: true as const, truncated_by: truncated }
          : {}),
        ...(reply.replaces ? { replaces: true as const } : {}),
        ...refField(reply.ref),
      });
      if (id !== null && title !== null) {
        this.#emit({ type: "renamed", id, title });
      }
      // A refusal may have told the size /props did not.
      this.#ctxMax = result.nCtx ?? this.#ctxMax;
      if (
        this.#current === conversation ||
        (id !== null && this.#current.id === id)
      ) {
        this.#ctxSent = result.sent;
        this.#ctxTotal = result.total;
      }
      if (this.#ctxUsed !== null) {
        this.#emit({
          type: "ctx",
          used: this.#ctxUsed,
          max: this.#ctxMax,
          sent: result.sent,
          total: result.total,
        });
      }
      this.#setState("idle");
      const titled = first && id !== null && reply.model &&
          this.#options.config.auto_title
        ? {
          id,
          source: {
            question: turn.user,
            reply: turn.reply,
            model: reply.model,
          },
        }
        : null;
      // The turn's count goes first: a title request is the one that gives
      // way, never a count the next reply's history uses.
      this.#track(
        this.#count(result, conversation, messages, row).finally(() => {
          if (titled) this.#titles.request(titled.id, titled.source);
          this.#titles.resume();
        }),
      );
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
      this.#emit({
        type: "error",
        message,
        turn: true,
        ...refField(reply.ref),
      });
      this.#setState("idle");
      this.#titles.resume();
    }
  }

  /**
   * Saves a finished turn (a private conversation's stays in memory: id
   * null); `title` is the conversation's new title when replacing its first
   * turn changed it.
   */
  #save(
    conversation: Conversation,
    turn: StoredTurn,
    replaces: boolean,
  ): { id: number | null; title: string | null } {
    if (conversation.private) return { id: null, title: null };
    const store = this.#options.store;
    try {
      if (replaces && conversation.id !== null) {
        const title = store.replaceLastTurn(conversation.id, turn);
        return { id: conversation.id, title };
      }
      return { id: store.saveTurn(conversation.id, turn), title: null };
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

  /**
   * Measures a saved turn's size after its `done` and records it: in the
   * history file, and in the conversation in memory (where a later retry may
   * have replaced the turn meanwhile: then nothing changes).
   */
  async #count(
    result: ReplyResult,
    conversation: Conversation,
    messages: ChatMessage[],
    row: number | null,
  ): Promise<void> {
    let tokens: number | null;
    try {
      tokens = await result.count();
    } catch (error) {
      // The turn is saved; without its size the history estimates it.
      log.debug("turn count failed", { error: errorName(error) });
      return;
    }
    if (tokens === null) return;
    const targets = [conversation, this.#current];
    for (const target of new Set(targets)) {
      const index = target.messages.lastIndexOf(messages);
      if (index !== -1) target.tokens[index] = tokens;
    }
    if (row !== null && this.#options.store.setTurnTokens(row, tokens)) {
      log.debug("turn counted", { turn: row, tokens });
    }
  }

  #track(work: Promise<void>): void {
    const tracked: Promise<void> = work.finally(() =>
      this.#runs.delete(tracked)
    );
    this.#runs.add(tracked);
  }

  #remember(
    conversation: Conversation,
    id: number | null,
    turn: StoredTurn,
    replaces: boolean,
  ): void {
    const view: TurnView = {
      user: turn.user,
      reply: turn.reply,
      tools: turn.tools,
    };
    const targets = new Set([conversation]);
    // The same conversation may have been reopened meanwhile as a new object.
    if (
      id !== null && this.#current.id === id && !this.#current.private
    ) {
      targets.add(this.#current);
    }
    for (const target of targets) {
      target.id = id;
      if (replaces && target.turns.length > 0) {
        target.turns[target.turns.length - 1] = view;
        target.messages[target.messages.length - 1] = turn.messages;
        target.tokens[target.tokens.length - 1] = turn.tokens ?? null;
      } else {
        target.turns.push(view);
        target.messages.push(turn.messages);
        target.tokens.push(turn.tokens ?? null);
      }
    }
  }
}

function errorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  // Where it was thrown helps; the message might quote the turn.
  const frame = error.stack?.split("\n")[1]?.trim();
  return frame ? `${error.name} ${frame}` : error.name;
}

/**
 * The brain: the current conversation, the turn counter and the reply in
 * flight, and the commands that change them; each reply runs in
 * `reply_run.ts`. It emits events; the server decides who receives them.
 */
import { AssistantError } from "../base/errors.ts";
import { log } from "../base/log.ts";
import {
  type BackendView,
  type Command,
  type Event,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import type { Store } from "../store/store.ts";
import type { runTool } from "../tools/runner.ts";
import type { ToolDef } from "../tools/load.ts";
import type { McpHub } from "../tools/mcp.ts";
import { Archive, type Searcher } from "./archive.ts";
import { type Conversation, emptyConversation } from "./conversation.ts";
import type { ModelSource, TurnConfig } from "./reply.ts";
import {
  newReply,
  type Reply,
  ReplyRunner,
  type TurnStart,
} from "./reply_run.ts";
import { helloEvent, Status } from "./status.ts";
import { TokenLedger } from "./token_ledger.ts";
import { Titler } from "./title.ts";
import { ToolCalls } from "./tool_calls.ts";

export type { ModelSource, TurnConfig } from "./reply.ts";
export type { Searcher } from "./archive.ts";

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

const startedAt = performance.now();

/** The daemon's state and its commands; implements the server's `Brain`. */
export class Assistant implements Disposable {
  #options: AssistantOptions;
  #current: Conversation = emptyConversation();
  #gen = 0;
  #reply: Reply | null = null;
  #status = new Status((event) => this.#emit(event));
  #ledger = new TokenLedger();
  #shutdown = new AbortController();
  #calls: ToolCalls;
  #titles: Titler;
  #archive: Archive;
  #runner: ReplyRunner;

  /** Creates the brain with an empty, unsaved current conversation. */
  constructor(options: AssistantOptions) {
    this.#options = options;
    this.#calls = new ToolCalls({
      tools: options.tools,
      mcp: options.mcp ?? null,
      confirm: options.confirm,
      config: options.config,
      emit: (event) => this.#emit(event),
      signal: this.#shutdown.signal,
      toolKillHelper: options.toolKillHelper ?? null,
      ...(options.runTool ? { runTool: options.runTool } : {}),
    });
    this.#titles = new Titler({
      llm: options.llm,
      request: options.config.request,
      save: (id, title) => options.store.rename(id, title),
      emit: (event) => this.#emit(event),
      busy: () => this.#reply !== null,
    });
    this.#archive = new Archive({
      store: options.store,
      searcher: options.searcher,
      titles: this.#titles,
      emit: (event) => this.#emit(event),
    });
    this.#runner = new ReplyRunner({
      store: options.store,
      llm: options.llm,
      config: options.config,
      now: () => options.now?.() ?? new Date(),
      calls: this.#calls,
      status: this.#status,
      ledger: this.#ledger,
      titles: this.#titles,
      emit: (event) => this.#emit(event),
      shutdown: this.#shutdown.signal,
      current: () => this.#current,
      stale: (reply) => reply.gen !== this.#gen,
      release: () => {
        this.#reply = null;
      },
    });
  }

  /** The `hello` for a client that just connected. */
  hello(): Event {
    return helloEvent({
      status: this.#status.view(),
      backend: this.#options.backend?.(),
      current: this.#current,
      reply: this.#reply,
      waiting: this.#calls.waiting,
    });
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
        return this.#archive.list(command.limit);
      case "open":
        this.#setCurrent(this.#archive.open(command.id), ref);
        return null;
      case "search":
        return await this.#archive.search(command.q, command.limit);
      case "delete":
        return this.#delete(command.id);
      case "rename":
        this.#archive.rename(command.id, command.title, ref);
        return null;
      case "export":
        return this.#archive.export(command.id, command.format);
      case "approve":
        if (!this.#calls.answer(command.call, command.allow, ref)) {
          throw new AssistantError("no such call", { code: "no_such_call" });
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
   * and tests). This is a real wait: a stopped reply is no longer the one in
   * flight at once, but its run still winds down (its request closing, a
   * killed tool's process ending) until it returns, and shutdown closes the
   * database only after that (or after its time limit).
   */
  async settled(): Promise<void> {
    await this.#runner.settled();
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

  #setCurrent(conversation: Conversation, ref?: Ref): void {
    const previous = this.#current;
    // A private conversation is gone once another one is current, and so is
    // its reply, as a deleted conversation's is.
    if (previous.private && this.#reply?.conversation === previous) {
      this.#stop();
    }
    this.#current = conversation;
    this.#status.forgetSent();
    this.#emit({
      type: "conversation",
      id: conversation.id,
      turns: conversation.turns,
      ...(conversation.private ? { private: true as const } : {}),
      ...refField(ref),
    });
  }

  #delete(id: number): Event {
    if (this.#reply?.conversation.id === id) this.#stop();
    this.#archive.delete(id);
    if (this.#current.id === id) this.#setCurrent(emptyConversation());
    return this.#archive.list();
  }

  /** `retry` (text null: the last question again) and `edit`. */
  #retry(text: string | null, ref: Ref | undefined): void {
    const last = this.#current.turns.at(-1);
    if (!last) {
      throw new AssistantError("nothing to retry", {
        code: "nothing_to_retry",
      });
    }
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
    this.#status.set("idle");
    this.#titles.resume();
  }

  #startTurn(start: TurnStart): void {
    if (this.#reply) this.#stop();
    // A title request never holds up a question: it waits for the next pause.
    this.#titles.pause();
    const reply = newReply(++this.#gen, this.#current, start);
    this.#reply = reply;
    this.#emit({
      type: "user",
      text: start.text,
      ...(start.replaces ? { replaces: true as const } : {}),
      ...refField(start.ref),
    });
    this.#status.set("thinking");
    this.#runner.start(reply);
  }
}

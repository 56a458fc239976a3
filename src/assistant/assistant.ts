/**
 * The brain: the current conversation, the reply in flight and the status,
 * and the commands that change them. A reply is a `Turn` (turn.ts) that
 * yields its events; `Replies` (replies.ts) runs it, sends what it yields,
 * saves it and ends it. Every event goes out through `#publish`, which folds
 * it into the status `hello` reports; the server decides who receives it.
 */
import { AssistantError } from "../base/errors.ts";
import {
  type Attachment,
  type Command,
  type Event,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import type { Archive } from "./archive.ts";
import type { Conversation } from "./conversation.ts";
import type { Conversations } from "./conversations.ts";
import type { Replies } from "./replies.ts";
import {
  foldStatus,
  helloEvent,
  INITIAL_STATUS,
  isNote,
  type StatusEvent,
  type StatusView,
} from "./status.ts";
import type { IdleRunner } from "./idle_runner.ts";
import type { Summarizer } from "./summarizer.ts";
import type { ToolCalls } from "./tool_calls.ts";
import type { TurnStart } from "./turn.ts";
import type { QuestionFile } from "./attachments.ts";
import { checkVision, NO_CONVERTERS, readyFiles } from "./questions.ts";
import type { MemoryBook } from "./memory.ts";
import { memoryCommand } from "./memory_commands.ts";
import type { Proposer } from "./proposals.ts";
import { assemble, type AssistantOptions } from "./parts.ts";

/** The model side of a turn, and the config keys a turn reads. */
export type { ModelSource, TurnConfig } from "./turn.ts";
/** What searches the history for the assistant. */
export type { Searcher } from "./archive.ts";
/** What an assistant is made from. */
export type { AssistantOptions } from "./parts.ts";

const startedAt = performance.now();

/** The daemon's state and its commands; implements the server's `Brain`. */
export class Assistant implements Disposable {
  #options: AssistantOptions;
  #conversations: Conversations;
  #current: Conversation;
  #status: StatusView = INITIAL_STATUS;
  #shutdown = new AbortController();
  #calls: ToolCalls;
  /** Title and summary requests, which wait for a pause in the replies. */
  #side: IdleRunner;
  #summaries: Summarizer;
  #archive: Archive;
  #replies: Replies;
  #memory: MemoryBook;
  #proposer: Proposer;
  /** Whether listening is on: the voice client records meanwhile. */
  #listening = false;
  /** Questions whose files are being read: `stop` ends their conversions. */
  readonly #preparing = new Set<AbortController>();

  /** Creates the brain with an empty, unsaved current conversation. */
  constructor(options: AssistantOptions) {
    this.#options = options;
    const parts = assemble(options, {
      publish: (event) => this.#publish(event),
      current: () => this.#current,
      status: () => this.#status,
      shutdown: this.#shutdown.signal,
    });
    this.#conversations = parts.conversations;
    this.#calls = parts.calls;
    this.#side = parts.side;
    this.#summaries = parts.summaries;
    this.#archive = parts.archive;
    this.#replies = parts.replies;
    this.#memory = parts.memory;
    this.#proposer = parts.proposer;
    this.#current = this.#conversations.create();
  }

  /** The `hello` for a client that just connected. */
  hello(): Event {
    const turn = this.#replies.turn;
    const hello = helloEvent({
      status: this.#status,
      backend: this.#options.backend?.(),
      current: this.#current,
      reply: turn && { conversation: turn.conversation, pending: turn.pending },
      waiting: this.#calls.waiting,
      proposed: this.#proposer.waiting,
    });
    const indexing = this.#options.indexer?.progress;
    if (indexing) Object.assign(hello, { indexing });
    Object.assign(hello, { meaning: Boolean(this.#options.meaning) });
    return Object.assign(hello, { listening: this.#listening });
  }

  /**
   * Runs one command and resolves to the answer for the asker, if any; the
   * answer carries the command's `ref`. Events about the shared state go to
   * every client through `emit`, those a command caused with its `ref` too.
   * `gone` aborts when the asker is gone: a conversion for it ends.
   */
  async handle(command: Command, gone?: AbortSignal): Promise<Event | null> {
    const answer = await this.#dispatch(command, gone);
    return answer && { ...answer, ...refField(command.ref) };
  }

  /** Ends every question's file conversion in progress (its `ask` answers `convert_failed`): a `stop` on its way. */
  interrupt(): void {
    for (const preparing of this.#preparing) preparing.abort();
  }

  async #dispatch(
    command: Command,
    gone: AbortSignal | undefined,
  ): Promise<Event | null> {
    const { ref } = command;
    switch (command.type) {
      case "ask": {
        const conversation = this.#current;
        const given = command.files ?? [];
        // A question without files starts at once, before any later command.
        const files = given.length === 0 ? [] : await this.#ready(given, gone);
        this.#start(conversation, {
          text: command.text,
          files,
          replaces: false,
          ref,
        });
        return null;
      }
      case "retry":
      case "edit":
        await this.#retry(command, ref, gone);
        return null;
      case "memories":
      case "remember":
      case "forget":
      case "accept":
      case "refuse":
      case "export_memories":
        return memoryCommand(command, this.#memory, this.#proposer);
      case "file":
        return this.#archive.file(
          command.conversation,
          command.turn,
          command.index,
        );
      case "stop":
        this.interrupt();
        this.#replies.stop();
        return null;
      case "new":
        this.#setCurrent(
          this.#conversations.create(command.private === true),
          ref,
        );
        return null;
      case "list":
        return this.#archive.list(command.limit);
      case "open":
        this.#setCurrent(this.#archive.open(command.id), ref);
        return null;
      case "search":
        return await this.#archive.search(command.q, command.limit, command.by);
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
      case "listen":
        // Listening on means a question is coming: the reply in flight
        // stops as it would for a new one. The event goes out even when the
        // state stays, so a client that toggles always hears back.
        if (command.on) this.#replies.stop();
        this.#listening = command.on;
        this.#publish({ type: "listening", on: command.on, ...refField(ref) });
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
    return this.#replies.end();
  }

  /** Whether a reply is in flight. */
  get replying(): boolean {
    return this.#replies.turn !== null;
  }

  /**
   * Resolves once every reply's run and side request (title, summary) has
   * returned (shutdown and tests). This is a real wait: a stopped reply is no longer the one in
   * flight at once, but its run still winds down (its request closing, a
   * killed tool's process ending) until it returns, and shutdown closes the
   * database only after that (or after its time limit).
   */
  async settled(): Promise<void> {
    await this.#replies.settled();
    await this.#side.settled();
  }

  /** Ends the reply in flight as stopped, kills running tools and drops title and summary requests: for shutdown. */
  shutdown(): void {
    this.#replies.stop();
    this.#shutdown.abort();
    this.#side[Symbol.dispose]();
    this.#proposer[Symbol.dispose]();
    this.#options.indexer?.[Symbol.dispose]();
  }

  /** Same as `shutdown`. */
  [Symbol.dispose](): void {
    this.shutdown();
  }

  /** Folds an event into the status and sends it to every client (a note to the status alone). */
  #publish(event: StatusEvent): void {
    this.#status = foldStatus(this.#status, event);
    if (!isNote(event)) this.#options.emit(event);
  }

  #setCurrent(conversation: Conversation, ref?: Ref): void {
    const previous = this.#current;
    // A private conversation is gone once another one is current, and so are
    // its reply and its summary, as a deleted conversation's are.
    if (previous !== conversation && previous.private) {
      if (this.#replies.turn?.conversation === previous) this.#replies.stop();
      previous.discard();
      this.#summaries.cancel(previous);
    }
    // Left for another: its new turns are read for facts now.
    if (previous !== conversation) this.#proposer.left(previous);
    this.#current = conversation;
    this.#publish({
      type: "conversation",
      id: conversation.id,
      turns: conversation.turns,
      ...(conversation.private ? { private: true as const } : {}),
      summary: conversation.summary,
      memories: conversation.memories,
      ...refField(ref),
    });
  }

  #delete(id: number): Event {
    if (this.#replies.turn?.conversation.id === id) this.#replies.stop();
    const gone = this.#archive.delete(id);
    if (gone) this.#summaries.cancel(gone);
    // Its facts, still waiting, would be kept from a conversation deleted.
    this.#proposer.deleted(id);
    if (this.#current.id === id) {
      this.#setCurrent(this.#conversations.create());
    }
    return this.#archive.list();
  }

  /**
   * `retry` asks the last question again with its files; `edit` asks a new
   * one, with the files it gives (even none) or else the last question's.
   */
  async #retry(
    command: Extract<Command, { type: "retry" | "edit" }>,
    ref: Ref | undefined,
    gone: AbortSignal | undefined,
  ): Promise<void> {
    const conversation = this.#current;
    const last = conversation.turns.at(-1);
    if (last === undefined) {
      throw new AssistantError("nothing to retry", {
        code: "nothing_to_retry",
      });
    }
    const given = command.type === "edit" ? command.files : undefined;
    const files = given === undefined
      ? conversation.lastFiles()
      : await this.#ready(given, gone);
    if (given === undefined && files.length > 0) {
      await checkVision(files, {
        llm: this.#options.llm,
        signal: this.#shutdown.signal,
      });
    }
    this.#start(conversation, {
      text: command.type === "edit" ? command.text : last.user,
      files,
      replaces: true,
      ref,
    });
  }

  /** Starts a turn in the conversation current when its command came, unless that one is gone meanwhile. */
  #start(conversation: Conversation, start: TurnStart): void {
    if (conversation.deleted) {
      throw new AssistantError("no such conversation", {
        code: "no_such_conversation",
      });
    }
    this.#replies.start(conversation, start);
  }

  /** A question's files, read and checked before its turn starts; a conversion ends at shutdown, at `stop` or when the asker is `gone`. */
  async #ready(
    files: readonly Attachment[],
    gone: AbortSignal | undefined,
  ): Promise<QuestionFile[]> {
    if (files.length === 0) return [];
    const preparing = new AbortController();
    this.#preparing.add(preparing);
    try {
      return await readyFiles(files, {
        llm: this.#options.llm,
        reading: this.#options.reading ?? NO_CONVERTERS,
        signal: this.#shutdown.signal,
        converting: gone
          ? AbortSignal.any([preparing.signal, gone])
          : preparing.signal,
      });
    } finally {
      this.#preparing.delete(preparing);
    }
  }
}

/**
 * One reply from its request to its end as clients see it: the loop runs,
 * then the turn is saved, remembered and announced with `done` (or the error
 * is), and only then counted and titled, so neither holds up the end. The
 * assistant keeps the state a reply reads; a reply stopped or replaced on the
 * way (`stale`) changes none of it.
 */
import { AssistantError } from "../base/errors.ts";
import type { ModelChoice } from "../llm/client.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import { describeSafely, log } from "../base/log.ts";
import {
  type Event,
  type PendingView,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import type { Store } from "../store/store.ts";
import {
  type Conversation,
  historyOf,
  recordTokens,
  rememberTurn,
  saveTurn,
} from "./conversation.ts";
import {
  type ModelSource,
  type ReplyResult,
  runReply,
  type TurnConfig,
} from "./reply.ts";
import type { Status } from "./status.ts";
import type { Titler } from "./title.ts";
import type { TokenLedger } from "./token_ledger.ts";
import type { ToolCalls } from "./tool_calls.ts";

/** The reply in flight. */
export interface Reply {
  gen: number;
  conversation: Conversation;
  controller: AbortController;
  pending: PendingView;
  /** Resolves once its run has returned, a stopped one's included. */
  finished: Promise<void>;
  /** Resolves `finished`. */
  end: () => void;
  replaces: boolean;
  /** The ref of the command that started it, echoed on `user`, `done` and `error`. */
  ref: Ref | undefined;
  /** The model it used, once known: a title asks the same one. */
  model: ModelChoice | null;
}

/** What starts a turn: `ask`, or `retry` and `edit`, which replace the last turn. */
export interface TurnStart {
  text: string;
  replaces: boolean;
  ref: Ref | undefined;
}

/** The reply `start` asks for in `conversation`, numbered `gen`, with nothing received yet. */
export function newReply(
  gen: number,
  conversation: Conversation,
  start: TurnStart,
): Reply {
  const { promise: finished, resolve: end } = Promise.withResolvers<void>();
  return {
    gen,
    conversation,
    controller: new AbortController(),
    pending: {
      user: start.text,
      reply: "",
      think: "",
      tools: [],
      ...(start.replaces ? { replaces: true as const } : {}),
    },
    finished,
    end,
    replaces: start.replaces,
    ref: start.ref,
    model: null,
  };
}

/** What a reply's run reads and changes of the assistant. */
export interface ReplyRunOptions {
  store: Store;
  llm: ModelSource;
  /** `auto_title` absent is off. */
  config: TurnConfig & { auto_title?: boolean };
  now: () => Date;
  calls: ToolCalls;
  status: Status;
  ledger: TokenLedger;
  titles: Titler;
  emit: (event: Event) => void;
  /** Aborts once the daemon is shutting down. */
  shutdown: AbortSignal;
  /** The conversation shown now; another may become current while a reply runs. */
  current(): Conversation;
  /** True once the reply was stopped or replaced: it may change nothing more. */
  stale(reply: Reply): boolean;
  /** The reply is over: none is in flight any more. */
  release(): void;
}

/** Runs replies to their end for the assistant. */
export class ReplyRunner {
  readonly #o: ReplyRunOptions;
  /** Every reply's run until it returns, a stopped one included, and each turn's count. */
  readonly #runs = new Set<Promise<void>>();

  /** A runner reporting through `options`. */
  constructor(options: ReplyRunOptions) {
    this.#o = options;
  }

  /** Starts the reply's run; `settled` waits for it. */
  start(reply: Reply): void {
    const run = this.#run(reply).finally(() => {
      this.#runs.delete(run);
      reply.end();
    });
    this.#runs.add(run);
  }

  /** Resolves once every run, and the count each finished turn left, has returned. */
  async settled(): Promise<void> {
    while (this.#runs.size > 0) await Promise.allSettled(this.#runs);
  }

  /** Runs the reply and ends it: `done` with the turn saved, or `error`; nothing once stale. */
  async #run(reply: Reply): Promise<void> {
    const o = this.#o;
    const started = performance.now();
    const signal = AbortSignal.any([reply.controller.signal, o.shutdown]);
    try {
      const result = await runReply({
        llm: o.llm,
        config: o.config,
        schemas: o.calls.schemas(),
        runTool: (call) => o.calls.run(call),
        confirm: (call) =>
          o.calls.confirm(
            call,
            signal,
            (state, tool) => o.status.set(state, tool),
          ),
        signal,
        now: o.now(),
        ...historyOf(reply.conversation, reply.replaces),
        ledger: o.ledger,
        pending: reply.pending,
        stale: () => o.stale(reply),
        emit: (event) => o.emit(event),
        setState: (state, tool) => o.status.set(state, tool ?? null),
        onModel: (model) => {
          reply.model = model;
          o.status.model(model, o.ledger);
        },
        onUsage: (used) => o.status.usage(used),
      });
      if (result === null || o.stale(reply)) return;
      this.#finish(reply, result, started);
    } catch (error) {
      if (o.stale(reply)) return;
      this.#fail(reply, error);
    }
  }

  /** Saves and remembers the finished turn, sends `done`, then counts and titles it. */
  #finish(reply: Reply, result: ReplyResult, started: number): void {
    const o = this.#o;
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
    const { id, title } = saveTurn(o.store, conversation, turn, reply.replaces);
    rememberTurn(conversation, o.current(), id, turn, reply.replaces);
    const row = id === null ? null : o.store.lastTurnId(id);
    o.release();
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
    o.emit({
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
      o.emit({ type: "renamed", id, title });
    }
    const current = o.current();
    o.status.finished(
      result,
      current === conversation || (id !== null && current.id === id),
    );
    o.status.set("idle");
    const titled = first && id !== null && reply.model && o.config.auto_title
      ? {
        id,
        source: { question: turn.user, reply: turn.reply, model: reply.model },
      }
      : null;
    // The turn's count goes first: a title request is the one that gives
    // way, never a count the next reply's history uses.
    this.#track(
      this.#count(result, conversation, messages, row).finally(() => {
        if (titled) o.titles.request(titled.id, titled.source);
        o.titles.resume();
      }),
    );
  }

  /** Ends the reply with `error`: the client's message, and a log line that cannot quote the turn. */
  #fail(reply: Reply, error: unknown): void {
    const o = this.#o;
    o.release();
    const message = error instanceof AssistantError
      ? error.message
      : o.shutdown.aborted
      ? "the daemon is shutting down"
      : "reply failed";
    // AssistantError messages are written for clients; what they quote
    // from llama-server may repeat the turn, so the log leaves it out.
    // Anything else is named by class only.
    const reason = error instanceof AssistantError
      ? describeSafely(error)
      : errorName(error);
    log.warn("reply failed", { gen: reply.gen, error: reason });
    o.emit({
      type: "error",
      code: error instanceof AssistantError
        ? error.code ?? "reply_failed"
        : o.shutdown.aborted
        ? "shutting_down"
        : "reply_failed",
      message,
      turn: true,
      ...refField(reply.ref),
    });
    o.status.set("idle");
    o.titles.resume();
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
    recordTokens([conversation, this.#o.current()], messages, tokens);
    if (row !== null && this.#o.store.setTurnTokens(row, tokens)) {
      log.debug("turn counted", { turn: row, tokens });
    }
  }

  #track(work: Promise<void>): void {
    const tracked: Promise<void> = work.finally(() =>
      this.#runs.delete(tracked)
    );
    this.#runs.add(tracked);
  }
}

function errorName(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  // Where it was thrown helps; the message might quote the turn.
  const frame = error.stack?.split("\n")[1]?.trim();
  return frame ? `${error.name} ${frame}` : error.name;
}

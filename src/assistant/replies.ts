/**
 * The reply in flight: at most one turn runs at a time, and this is where
 * its events go out, where it is saved, and where it ends. A turn ends in
 * `#end` alone, stopped, failed or finished: that is the one place `done`,
 * a turn's `error` and `state idle` come from. A turn that is no longer the
 * one in flight reaches nobody: its events are dropped as they come, and it
 * saves nothing.
 */
import { log } from "../base/log.ts";
import { refField } from "../protocol/protocol.ts";
import type { Store } from "../store/store.ts";
import {
  type Conversation,
  rememberRequest,
  rememberTurn,
  sameConversation,
  saveTurn,
} from "./conversation.ts";
import { countTurn, errorName, turnError } from "./turn_end.ts";
import type { CacheBook } from "./cache_book.ts";
import type { IdleRunner } from "./idle_runner.ts";
import type { StatusEvent, StatusView } from "./status.ts";
import type { Summarizer } from "./summarizer.ts";
import type { Titler } from "./title.ts";
import type { TokenLedger } from "./token_ledger.ts";
import {
  type ModelSource,
  Turn,
  type TurnConfig,
  type TurnResult,
  type TurnStart,
  type TurnTools,
} from "./turn.ts";

/** What the replies need of the assistant. */
export interface RepliesOptions {
  store: Store;
  llm: ModelSource;
  /** `auto_title` absent is off. */
  config: TurnConfig & { auto_title?: boolean };
  tools: TurnTools;
  ledger: TokenLedger;
  book: CacheBook;
  /** Where title and summary requests wait for a pause in the replies. */
  side: IdleRunner;
  titles: Titler;
  summaries: Summarizer;
  now: () => Date;
  /** Aborts once the daemon is shutting down. */
  shutdown: AbortSignal;
  /** The conversation shown now; another may become current while a reply runs. */
  current(): Conversation;
  /** The status as the events so far made it. */
  status(): StatusView;
  /** Folds an event into the status and sends it to every client (notes to the status alone). */
  publish(event: StatusEvent): void;
}

/** A turn in flight and what cancels it. */
interface Flight {
  turn: Turn;
  controller: AbortController;
  /** Resolves once its run has returned, a stopped one's included. */
  finished: Promise<void>;
}

/** How a turn ended. */
type Outcome =
  | { kind: "stopped" }
  | { kind: "failed"; error: unknown }
  | {
    kind: "finished";
    result: TurnResult;
    id: number | null;
    /** The conversation's new title when replacing its first turn changed it. */
    title: string | null;
  };

/** The turn in flight, its runs and their ends. */
export class Replies {
  readonly #o: RepliesOptions;
  #flight: Flight | null = null;
  /**
   * The conversation of the last turn that finished, whose request the
   * server's cache most likely holds (a side request may have been made
   * since: they begin as it did, or are few and short).
   */
  #lastAsked: Conversation | null = null;
  /** Every turn's run until it returns, a stopped one included, and each finished turn's count. */
  readonly #runs = new Set<Promise<void>>();

  /** No reply in flight. */
  constructor(options: RepliesOptions) {
    this.#o = options;
  }

  /** The turn in flight, or null. */
  get turn(): Turn | null {
    return this.#flight?.turn ?? null;
  }

  /** Resolves when the reply in flight ends; null when none is. */
  end(): Promise<void> | null {
    return this.#flight?.finished ?? null;
  }

  /** Starts a turn in `conversation`, stopping the one in flight first. */
  start(conversation: Conversation, start: TurnStart): void {
    this.stop();
    const o = this.#o;
    // A title or summary request never holds up a question: it waits for
    // the next pause.
    o.side.pause();
    const turn = new Turn({
      ...start,
      llm: o.llm,
      config: o.config,
      tools: o.tools,
      ledger: o.ledger,
      book: o.book,
      warm: this.#lastAsked !== null &&
        sameConversation(this.#lastAsked, conversation),
      conversation,
      now: o.now(),
    });
    const { promise: finished, resolve } = Promise.withResolvers<void>();
    const flight = { turn, controller: new AbortController(), finished };
    this.#flight = flight;
    o.publish({
      type: "user",
      text: start.text,
      ...(start.replaces ? { replaces: true as const } : {}),
      ...refField(start.ref),
    });
    o.publish({ type: "state", state: "thinking" });
    this.#track(this.#drive(flight).finally(resolve));
  }

  /**
   * A conversation becomes current: opened again (a new object for the same
   * saved one), it picks up where its last request in this run left off, so
   * its window keeps its start and its summary its place; one left that
   * lives in memory only is forgotten.
   */
  switched(previous: Conversation, next: Conversation): void {
    const last = this.#lastAsked;
    if (last !== null && last !== next && sameConversation(last, next)) {
      next.windowStart = last.windowStart;
      next.lastRequest = last.lastRequest;
      next.summaryFailedAt = last.summaryFailedAt;
      if (next.summary && last.summary?.turns === next.summary.turns) {
        next.summary.carrier = last.summary.carrier;
      }
    }
    if (previous.private || previous.id === null) {
      this.#o.summaries.forget(previous);
      if (this.#lastAsked === previous) this.#lastAsked = null;
    }
  }

  /** Ends the reply in flight as stopped: its request is aborted, nothing of it is saved. */
  stop(): void {
    if (this.#flight) this.#end(this.#flight, { kind: "stopped" });
  }

  /** Resolves once every run, and the count each finished turn left, has returned. */
  async settled(): Promise<void> {
    while (this.#runs.size > 0) await Promise.allSettled(this.#runs);
  }

  /** Runs the turn, sending its events while it is the one in flight, then saves and ends it. */
  async #drive(flight: Flight): Promise<void> {
    const started = performance.now();
    const signal = AbortSignal.any([
      flight.controller.signal,
      this.#o.shutdown,
    ]);
    // Leaving this function ends the turn's run wherever it stands.
    await using events = flight.turn.run(signal);
    let result: TurnResult;
    try {
      for (;;) {
        const step = await events.next();
        // Stopped or replaced: the rest of the turn winds down unseen.
        if (this.#flight !== flight) return;
        if (step.done) {
          result = step.value;
          break;
        }
        flight.turn.seen(step.value);
        this.#o.publish(step.value);
      }
    } catch (error) {
      if (this.#flight === flight) this.#end(flight, { kind: "failed", error });
      return;
    }
    this.#finish(flight, result, started);
  }

  /** Saves and remembers the finished turn and ends it; then counts and titles it. */
  #finish(flight: Flight, result: TurnResult, started: number): void {
    const o = this.#o;
    const { turn } = flight;
    const conversation = turn.conversation;
    const first = conversation.id === null && conversation.turns.length === 0;
    // A retry or an edit of the only turn makes the conversation anew: a
    // title asked for the turn it replaces no longer fits it.
    const remade = turn.replaces && conversation.turns.length === 1;
    const stored = {
      user: turn.pending.user,
      reply: turn.pending.reply,
      tools: result.tools,
      messages: result.messages,
      tokens: null,
    };
    let saved: { id: number | null; title: string | null };
    try {
      saved = saveTurn(o.store, conversation, stored, turn.replaces);
    } catch (error) {
      this.#end(flight, { kind: "failed", error });
      return;
    }
    const { id, title } = saved;
    // Saved: whatever fails from here, the turn ends as finished.
    let row: number | null = null;
    try {
      rememberTurn(conversation, o.current(), id, stored, turn.replaces);
      this.#lastAsked = conversation;
      for (const target of new Set([conversation, o.current()])) {
        if (sameConversation(target, conversation)) {
          rememberRequest(target, result);
        }
      }
      row = id === null ? null : o.store.lastTurnId(id);
      log.info("reply done", {
        conv: id,
        reply_bytes: stored.reply.length,
        tools: result.tools.length,
        replaced: turn.replaces,
        sent: result.sent,
        total: result.total,
        ...(result.truncated ? { truncated: result.truncated } : {}),
        ms: Math.round(performance.now() - started),
      });
    } catch (error) {
      log.error("saved reply not remembered", { error: errorName(error) });
    }
    this.#end(flight, { kind: "finished", result, id, title });
    if (remade && id !== null) o.titles.cancel(id);
    // A replaced first turn is titled again only while its title is still the
    // one the store made: a title the user gave stays.
    const wanted = first || (remade && title !== null);
    const titled = wanted && id !== null && turn.model && o.config.auto_title
      ? {
        id,
        source: {
          question: stored.user,
          reply: stored.reply,
          model: turn.model,
        },
      }
      : null;
    // The turn's count goes first: a title request is the one that gives
    // way, never a count the next reply's history uses.
    const model = turn.model;
    this.#track(
      countTurn({
        store: o.store,
        result,
        holders: [conversation, o.current()],
        messages: stored.messages,
        row,
      }).finally(() => {
        if (titled) o.titles.request(titled.id, titled.source);
        if (o.config.compact && model) {
          o.summaries.consider(conversation, {
            model,
            schemas: result.schemas,
            room: result.room,
            nCtx: result.nCtx,
            used: result.used,
            fixed: result.fixed,
          });
        }
        o.side.resume();
      }),
    );
  }

  /** The end of a turn, however it came: the one place `done`, a turn's `error` and `state idle` are made. */
  #end(flight: Flight, outcome: Outcome): void {
    const o = this.#o;
    const { turn } = flight;
    this.#flight = null;
    const ref = refField(turn.ref);
    switch (outcome.kind) {
      case "stopped":
        flight.controller.abort();
        log.info("reply stopped", { conv: turn.conversation.id });
        o.publish({
          type: "done",
          id: turn.conversation.id,
          stopped: true,
          ...ref,
        });
        break;
      case "failed":
        o.publish({
          type: "error",
          ...turnError(outcome.error, o.shutdown.aborted),
          turn: true,
          ...ref,
        });
        break;
      case "finished": {
        const { result, id, title } = outcome;
        o.publish({
          type: "done",
          id,
          stopped: false,
          ...(result.truncated
            ? { truncated: true as const, truncated_by: result.truncated }
            : {}),
          ...(turn.replaces ? { replaces: true as const } : {}),
          ...(result.timings ? { timings: result.timings } : {}),
          ...ref,
        });
        if (id !== null && title !== null) {
          o.publish({ type: "renamed", id, title });
        }
        const current = o.current();
        if (
          current === turn.conversation || (id !== null && current.id === id)
        ) {
          o.publish({ type: "window", sent: result.sent, total: result.total });
        }
        const status = o.status();
        if (status.ctx_used !== null) {
          o.publish({
            type: "ctx",
            used: status.ctx_used,
            // A refusal may have told the size /props did not.
            max: result.nCtx ?? status.ctx_max,
            sent: result.sent,
            total: result.total,
            summarized: turn.conversation.summary?.turns ?? 0,
          });
        }
        break;
      }
    }
    o.publish({ type: "state", state: "idle" });
    // A finished turn's title and summary requests wait for its count.
    if (outcome.kind !== "finished") o.side.resume();
  }

  #track(work: Promise<void>): void {
    const tracked: Promise<void> = work.catch((error) => {
      log.error("reply run failed", { error: errorName(error) });
    }).finally(() => this.#runs.delete(tracked));
    this.#runs.add(tracked);
  }
}

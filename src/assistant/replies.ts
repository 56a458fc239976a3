/**
 * The reply in flight: at most one turn runs at a time, and this is where
 * its events go out, where it is saved, and where it ends. A turn ends in
 * `#end` alone, stopped, failed or finished: that is the one place `done`,
 * a turn's `error` and `state idle` come from. A turn that is no longer the
 * one in flight reaches nobody: its events are dropped as they come, and it
 * saves nothing.
 */
import { describeError, log } from "../base/log.ts";
import { refField } from "../protocol/protocol.ts";
import type { Conversation } from "./conversation.ts";
import { countTurn, turnError } from "./turn_end.ts";
import { finishedEvents } from "./finished_events.ts";
import type { IdleRunner } from "./idle_runner.ts";
import type { StatusEvent, StatusView } from "./status.ts";
import type { Summarizer } from "./summarizer.ts";
import type { Titler } from "./title.ts";
import type { Indexer } from "./indexer.ts";
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
  llm: ModelSource;
  /** `auto_title` absent is off. */
  config: TurnConfig & { auto_title?: boolean };
  tools: TurnTools;
  /** Where title and summary requests wait for a pause in the replies. */
  side: IdleRunner;
  titles: Titler;
  summaries: Summarizer;
  /** The turns' vectors: paused while a reply runs, told when one ends. */
  indexer: Pick<Indexer, "pause" | "kick"> | null;
  /** Told when a conversation's turn starts and ends: facts are proposed after an idle spell. */
  proposals: {
    busy(conversation: Conversation): void;
    idle(conversation: Conversation): void;
  };
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
    /** The conversation's new title when replacing its first turn changed it. */
    title: string | null;
  };

/** The turn in flight, its runs and their ends. */
export class Replies {
  readonly #o: RepliesOptions;
  #flight: Flight | null = null;
  /**
   * The conversation whose last request the server's cache holds: the last
   * turn's, when it finished and no other request (a stopped or failed
   * turn's, a title's or a summary's) came since.
   */
  #warm: Conversation | null = null;
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
    o.indexer?.pause();
    o.proposals.busy(conversation);
    const turn = new Turn({
      ...start,
      llm: o.llm,
      config: o.config,
      tools: o.tools,
      warm: this.#warm === conversation,
      conversation,
      now: o.now(),
    });
    const { promise: finished, resolve } = Promise.withResolvers<void>();
    const flight = { turn, controller: new AbortController(), finished };
    this.#flight = flight;
    o.publish({
      type: "user",
      text: start.text,
      ...(turn.pending.files ? { files: turn.pending.files } : {}),
      ...(start.replaces ? { replaces: true as const } : {}),
      ...refField(start.ref),
    });
    o.publish({ type: "state", state: "thinking" });
    this.#track(this.#drive(flight).finally(resolve));
  }

  /** Another request reached the server (a title, a summary): its cache no longer holds the last turn's. */
  cold(): void {
    this.#warm = null;
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

  /** Keeps the finished turn with its conversation and ends it; then counts it, and asks for its title and summary. */
  #finish(flight: Flight, result: TurnResult, started: number): void {
    const o = this.#o;
    const { turn } = flight;
    const conversation = turn.conversation;
    const model = turn.model!;
    const first = conversation.id === null && conversation.turns.length === 0;
    // A retry or an edit of the only turn makes the conversation anew: a
    // title asked for the turn it replaces no longer fits it.
    const remade = turn.replaces && conversation.turns.length === 1;
    const { user, reply } = turn.pending;
    let kept: ReturnType<Conversation["commit"]>;
    try {
      kept = conversation.commit(result.plan, {
        user,
        reply,
        tools: result.tools,
        messages: result.messages,
        files: turn.files,
        replaces: turn.replaces,
        model,
      });
    } catch (error) {
      this.#end(flight, { kind: "failed", error });
      return;
    }
    this.#warm = conversation;
    const { id } = conversation;
    log.info("reply done", {
      conv: id,
      reply_bytes: reply.length,
      tools: result.tools.length,
      replaced: turn.replaces,
      sent: result.plan.sent,
      total: result.plan.total,
      ...(result.truncated ? { truncated: result.truncated } : {}),
      ms: Math.round(performance.now() - started),
    });
    this.#end(flight, { kind: "finished", result, title: kept.title });
    if (remade && id !== null) o.titles.cancel(id);
    // A replaced first turn is titled again only while its title is still the
    // one the store made: a title the user gave stays.
    const titled = (first || (remade && kept.title !== null)) &&
      id !== null && o.config.auto_title;
    // The turn's count goes first: a title request is the one that gives
    // way, never a count the next reply's history uses.
    this.#track(
      countTurn(conversation, kept.held, result.plan).finally(() => {
        // Deleted meanwhile: nothing more is asked for it.
        if (!conversation.deleted) {
          if (titled) {
            o.titles.request(id, { question: user, reply, model });
          }
          if (o.config.compact) o.summaries.consider(conversation);
          // Last: when it is read at once, its title and summary go first.
          o.proposals.idle(conversation);
        }
        o.side.resume();
        // The saved turn by its row: its id may be one a deleted turn had,
        // or the row a retry rewrote, so only its name makes it indexed.
        o.indexer?.kick(kept.held.row ?? undefined);
      }),
    );
  }

  /** The end of a turn, however it came: the one place `done`, a turn's `error` and `state idle` are sent. */
  #end(flight: Flight, outcome: Outcome): void {
    const o = this.#o;
    const { turn } = flight;
    this.#flight = null;
    const ref = refField(turn.ref);
    switch (outcome.kind) {
      case "stopped":
        this.#warm = null;
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
        this.#warm = null;
        o.publish({
          type: "error",
          ...turnError(outcome.error, o.shutdown.aborted),
          turn: true,
          ...ref,
        });
        break;
      case "finished":
        finishedEvents({
          turn,
          result: outcome.result,
          title: outcome.title,
          current: o.current() === turn.conversation,
          ctxMax: o.status().ctx_max,
        }).forEach((event) => o.publish(event));
        break;
    }
    o.publish({ type: "state", state: "idle" });
    // A finished turn's title and summary requests wait for its count.
    if (outcome.kind !== "finished") {
      o.side.resume();
      o.indexer?.kick();
    }
  }

  #track(work: Promise<void>): void {
    const tracked: Promise<void> = work.catch((error) => {
      log.error("reply run failed", { error: describeError(error) });
    }).finally(() => this.#runs.delete(tracked));
    this.#runs.add(tracked);
  }
}

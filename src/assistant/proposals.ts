/**
 * Facts the assistant proposes to remember (`memory = "ask"`). Once a
 * conversation has been idle for `memory_idle` seconds (idle_spells.ts), or
 * another one becomes current, one side request (idle_runner.ts: it gives
 * way to a question, and resumes at the next pause) reads the turns not
 * read yet and asks for at most three new facts (proposal_request.ts).
 * A fact equal, case and spacing aside, to a memory kept, a fact refused or
 * one waiting is dropped. The rest go to every client as `proposed`; the
 * first `accept` or `refuse` decides (`decided` to every client), and a
 * refused fact, or the wording of one the user kept in other words, is never
 * proposed again. The turns read count as read in the history once every
 * fact proposed from them is answered, so a restart meanwhile reads them
 * again. Deleting a conversation withdraws its proposals. A request that
 * fails is tried once more, then not again until the conversation's next
 * idle spell: never in a loop. Private conversations propose nothing;
 * nothing of a fact is logged.
 */
import { AssistantError } from "../base/errors.ts";
import type { Config } from "../base/config.ts";
import { describeError, log } from "../base/log.ts";
import {
  type Event,
  type ProposalView,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import { folded, type Memories } from "../store/store.ts";
import type { Conversation } from "./conversation.ts";
import type { IdleRunner } from "./idle_runner.ts";
import { IdleSpells, type IdleTimer } from "./idle_spells.ts";
import type { MemoryBook } from "./memory.ts";
import { askFacts, newFacts } from "./proposal_request.ts";
import type { ModelSource } from "./turn.ts";

/** Tries of one idle spell's request. */
const TRIES = 2;

/** What the proposer needs. */
export interface ProposerOptions {
  llm: ModelSource;
  memories: Memories;
  book: MemoryBook;
  config: Pick<Config, "memory" | "memory_idle" | "request">;
  runner: IdleRunner;
  publish(event: Event): void;
  /** The conversation shown now: a turn that ends in another one is read at once, as a switch after its end would. */
  current(): Conversation;
  timer?: IdleTimer;
}

interface Waiting extends ProposalView {
  folded: string;
}

/** Turns of a conversation read for facts, counted as read in the history once none of the facts proposed from them waits. */
interface Unanswered {
  /** How many of its first turns were read. */
  turns: number;
  /** The proposals from them still waiting. */
  waiting: Set<string>;
}

/** The proposals waiting, and the requests that make them. */
export class Proposer implements Disposable {
  readonly #o: ProposerOptions;
  readonly #spells: IdleSpells;
  readonly #waiting = new Map<string, Waiting>();
  /** Failed tries of the idle spell's request, while it is tried again. */
  readonly #tries = new WeakMap<Conversation, number>();
  /** By conversation id: turns read whose facts still wait for an answer. */
  readonly #unanswered = new Map<number, Unanswered>();
  #next = 0;
  #closed = false;

  /** No proposal waiting. */
  constructor(options: ProposerOptions) {
    this.#o = options;
    this.#spells = new IdleSpells(options.timer);
  }

  /** The proposals no client has answered yet. */
  get waiting(): ProposalView[] {
    return [...this.#waiting.values()].map(({ folded: _, ...view }) => view);
  }

  /** A turn of the conversation ended: its idle spell starts now, or it is read now when another conversation became current meanwhile. */
  idle(conversation: Conversation): void {
    if (!this.#wanted(conversation)) return;
    this.#tries.delete(conversation);
    if (this.#o.current() !== conversation) {
      this.#spells.stop(conversation);
      this.#queue(conversation);
      return;
    }
    this.#spells.start(
      conversation,
      this.#o.config.memory_idle * 1000,
      () => this.#queue(conversation),
    );
  }

  /** A question starts in the conversation: its idle spell is over. */
  busy(conversation: Conversation): void {
    this.#spells.stop(conversation);
  }

  /** Another conversation became current: this one is read now rather than after its idle spell. */
  left(conversation: Conversation): void {
    if (this.#spells.stop(conversation)) this.#queue(conversation);
  }

  /** The user keeps a proposed fact, worded as proposed or as they say (the proposed wording is then never proposed again). */
  accept(
    proposal: string,
    text: string | undefined,
    ref: Ref | undefined,
  ): void {
    const waiting = this.#take(proposal);
    this.#o.publish({
      type: "decided",
      proposal,
      accepted: true,
      ...refField(ref),
    });
    // Kept in other words, the wording proposed is not what the user keeps:
    // proposed again it would be new each time.
    if (text !== undefined && folded(text) !== waiting.folded) {
      this.#o.memories.refuse(waiting.text);
    }
    this.#o.book.remember(text ?? waiting.text, { source: waiting.source });
    this.#answered(waiting);
  }

  /** The user refuses a proposed fact: it is never proposed again. */
  refuse(proposal: string, ref: Ref | undefined): void {
    const waiting = this.#take(proposal);
    this.#o.memories.refuse(waiting.text);
    log.info("proposal refused", { chars: waiting.text.length });
    this.#o.publish({
      type: "decided",
      proposal,
      accepted: false,
      ...refField(ref),
    });
    this.#answered(waiting);
  }

  /** Conversation `id` was deleted: its proposals are withdrawn (`decided`, not accepted, nothing recorded as refused) and nothing more is asked for it. */
  deleted(id: number): void {
    this.#spells.stopId(id);
    this.#o.runner.cancel((key) => key === `memory ${id}`);
    this.#unanswered.delete(id);
    for (const waiting of [...this.#waiting.values()]) {
      if (waiting.source.id !== id) continue;
      this.#waiting.delete(waiting.proposal);
      this.#o.publish({
        type: "decided",
        proposal: waiting.proposal,
        accepted: false,
      });
    }
  }

  /** Stops every idle timer; no spell starts after. */
  [Symbol.dispose](): void {
    this.#closed = true;
    this.#spells[Symbol.dispose]();
  }

  #take(proposal: string): Waiting {
    const waiting = this.#waiting.get(proposal);
    if (!waiting) {
      throw new AssistantError("no such proposal", {
        code: "no_such_proposal",
      });
    }
    this.#waiting.delete(proposal);
    return waiting;
  }

  /** A proposal was answered: once none from the turns it was read from waits, they count as read in the history. */
  #answered(waiting: Waiting): void {
    const id = waiting.source.id;
    const unanswered = this.#unanswered.get(id);
    if (!unanswered?.waiting.delete(waiting.proposal)) return;
    if (unanswered.waiting.size > 0) return;
    this.#unanswered.delete(id);
    this.#o.memories.setRead(id, unanswered.turns);
  }

  #wanted(conversation: Conversation): boolean {
    return !this.#closed && this.#o.config.memory === "ask" &&
      !conversation.private &&
      !conversation.deleted;
  }

  #queue(conversation: Conversation): void {
    if (!this.#wanted(conversation)) return;
    this.#o.runner.request(
      `memory ${conversation.id}`,
      (signal) => this.#run(conversation, signal),
    );
  }

  async #run(conversation: Conversation, signal: AbortSignal): Promise<void> {
    const id = conversation.id;
    if (id === null || !this.#wanted(conversation)) return;
    const { memories } = this.#o;
    const read = Math.max(
      memories.read(id),
      this.#unanswered.get(id)?.turns ?? 0,
    );
    const turns = conversation.turns;
    if (read >= turns.length) return;
    let facts: string[];
    try {
      facts = await this.#ask(conversation, turns.slice(read), signal);
    } catch (error) {
      if (signal.aborted) return;
      const tries = (this.#tries.get(conversation) ?? 0) + 1;
      log.warn("proposal request failed", {
        conv: id,
        tries,
        error: describeError(error),
      });
      if (tries < TRIES) {
        this.#tries.set(conversation, tries);
        this.#queue(conversation);
      } else {
        this.#tries.delete(conversation);
      }
      return;
    }
    this.#tries.delete(conversation);
    if (signal.aborted || !this.#wanted(conversation)) return;
    const items: Waiting[] = newFacts(
      facts,
      memories.refused(),
      [...this.#waiting.values()].map((w) => w.folded),
      new Set(memories.list().map((memory) => folded(memory.text))),
    ).map((fact) => ({
      proposal: `p${++this.#next}`,
      text: fact.text,
      source: { id, turn: turns.length - 1 },
      folded: fact.folded,
    }));
    log.info("facts proposed", {
      conv: id,
      turns: turns.length - read,
      facts: items.length,
    });
    // Read in the history once no fact from these turns waits: a restart
    // before the user answers reads them again, rather than losing them.
    const unanswered = this.#unanswered.get(id);
    if (items.length === 0 && !unanswered) {
      memories.setRead(id, turns.length);
      return;
    }
    const waiting = unanswered?.waiting ?? new Set<string>();
    for (const item of items) waiting.add(item.proposal);
    this.#unanswered.set(id, { turns: turns.length, waiting });
    if (items.length === 0) return;
    for (const item of items) this.#waiting.set(item.proposal, item);
    this.#o.publish({
      type: "proposed",
      items: items.map(({ folded: _, ...view }) => view),
    });
  }

  async #ask(
    conversation: Conversation,
    turns: readonly { user: string; reply: string }[],
    signal: AbortSignal,
  ): Promise<string[]> {
    const { llm, book, memories, config } = this.#o;
    const model = conversation.model ?? await llm.chooseModel(signal);
    const known = book.on ? memories.list() : [];
    return await askFacts({
      llm,
      model,
      known,
      turns,
      request: config.request,
      signal,
    });
  }
}

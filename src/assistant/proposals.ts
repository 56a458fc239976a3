/**
 * Facts the assistant proposes to remember (`memory = "ask"`). Once a
 * conversation has been idle for `memory_idle` seconds, or another one
 * becomes current, one side request (idle_runner.ts: it gives way to a
 * question, and resumes at the next pause) reads the turns not read yet and
 * asks for at most three new facts, in a shape a JSON schema fixes (which
 * llama-server turns into a grammar, so a small model answers in shape).
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
import type { PollTimer } from "../llm/backend.ts";
import { chatBody } from "../llm/client.ts";
import {
  cleanMemory,
  type Event,
  type ProposalView,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import { folded, type Memories } from "../store/store.ts";
import type { Conversation } from "./conversation.ts";
import type { IdleRunner } from "./idle_runner.ts";
import type { MemoryBook } from "./memory.ts";
import type { ModelSource } from "./turn.ts";

/** Most facts one request may propose. */
const MAX_FACTS = 3;
/** Tries of one idle spell's request. */
const TRIES = 2;
/** Tokens a proposal request may write. */
const MAX_TOKENS = 300;
/** Characters of the turns' text one request reads, from the newest back. */
const READ_CHARS = 12_000;
/** Characters of the memories kept one request lists as known, from the newest back: a long list never makes every request too long. */
const KNOWN_CHARS = 4_000;

const INSTRUCTION =
  `From the conversation below, pick at most ${MAX_FACTS} lasting facts about the user or their wishes that would help in later conversations (their preferences, their projects and people's names, how they like answers). Leave out anything about this conversation alone, anything already known (listed first), and guesses. Each fact one short sentence in the conversation's language. Answer with JSON: {"facts": [...]}, an empty list when there is nothing worth keeping.`;

/** The shape the model must answer in: llama-server makes it a grammar. */
const FACTS_SCHEMA = {
  type: "object",
  properties: {
    facts: {
      type: "array",
      items: { type: "string", minLength: 1, maxLength: 500 },
      maxItems: MAX_FACTS,
    },
  },
  required: ["facts"],
  additionalProperties: false,
};

/** A timer the proposer waits with (injected in tests): the backend poller's kind. */
export type IdleTimer = PollTimer;

/** What the proposer needs. */
export interface ProposerOptions {
  llm: ModelSource;
  memories: Memories;
  book: MemoryBook;
  config: Pick<Config, "memory" | "memory_idle" | "request">;
  runner: IdleRunner;
  publish(event: Event): void;
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
  readonly #timer: IdleTimer;
  readonly #waiting = new Map<string, Waiting>();
  readonly #timers = new Map<Conversation, unknown>();
  /** Failed tries of the idle spell's request, while it is tried again. */
  readonly #tries = new WeakMap<Conversation, number>();
  /** By conversation id: turns read whose facts still wait for an answer. */
  readonly #unanswered = new Map<number, Unanswered>();
  #next = 0;
  #closed = false;

  /** No proposal waiting. */
  constructor(options: ProposerOptions) {
    this.#o = options;
    this.#timer = options.timer ?? {
      set: (callback, ms) => setTimeout(callback, ms),
      cancel: (handle) => clearTimeout(handle as number),
    };
  }

  /** The proposals no client has answered yet. */
  get waiting(): ProposalView[] {
    return [...this.#waiting.values()].map(({ folded: _, ...view }) => view);
  }

  /** A turn of the conversation ended: its idle spell starts now. */
  idle(conversation: Conversation): void {
    if (!this.#wanted(conversation)) return;
    this.#clear(conversation);
    this.#tries.delete(conversation);
    this.#timers.set(
      conversation,
      this.#timer.set(() => {
        this.#timers.delete(conversation);
        this.#queue(conversation);
      }, this.#o.config.memory_idle * 1000),
    );
  }

  /** A question starts in the conversation: its idle spell is over. */
  busy(conversation: Conversation): void {
    this.#clear(conversation);
  }

  /** Another conversation became current: this one is read now rather than after its idle spell. */
  left(conversation: Conversation): void {
    if (!this.#timers.has(conversation)) return;
    this.#clear(conversation);
    this.#queue(conversation);
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
    for (const conversation of [...this.#timers.keys()]) {
      if (conversation.id === id) this.#clear(conversation);
    }
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
    for (const conversation of [...this.#timers.keys()]) {
      this.#clear(conversation);
    }
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

  #clear(conversation: Conversation): void {
    if (!this.#timers.has(conversation)) return;
    this.#timer.cancel(this.#timers.get(conversation));
    this.#timers.delete(conversation);
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
    const refused = memories.refused();
    const seen = new Set([...this.#waiting.values()].map((w) => w.folded));
    const items: Waiting[] = [];
    for (const fact of facts) {
      const text = cleanMemory(fact);
      if (text === null) continue;
      const key = folded(text);
      if (seen.has(key) || refused.has(key) || this.#o.book.keeps(text)) {
        continue;
      }
      seen.add(key);
      items.push({
        proposal: `p${++this.#next}`,
        text,
        source: { id, turn: turns.length - 1 },
        folded: key,
      });
      if (items.length === MAX_FACTS) break;
    }
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
    const { llm, book, config } = this.#o;
    const model = conversation.model ?? await llm.chooseModel(signal);
    const known = book.on ? knownList(this.#o.memories.list()) : "";
    let text = "";
    for (let i = turns.length - 1; i >= 0 && text.length < READ_CHARS; i--) {
      const turn = turns[i]!;
      text = `User: ${turn.user}\nAssistant: ${turn.reply}\n\n${text}`;
    }
    const body = chatBody({
      model: model.id,
      messages: [
        { role: "system", content: INSTRUCTION },
        {
          role: "user",
          content: `Already known:\n${known || "(nothing)"}\n\nConversation:\n${
            text.slice(-READ_CHARS)
          }`,
        },
      ],
      tools: [],
      thinking: false,
      extra: config.request,
      cacheReuse: 0,
    });
    delete body.n_predict;
    delete body.max_completion_tokens;
    body.max_tokens = MAX_TOKENS;
    body.response_format = {
      type: "json_schema",
      json_schema: { name: "facts", schema: FACTS_SCHEMA },
    };
    const stream = await llm.chat(model, body, signal);
    let answer = "";
    let finish: string | null = null;
    for await (const delta of stream) {
      if (delta.kind === "content") answer += delta.text;
      else if (delta.kind === "finish") finish = delta.reason;
    }
    if (finish !== "stop") {
      throw new AssistantError("proposal answer not finished", {
        code: "malformed_answer",
      });
    }
    return factsOf(answer);
  }
}

/** The memories kept, newest first, as many as fit `KNOWN_CHARS`, one per line. */
function knownList(memories: readonly { text: string }[]): string {
  const lines: string[] = [];
  let chars = 0;
  for (const memory of memories) {
    const line = `- ${memory.text}`;
    chars += line.length + 1;
    if (chars > KNOWN_CHARS) break;
    lines.push(line);
  }
  return lines.join("\n");
}

/** The facts of a proposal answer; AssistantError when it is not `{"facts": [string]}`. */
function factsOf(answer: string): string[] {
  const bare = answer.replace(/<think>[\s\S]*?(?:<\/think>|$)/g, "").trim();
  let parsed: unknown;
  try {
    parsed = JSON.parse(bare);
  } catch (error) {
    throw new AssistantError("proposal answer is not JSON", {
      code: "malformed_answer",
      cause: error,
    });
  }
  const facts = (parsed as { facts?: unknown } | null)?.facts;
  if (!Array.isArray(facts) || !facts.every((f) => typeof f === "string")) {
    throw new AssistantError("proposal answer has no list of facts", {
      code: "malformed_answer",
    });
  }
  return facts;
}

/**
 * Which of the conversation's earlier turns a reply's requests carry: the
 * newest that fit at first, then fewer, oldest out first, when a request
 * must shrink.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import { replayable, withSummary } from "./prompt.ts";
import { overheadOf, shapeOf, type TokenLedger } from "./token_ledger.ts";

/** How many of the newest turns (costs oldest first) fit in `room`, at most `limit`: stops at the first that does not. */
export function newestThatFit(
  count: number,
  cost: (index: number) => number,
  room: number,
  limit: number,
): number {
  let used = 0;
  let taken = 0;
  for (let i = count - 1; i >= 0 && taken < limit; i--) {
    used += cost(i);
    if (used > room) break;
    taken++;
  }
  return taken;
}

/**
 * Turns `from` to `to` of a history as a request replays them, the same
 * bytes every time: `summary` rides ahead of the question of its turn.
 */
export function replayTurns(
  history: readonly (readonly ChatMessage[])[],
  from: number,
  to: number,
  summary: { turn: number; text: string } | null,
): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = from; i < to; i++) {
    let first = true;
    for (const message of history[i] ?? []) {
      if (first && summary?.turn === i && message.role === "user") {
        out.push({
          ...message,
          content: withSummary(message.content, summary.text),
        });
      } else {
        // Turns saved before tool calls were made replayable may hold
        // arguments llama-server cannot parse.
        out.push(
          message.role === "assistant" && message.tool_calls
            ? { ...message, tool_calls: message.tool_calls.map(replayable) }
            : message,
        );
      }
      first = false;
    }
  }
  return out;
}

/** What a running summary asks of the window. */
export interface Cover {
  /** The first turns the summary covers (0: there is none). */
  summarized: number;
  /**
   * While the summary of a move is still to come, the window keeps the
   * turns it would not cover (from where the last request started), beyond
   * the turn limit though never beyond the room; false when nothing
   * summarises.
   */
  hold: boolean;
  /** The start a summary was last asked for and could not be made: its move goes ahead without one. */
  failedAt: number | null;
}

/**
 * Where the window starts beside a running summary: never earlier than the
 * turns the summary covers (they would be said twice), and while `hold`,
 * never past turns no summary covers yet unless the room forces it.
 */
export function coveredStart(
  count: number,
  cost: (index: number) => number,
  room: number,
  limit: number,
  previous: number | null,
  cover: Cover,
): number {
  const start = blockStart(count, cost, room, limit, previous);
  const covered = Math.min(cover.summarized, count);
  if (start <= covered) return covered;
  // A window new in this run (the daemon started, the conversation was
  // opened from the file) has no cache to keep, and holding it would send
  // every turn since the summary's end: it starts where the limit says,
  // and the summary catches up with the turns between.
  if (!cover.hold || previous === null) return start;
  if (cover.failedAt !== null && start <= cover.failedAt) return start;
  const bySize = count - newestThatFit(count, cost, room, Infinity);
  return Math.min(start, Math.max(previous, covered, bySize));
}

/**
 * Where the window over `count` turns starts. Sliding, it holds the newest
 * turns that fit in `room`, at most `limit`, and its oldest turn moves with
 * every ask. In blocks (`previous`: where the conversation's last request
 * started), it keeps its start while the turns from there fit; when turns
 * must leave it moves at once to keep only the newest half of the limit and
 * of the room, so the next turns begin the same way again: a server that
 * cannot shift its cache reads the kept turns again once a block, not once
 * a turn.
 */
export function blockStart(
  count: number,
  cost: (index: number) => number,
  room: number,
  limit: number,
  previous: number | null,
): number {
  const sliding = count - newestThatFit(count, cost, room, limit);
  // Any later start fits too: fewer of the same turns.
  if (previous === null || previous >= sliding) {
    return previous === null ? sliding : Math.min(previous, count);
  }
  // A window of one or two turns moves by one turn either way.
  if (limit <= 2) return sliding;
  const kept = newestThatFit(count, cost, room / 2, Math.floor(limit / 2));
  return Math.max(sliding, count - kept);
}

/** What the window is chosen from. */
export interface WindowOptions {
  ledger: TokenLedger;
  model: string;
  /** The conversation's earlier turns, oldest first, with their measured sizes (null: unknown). */
  history: readonly (readonly ChatMessage[])[];
  counts: readonly (number | null)[];
  /** Where the conversation's last request started its window, to move in blocks from; absent or null slides. */
  blockFrom?: number | null;
  /** The running summary's claim on the window; absent: none. */
  cover?: Cover | null;
}

/** The earlier turns a request carries, and what they cost. */
export class HistoryWindow {
  readonly #o: WindowOptions;
  /**
   * Each turn's size, taken once: estimates move as the ledger calibrates,
   * and the correction from a reported size holds only for the terms it was
   * measured against.
   */
  readonly #costs = new Map<number, number>();
  #start: number;
  #cost = 0;

  /** Chooses the turns that fit in `room`, at most `limit`: the newest, or from where the last request started (see `blockStart`). */
  constructor(options: WindowOptions, room: number, limit: number) {
    this.#o = options;
    const total = options.history.length;
    const cost = (i: number) => this.#turnCost(i);
    const previous = options.blockFrom ?? null;
    this.#start = options.cover
      ? coveredStart(total, cost, room, limit, previous, options.cover)
      : blockStart(total, cost, room, limit, previous);
    for (let i = this.#start; i < total; i++) {
      this.#cost += this.#turnCost(i);
    }
  }

  /** Earlier turns the request carries. */
  get sent(): number {
    return this.#o.history.length - this.#start;
  }

  /** The index of the first turn carried. */
  get start(): number {
    return this.#start;
  }

  /** Earlier turns the conversation has. */
  get total(): number {
    return this.#o.history.length;
  }

  /** What the turns carried cost, as estimated when they were chosen. */
  get cost(): number {
    return this.#cost;
  }

  /** What the turns carried before the newest cost: the newest is read again anyway, as the template renders it anew. */
  get keptCost(): number {
    const newest = this.#o.history.length - 1;
    return newest >= this.#start ? this.#cost - this.#turnCost(newest) : 0;
  }

  /** The messages of the turns carried, oldest first; `summary` rides ahead of the question of its turn. */
  messages(
    summary: { turn: number; text: string } | null = null,
  ): ChatMessage[] {
    return replayTurns(
      this.#o.history,
      this.#start,
      this.#o.history.length,
      summary,
    );
  }

  /**
   * Leaves out the oldest turns carried until `over` tokens are covered. A
   * turn's cost errs high by the template taken around it, so only its text
   * counts as `saved`; `slack` is the template's part, which the request's
   * estimate must keep.
   */
  leaveOut(over: number): { saved: number; slack: number } {
    let saved = 0;
    let slack = 0;
    while (saved < over && this.#start < this.#o.history.length) {
      const cost = this.#turnCost(this.#start);
      const template = overheadOf(shapeOf(this.#o.history[this.#start]!));
      this.#cost -= cost;
      slack += Math.min(template, cost);
      saved += Math.max(0, cost - template);
      this.#start++;
    }
    return { saved, slack };
  }

  #turnCost(index: number): number {
    let cost = this.#costs.get(index);
    if (cost === undefined) {
      const { ledger, model, history, counts } = this.#o;
      cost = ledger.turnCost(model, history[index]!, counts[index] ?? null);
      this.#costs.set(index, cost);
    }
    return cost;
  }
}

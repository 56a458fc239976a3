/**
 * Which of the conversation's earlier turns a reply's requests carry: the
 * newest that fit at first, then fewer, oldest out first, when a request
 * must shrink.
 */
import type { ChatMessage } from "../llm/chat_types.ts";
import { replayable } from "./prompt.ts";
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

/** What the window is chosen from. */
export interface WindowOptions {
  ledger: TokenLedger;
  model: string;
  /** The conversation's earlier turns, oldest first, with their measured sizes (null: unknown). */
  history: readonly (readonly ChatMessage[])[];
  counts: readonly (number | null)[];
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

  /** Chooses the newest turns that fit in `room`, at most `limit`. */
  constructor(options: WindowOptions, room: number, limit: number) {
    this.#o = options;
    const total = options.history.length;
    const sent = newestThatFit(total, (i) => this.#turnCost(i), room, limit);
    this.#start = total - sent;
    for (let i = this.#start; i < total; i++) {
      this.#cost += this.#turnCost(i);
    }
  }

  /** Earlier turns the request carries. */
  get sent(): number {
    return this.#o.history.length - this.#start;
  }

  /** Earlier turns the conversation has. */
  get total(): number {
    return this.#o.history.length;
  }

  /** What the turns carried cost, as estimated when they were chosen. */
  get cost(): number {
    return this.#cost;
  }

  /** The messages of the turns carried, oldest first. */
  messages(): ChatMessage[] {
    const out: ChatMessage[] = [];
    for (let i = this.#start; i < this.#o.history.length; i++) {
      // Turns saved before tool calls were made replayable may hold
      // arguments llama-server cannot parse.
      for (const message of this.#o.history[i]!) {
        out.push(
          message.role === "assistant" && message.tool_calls
            ? { ...message, tool_calls: message.tool_calls.map(replayable) }
            : message,
        );
      }
    }
    return out;
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
